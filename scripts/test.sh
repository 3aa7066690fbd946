#!/usr/bin/env bash
# test.sh [MODULE_DIR...] — the long half of `make test`: every test
# binary is compiled once, then the lines below run side by side, each
# into its own log, and each is reported when it ends (in full when it
# failed), then a table of how long each line and each package took.
# The Makefile runs the checks that take seconds (go mod tidy -diff,
# gofmt, the shell lint) before it. MODULE_DIRs are the nested modules
# (tools, bench, ...): each is tested on a line of its own.
#
#   e2e    cmd/srtwhep, verbose into its log. Most of its time is
#          real-time media (ffmpeg publishers, browsers), not CPU, so it
#          starts first and the other lines use the CPU it leaves. Its
#          binary is built without -race: the server it tests runs in
#          processes of its own, built without it as users run it, so
#          the detector would watch only the harness and the pion
#          viewers (whose packages' unit tests run with it), at several
#          times their CPU, on the line that decides make test's time.
#   unit   the -race test binary of every other package of the main
#          module, UNIT_PARALLEL (2) at a time, each run from its package
#          directory as go test runs it: under nice while the e2e tests
#          that run alone run, and those that measure in real time
#          (REALTIME: internal/hostile's bystanders keeping their frame
#          rate under attack) only once those are done, beside the
#          parallel e2e tests.
#   vet    go vet (without -race: the variant the server, the e2e binary
#          and the fuzz builds were built with, so it compiles almost
#          nothing again) of the main module and of each nested module
#          built with it, under SCHED_IDLE. A module in NICE is vetted on
#          its own line, after its build.
#   fuzz   scripts/fuzz.sh: every fuzz target for FUZZTIME_TEST (2s) from its
#          checked-in corpus: no panic, no 5xx, no broken invariant on what
#          has been found so far. Its instrumented builds (one binary per
#          package) compile under SCHED_IDLE, the targets run under nice.
#   DIR    a nested module's test binaries (-race unless the module is in
#          NORACE, as tools is: its deploy checks are offline and
#          single-threaded, and the Kubernetes API types and buildkit's
#          parser would compile a second time, with -race, for nothing).
#          A module not in NICE (bench) may measure in real time, so it
#          waits for the e2e tests that run alone, as REALTIME does; one
#          in NICE (tools: the offline checks) compiles under SCHED_IDLE
#          and runs under nice.
#
# Before any line starts, at full priority: the server binary (go build)
# and the e2e test binary (go test -c ./cmd/srtwhep), one build without
# -race (scripts/warm.sh compiled most of it while apt installed), the
# critical path: the e2e tests take the longest, mostly in real time.
# Everything else compiles under SCHED_IDLE (chrt -i 0) beside them, so no
# compiler at normal priority shares the two cores with the real-time
# checks: the unit line first builds every other -race test binary at
# once (go test -race -c -o DIR/, the main module then the nested modules
# in its build); go vet reads the build without -race, as the fuzz builds
# (the package under test instrumented over it) do; the modules in NICE compile
# their own dependencies. Nothing is linked twice: the binaries are run
# directly.
# shellcheck disable=SC2317 # cleanup and the lines run through trap and start's "$@"
set -euo pipefail

go=${GO:-go}
e2e_parallel=${E2E_PARALLEL:-2}
unit_parallel=${UNIT_PARALLEL:-2}
fuzztime=${FUZZTIME_TEST:-2s}
timeout=${TEST_TIMEOUT:-8m}
norace=" ${NORACE:-tools} "
nice=" ${NICE:-tools} "
realtime=" ${REALTIME:-internal/hostile} "
module_path=github.com/srtwhep/srtwhep
# The ~75 binaries linked here (test binaries, fuzz builds, the server)
# are run once and thrown away: no DWARF (-w), which nothing here reads
# (stack traces and race reports come from the Go symbol table). About a
# fifth of each link's CPU (e2e binary 6.6 -> 4.6 CPU-s). Linking is not
# cached, so this changes no cache key.
export GOFLAGS="${GOFLAGS:-} -ldflags=-w"

cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
mkdir "$work/out" "$work/cpu"
declare -A pid_line=() line_start=() line_secs=() line_rc=()
lines=()

