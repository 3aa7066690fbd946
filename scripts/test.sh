#!/usr/bin/env bash
# test.sh [MODULE_DIR...] — the long half of `make test`: the lines below
# run side by side, each into its own log, and each is reported when it
# ends (in full when it failed), then a table of how long each took.
# The Makefile runs the checks that take seconds (go mod tidy -diff,
# gofmt, the shell lint) before it. MODULE_DIRs are the nested modules
# (tools, bench, ...): each is vetted and tested on a line of its own.
#
#   e2e    cmd/srtwhep, verbose into its log. Most of its time is
#          real-time media (ffmpeg publishers, browsers), not CPU, so it
#          starts first and the other lines use the CPU it leaves.
#   unit   go vet -race, then go test -race of every other package: under
#          nice while the e2e tests that run alone run, and those that
#          measure in real time (REALTIME: internal/hostile's bystanders
#          keeping their frame rate under attack) only
#          once those are done, beside the parallel e2e tests.
#   fuzz   scripts/fuzz.sh: every fuzz target for FUZZTIME_TEST (2s) from its
#          checked-in corpus: no panic, no 5xx, no broken invariant on what
#          has been found so far.
#   DIR    a nested module: go vet, then go test (-race unless the module
#          is in NORACE, as tools is: its deploy checks are offline and
#          single-threaded, and buildkit with -race takes minutes to build).
#          A module not in NICE (tools) may measure in real time, so it
#          waits for the e2e tests that run alone, as REALTIME does.
#
# The e2e test binary is built before any line starts, at full priority:
# it compiles most of what the unit line needs (with the same -race
# flags, go vet -race included), so nothing is compiled twice, and the
# real-time line is not kept waiting behind the others' compiles. fuzz
# (its own instrumented build) and the nested modules in NICE (tools: the
# offline checks) run under nice: they only take CPU that the real-time
# tests do not use.
# shellcheck disable=SC2317 # cleanup and the lines run through trap and start's "$@"
set -euo pipefail

go=${GO:-go}
e2e_parallel=${E2E_PARALLEL:-2}
fuzztime=${FUZZTIME_TEST:-2s}
norace=" ${NORACE:-tools} "
nice=" ${NICE:-tools} "
realtime=" ${REALTIME:-internal/hostile} "

cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
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

e2e() {
	local rc=0
	cd "$root/cmd/srtwhep"
	"$work/srtwhep.test" -test.paniconexit0 -test.v=true -test.count=1 -test.timeout=15m \
		-test.parallel="$e2e_parallel" || rc=$?
	touch "$work/e2e.done"
	return "$rc"
}

# e2e_alone_done: whether the e2e tests that run alone have all run. go
# test runs every top-level test that does not call t.Parallel first, one
# at a time (they measure: frame rates under attack, browsers' figures),
# then resumes the parallel ones, each with a `=== CONT  TestName` line.
e2e_alone_done() {
	[[ -e $work/e2e.done ]] || grep -qE '^=== CONT +[^/ ]+$' "$work/e2e.log"
}

unit() {
	local pkgs
	pkgs=$("$go" list ./... | grep -v '/cmd/srtwhep$')
	# The packages that measure in real time (REALTIME) wait for the e2e
	# tests that run alone; the rest run beside those under nice, on the
	# CPU they leave, and back at full priority once they are done.
	local late=() early=() pkg
	for pkg in $pkgs; do
		if [[ $realtime == *" ${pkg#github.com/srtwhep/srtwhep/} "* ]]; then
			late+=("$pkg")
		else
			early+=("$pkg")
		fi
	done
	renice -n 10 -g "$BASHPID" >/dev/null
	"$go" vet -race ./...
	echo "ok   go vet -race ./..."
	local rc=0
	"$go" test -race -count=1 -timeout 8m "${early[@]}" &
	local tests=$!
	until e2e_alone_done; do
		sleep 1
	done
	renice -n 0 -g "$BASHPID" >/dev/null
	wait "$tests" || rc=$?
	if [[ ${#late[@]} -gt 0 ]]; then
		echo "== after the e2e tests that run alone: ${late[*]#github.com/srtwhep/srtwhep/}"
		"$go" test -race -count=1 -timeout 8m "${late[@]}" || rc=$?
	fi
	return "$rc"
}

fuzz() {
	scripts/fuzz.sh "$fuzztime" 0 fresh
}

module() {
	local race=(-race)
	[[ $norace == *" $1 "* ]] && race=()
	cd "$root/$1"
	if [[ $nice != *" $1 "* ]]; then
		until e2e_alone_done; do
			sleep 1
		done
	fi
	"$go" vet "${race[@]}" ./...
	echo "ok   go vet ${race[*]} ./... in $1/"
	"$go" test "${race[@]}" -count=1 -timeout 8m ./...
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
			awk -f scripts/failed-tests.awk "$log" "$log" | tail -400 || true
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

began=$SECONDS
# The server binary the tests run is built once here for every test
# process (testkit.BuildBinary and tools/kubecheck take it from
# TESTKIT_BINDIR): built by each process on its own, it would be
# compiled several times at once on a cold build cache. Beside it, the e2e
# test binary, linked here rather than by go test so
# that the unit line starts only once the compile it shares is done.
echo "== building the server (go build ./cmd/srtwhep) and the cmd/srtwhep test binary (go test -race -c)"
mkdir "$work/bin"
"$go" build -o "$work/bin/" ./cmd/srtwhep >"$work/build.log" 2>&1 &
bins=$!
"$go" test -race -c -o "$work/srtwhep.test" ./cmd/srtwhep >"$work/build-e2e.log" 2>&1 &
e2ebin=$!
for pid in "$bins" "$e2ebin"; do
	if ! wait "$pid"; then
		cat "$work/build.log" "$work/build-e2e.log"
		echo "make test: the build failed"
		exit 1
	fi
done
export TESTKIT_BINDIR=$work/bin

# Then everything else the lines will compile, before any test runs: on a
# cold build cache (a fresh clone in CI) the unit, fuzz and module
# compiles otherwise run beside the e2e tests, and two cores of compiler
# make real-time checks (frame rates, a publisher's first bytes) fail that
# pass on a quiet machine. -run '^$' links each test binary and runs
# nothing; the fuzz line's instrumented builds are compiled the way
# fuzz.sh compiles them, so it finds them in the build cache.
prebuild() {
	local pkgs
	mapfile -t pkgs < <("$go" list ./... | grep -v '/cmd/srtwhep$')
	"$go" vet -race ./... && "$go" test -race -count=1 -run '^$' "${pkgs[@]}" >/dev/null
}
prebuild_module() {
	local race=(-race)
	[[ $norace == *" $1 "* ]] && race=()
	cd "$root/$1" && "$go" vet "${race[@]}" ./... && "$go" test "${race[@]}" -count=1 -run '^$' ./... >/dev/null
}
prebuild_fuzz() {
	local dir
	mkdir -p "$work/fuzzbin"
	for dir in $(grep -rlE --include='*_test.go' --exclude-dir=testdata --exclude-dir='.?*' --exclude-dir=node_modules \
		'^func Fuzz[A-Za-z0-9_]*' . | xargs -n1 dirname | sed 's|^\./||' | sort -u); do
		(cd "$dir" && "$go" test -c -fuzz=. -o "$work/fuzzbin/${dir//\//_}.test" .) || return 1
	done
}
echo "== compiling the other lines' tests (go vet, go test -run '^\$', the fuzz builds)"
prebuilds=()
prebuild >"$work/prebuild.log" 2>&1 &
prebuilds+=($!)
prebuild_fuzz >"$work/prebuild-fuzz.log" 2>&1 &
prebuilds+=($!)
for dir in "$@"; do
	prebuild_module "$dir" >"$work/prebuild-$dir.log" 2>&1 &
	prebuilds+=($!)
done
for pid in "${prebuilds[@]}"; do
	# A compile error is reported by the line that meets it again, with
	# its context; here it only must not stop the others.
	wait "$pid" || true
done
echo "== built in $((SECONDS - began)) s; running the lines side by side: e2e unit fuzz $*"
start e2e normal e2e
start unit normal unit
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

echo "==== timings (wall clock from the start of each line; the e2e build took part of the first $((line_start[e2e] - began)) s)"
for name in "${lines[@]}"; do
	printf '  %-10s %5s s  %s\n' "$name" "${line_secs[$name]}" "$([[ ${line_rc[$name]} == 0 ]] && echo ok || echo FAILED)"
done
printf '  %-10s %5s s\n' total "$((SECONDS - began))"
exit "$failed"