# Every line runs in its own process group (job control), so an
# interrupted make test ends them all, with their ffmpeg and browsers.
set -m
cleanup() {
	local pid
	for pid in "${!pid_line[@]}"; do
		kill -- -"$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# idle COMMAND...: runs COMMAND under SCHED_IDLE (chrt -i 0): the kernel
# gives it a core only when no other task wants one. Plain nice still
# takes about a tenth of a busy core.
idle() {
	chrt -i 0 "$@"
}

# start NAME NICE FUNCTION: runs FUNCTION in the background into
# $work/NAME.log.
start() {
	local name=$1 prio=$2
	shift 2
	lines+=("$name")
	line_start[$name]=$SECONDS
	if [[ $prio == nice ]]; then
		(
			renice -n 10 -p "$BASHPID" >/dev/null
			"$@"
		) >"$work/$name.log" 2>&1 &
	else
		("$@") >"$work/$name.log" 2>&1 &
	fi
	pid_line[$!]=$name
}

# now_us: the wall clock in microseconds.
now_us() {
	echo "${EPOCHREALTIME//[!0-9]/}"
}

# secs US: microseconds as seconds with three decimals.
secs() {
	printf '%d.%03d' $(($1 / 1000000)) $(($1 % 1000000 / 1000))
}

# test_list MODULE_DIR BIN_DIR: one line "IMPORTPATH DIR BINARY" for each
# package of the module that has tests (go test -c -o DIR/ names each
# binary after the last element of the import path), cmd/srtwhep left
# out: it is the e2e line.
test_list() {
	(cd "$root/$1" && "$go" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./...) |
		while read -r pkg dir; do
			[[ -n $pkg && $pkg != "$module_path/cmd/srtwhep" ]] || continue
			echo "$pkg $dir $2/${pkg##*/}.test"
		done
}

# e2e_alone_done: whether the e2e tests that run alone have all run. go
# test runs every top-level test that does not call t.Parallel first, one
# at a time (they measure: frame rates under attack, browsers' figures),
# then resumes the parallel ones, each with a `=== CONT  TestName` line.
e2e_alone_done() {
	[[ -e $work/e2e.done ]] || grep -qE '^=== CONT +[^/ ]+$' "$work/e2e.log"
}

wait_e2e_alone() {
	until e2e_alone_done; do
		sleep 1
	done
}

# run_tests LINE LIST [RENICE]: runs the test binaries LIST names,
# UNIT_PARALLEL at once, each from its package directory with go test's
# flags, and prints go test's line for each (its whole output when it
# failed). A package in REALTIME starts only once the e2e tests that run
# alone are done; with RENICE, the line runs under nice until then. Each
# package's time goes to $work/times for the table.
run_tests() {
	local line=$1 list=$2 renice=${3:-} pkg dir bin failed=0 watcher=
	local -A job_pkg=() job_start=()
	if [[ -n $renice ]]; then
		renice -n 10 -g "$renice" >/dev/null
		(
			wait_e2e_alone
			renice -n 0 -g "$renice" >/dev/null
		) &
		watcher=$!
	fi
	reap() {
		local pid rc=0 us p
		wait -n -p pid "${!job_pkg[@]}" || rc=$?
		us=$(($(now_us) - job_start[$pid]))
		p=${job_pkg[$pid]}
		unset "job_pkg[$pid]" "job_start[$pid]"
		echo "$(secs "$us") $(cat "$work/cpu/${p//\//_}" 2>/dev/null || echo -) $line $p $([[ $rc == 0 ]] && echo ok || echo FAIL)" >>"$work/times"
		if [[ $rc == 0 ]]; then
			printf 'ok  \t%s\t%ss\n' "$p" "$(secs "$us")"
		else
			cat "$work/out/${p//\//_}.log"
			printf 'FAIL\t%s\t%ss\n' "$p" "$(secs "$us")"
			failed=1
		fi
	}
	while read -r pkg dir bin; do
		if [[ $realtime == *" ${pkg#"$module_path"/} "* ]] && ! e2e_alone_done; then
			echo "== waiting for the e2e tests that run alone: ${pkg#"$module_path"/}"
			wait_e2e_alone
		fi
		while [[ ${#job_pkg[@]} -ge $unit_parallel ]]; do
			reap
		done
		if [[ ! -x $bin ]]; then
			echo "FAIL	$pkg [build failed]"
			echo "0.000 - $line $pkg FAIL" >>"$work/times"
			failed=1
			continue
		fi
		(
			cd "$dir" || exit
			cpu "$work/cpu/${pkg//\//_}" "$bin" -test.paniconexit0 -test.timeout="$timeout"
		) >"$work/out/${pkg//\//_}.log" 2>&1 &
		job_pkg[$!]=$pkg
		job_start[$!]=$(now_us)
	done <"$list"
	while [[ ${#job_pkg[@]} -gt 0 ]]; do
		reap
	done
	[[ -z $watcher ]] || kill "$watcher" 2>/dev/null || true
	return "$failed"
}

e2e() {
	local rc=0 start
	start=$(now_us)
	cd "$root/cmd/srtwhep"
	cpu "$work/cpu/e2e" "$work/test/e2e/srtwhep.test" -test.paniconexit0 -test.v=true -test.timeout=15m \
		-test.parallel="$e2e_parallel" || rc=$?
	touch "$work/e2e.done"
	echo "$(secs $(($(now_us) - start))) $(cat "$work/cpu/e2e") e2e $module_path/cmd/srtwhep $([[ $rc == 0 ]] && echo ok || echo FAIL)" >>"$work/times"
	return "$rc"
}

unit() {
	race_build
	# The packages that measure in real time (REALTIME) go last: they
	# wait for the e2e tests that run alone.
	local pkg rest pass
	: >"$work/unit.list"
	for pass in early late; do
		while read -r pkg rest; do
			if [[ $realtime == *" ${pkg#"$module_path"/} "* ]]; then
				[[ $pass == late ]] || continue
			else
				[[ $pass == early ]] || continue
			fi
			echo "$pkg $rest" >>"$work/unit.list"
		done <"$work/main.list"
	done
	local rc=0
	run_tests unit "$work/unit.list" "$BASHPID" || rc=1
	[[ ! -e $work/race.failed ]] || rc=1
	return "$rc"
}

vet() {
	local dir rc=0
	if step vet-main idle "$go" vet ./...; then
		echo "ok   go vet ./..."
	else
		cat "$work/vet-main.log"
		rc=1
	fi
	for dir in "${race_modules[@]}"; do
		if (cd "$root/$dir" && step "vet-$dir" idle "$go" vet ./...); then
			echo "ok   go vet ./... in $dir/"
		else
			cat "$work/vet-$dir.log"
			rc=1
		fi
	done
	return "$rc"
}

fuzz() {
	FUZZ_INSTRUMENT=package step build-fuzz idle scripts/fuzz.sh build "$work/fuzzbin" || {
		cat "$work/build-fuzz.log"
		return 1
	}
	local rc=0 start
	start=$(now_us)
	FUZZ_BINDIR=$work/fuzzbin cpu "$work/cpu/fuzz" scripts/fuzz.sh "$fuzztime" 0 fresh || rc=$?
	echo "$(secs $(($(now_us) - start))) $(cat "$work/cpu/fuzz") fuzz (every-target) $([[ $rc == 0 ]] && echo ok || echo FAIL)" >>"$work/times"
	return "$rc"
}

module() {
	local dir=$1 race=(-race)
	[[ $norace == *" $dir "* ]] && race=()
	if [[ $nice == *" $dir "* ]]; then
		# Its own build, then go vet on it: run side by side, both would
		# compile the module's dependencies.
		(cd "$root/$dir" && step "build-$dir" idle "$go" test "${race[@]}" -c -o "$work/test/$dir/" ./...) || {
			cat "$work/build-$dir.log"
			return 1
		}
		test_list "$dir" "$work/test/$dir" >"$work/$dir.list"
		(cd "$root/$dir" && step "vet-$dir" idle "$go" vet "${race[@]}" ./...) || {
			cat "$work/vet-$dir.log"
			return 1
		}
		echo "ok   go vet ${race[*]} ./... in $dir/"
	else
		wait_race_build
		wait_e2e_alone
	fi
	run_tests "$dir" "$work/$dir.list"
}

# report NAME RC: what a finished line says.
report() {
	local name=$1 rc=$2 log=$work/$1.log
	local secs=$((SECONDS - line_start[$name]))
	line_secs[$name]=$secs
	line_rc[$name]=$rc
	if [[ $rc == 0 ]]; then
		echo "==== $name: ok (${secs} s)"
	else
		echo "==== $name: FAILED (exit $rc, ${secs} s)"
	fi
	case $name in
	e2e)
		if [[ $rc == 0 ]]; then
			grep -E '^(browser:|--- (PASS|FAIL)|PASS$)' "$log" || true
			echo "ok   ./cmd/srtwhep ${secs}s"
		else
			# Parallel tests log far above the tail: the awk prints the
			# whole of what each failed test logged.
			grep -v '^time=' "$log" | tail -150
			echo "== what the failed tests logged:"
			# ffmpeg's -progress lines (a block every 0.5 s of every
			# publisher) would push the test's own lines out of the tail.
			awk -f scripts/failed-tests.awk "$log" "$log" |
				grep -vE '^ +(frame|fps|stream_[0-9_]+_q|bitrate|total_size|out_time(_us|_ms)?|dup_frames|drop_frames|speed|progress)=' |
				tail -400 || true
		fi
		;;
	fuzz)
		if [[ $rc == 0 ]]; then
			# One line a target: its name and its last progress line.
			awk '/^== .*\)$/ { if (h) print h "  " l; h = $0; l = "" } /execs:/ { l = $0 } END { if (h) print h "  " l }' "$log"
			tail -1 "$log"
		else
			cat "$log"
		fi
		;;
	*) cat "$log" ;;
	esac
}

# cpu FILE COMMAND...: runs COMMAND and writes the CPU seconds it and
# the processes it waited for (ffmpeg, browsers, the server) took into
# FILE, for the table.
cpu() {
	local file=$1 TIMEFORMAT='%U %S' rc=0
	shift
	{ time "$@" 2>&4; } 4>&2 2>"$file.time" || rc=$?
	awk '{ printf "%.1f", $1 + $2 }' "$file.time" >"$file"
	return "$rc"
}

# step NAME COMMAND...: runs a compile step into $work/NAME.log and adds
# its wall and CPU seconds (its own and its children's) to $work/build.times.
step() {
	local name=$1 TIMEFORMAT
	shift
	TIMEFORMAT="  $name: %R s wall, %U s user + %S s sys"
	{ time "$@" >"$work/$name.log" 2>&1; } 2>>"$work/build.times"
}

began=$SECONDS
race_modules=()
for dir in "$@"; do
	[[ $norace == *" $dir "* || $nice == *" $dir "* ]] || race_modules+=("$dir")
done
echo "== compiling the server (go build) and the e2e test binary (go test -c ./cmd/srtwhep)"
mkdir -p "$work/bin" "$work/test"
# The server binary the tests run is built once here for every test
# process (testkit.BuildBinary and tools/kubecheck take it from
# TESTKIT_BINDIR): built by each process on its own, it would be
# compiled several times at once on a cold build cache.
step build-server "$go" build -o "$work/bin/" ./cmd/srtwhep &
server=$!
# The e2e binary is on the critical path (its tests take the longest and
# most of that is real time), so it is all that is built at full
# priority besides the server, whose build it shares.
step build-e2e "$go" test -c -o "$work/test/e2e/" ./cmd/srtwhep &
e2ebin=$!
build_failed=0
wait "$server" || build_failed=1
wait "$e2ebin" || build_failed=1
cat "$work/build.times"
if [[ $build_failed != 0 ]]; then
	cat "$work"/build-*.log
	echo "make test: the build failed"
	exit 1
fi
export TESTKIT_BINDIR=$work/bin

# race_build: every other -race test binary, the main module's then the
# modules that share its build, under SCHED_IDLE beside the e2e tests;
# $work/race.done says it ended (race.failed that it failed). The other
# compiles (vet, fuzz, tools) wait for it: they would otherwise compile
# the same packages at the same time, or take the idle CPU the unit
# line's binaries wait for.
race_build() {
	local pkgs dir
	mapfile -t pkgs < <("$go" list ./... | grep -v "^$module_path/cmd/srtwhep\$")
	# A package that does not compile shows as "[build failed]" in the
	# unit line, beside the packages that did.
	step build-main idle "$go" test -race -c -o "$work/test/main/" "${pkgs[@]}" || {
		cat "$work/build-main.log"
		touch "$work/race.failed"
	}
	test_list . "$work/test/main" >"$work/main.list"
	for dir in "${race_modules[@]}"; do
		(cd "$dir" && step "build-$dir" idle "$go" test -race -c -o "$work/test/$dir/" ./...) || {
			cat "$work/build-$dir.log"
			touch "$work/race.failed"
		}
		test_list "$dir" "$work/test/$dir" >"$work/$dir.list"
	done
	touch "$work/race.done"
}

wait_race_build() {
	until [[ -e $work/race.done ]]; do
		sleep 1
	done
}

echo "== built in $((SECONDS - began)) s; running the lines side by side: e2e unit vet fuzz $*"
start e2e normal e2e
start unit normal unit
start vet normal vet
start fuzz nice fuzz
for dir in "$@"; do
	prio="normal"
	[[ $nice == *" $dir "* ]] && prio="nice"
	start "$dir" "$prio" module "$dir"
done

failed=0
while [[ ${#pid_line[@]} -gt 0 ]]; do
	rc=0
	wait -n -p done_pid "${!pid_line[@]}" || rc=$?
	name=${pid_line[$done_pid]}
	unset "pid_line[$done_pid]"
	report "$name" "$rc"
	[[ $rc == 0 ]] || failed=1
done

echo "==== per package: seconds its test binary ran (wall), longest first, and the CPU seconds it and what it started (ffmpeg, browsers, the server) took"
sort -rn "$work/times" | awk '{ printf "  %8.1f s %7s CPU-s  %-6s %-4s %s\n", $1, $2, $3, $5, $4 }'
echo "==== compile steps: wall, and the CPU seconds of the step and its children (build-server, build-main and the -race modules before the lines; vet, fuzz and the modules in NICE under SCHED_IDLE beside them)"
cat "$work/build.times"
echo "==== timings (wall clock from the start of each line; the compile took the first $((line_start[e2e] - began)) s)"
for name in "${lines[@]}"; do
	printf '  %-10s %5s s  %s\n' "$name" "${line_secs[$name]}" "$([[ ${line_rc[$name]} == 0 ]] && echo ok || echo FAILED)"
done
printf '  %-10s %5s s\n' total "$((SECONDS - began))"
exit "$failed"
