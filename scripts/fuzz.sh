#!/usr/bin/env bash
# fuzz.sh TIME [MINIMIZE] [fresh] — run every Go fuzz target in the
# repository (nested modules such as bench/ included) for TIME each, one
# target at a time. `make test` runs it for a few seconds, `make fuzz` for
# longer.
# fuzz.sh build DIR — only build the instrumented test binaries, into DIR
# (scripts/test.sh compiles them before the fuzz line runs them).
# FUZZ_BINDIR=DIR: run the binaries found in DIR (built by fuzz.sh build)
# rather than building them again.
#
# Each package's test binary is built once, instrumented for coverage
# (go test -c -fuzz), and every target of the package runs from it: go
# test -fuzz takes one target per call and links a new binary for each,
# which cost more than the fuzzing itself at 2 s a target. The binary runs
# in its package directory, as go test runs it, so testdata/fuzz/NAME/ is
# found and a failing input is written there.
#
# fresh starts each target from its seeds and checked-in corpus
# (testdata/fuzz/NAME/) only, ignoring the inputs earlier runs cached in
# GOCACHE: `make test` then fuzzes the same start point on every machine,
# and its time does not grow with the cache. `make fuzz` keeps the cache
# (GOCACHE/fuzz/IMPORTPATH, where go test keeps it), so long runs build on
# each other.
#
# Targets are found by grepping for `func Fuzz` rather than `go test -list`,
# which would compile every test package once more just to list them.
#
# MINIMIZE is -fuzzminimizetime. Go minimizes every input that reaches new
# coverage before it reports it, with a 60 s budget by default; with seeds
# of kilobytes (TS clips, SDP offers) that stalls a worker for seconds at a
# time, which is why FuzzDemux used to show ~1 exec/s. 0 turns minimizing
# off (a short run saves inputs as found); make fuzz bounds it instead.
set -euo pipefail

time=${1:?usage: fuzz.sh TIME [MINIMIZE] [fresh] | fuzz.sh build DIR}
minimize=${2:-0}
fresh=${3:-}
go=${GO:-go}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bindir=${FUZZ_BINDIR:-$work}

cd "$(dirname "$0")/.."
root=$PWD

# targets: "DIR:FuzzName" for every fuzz target, sorted by directory.
targets() {
	grep -rEo --include='*_test.go' --exclude-dir=testdata --exclude-dir='.?*' --exclude-dir=node_modules \
		'^func Fuzz[A-Za-z0-9_]*' . | sed -E 's|^\./||; s|/[^/]*:func |:|' | sort -u
}

# build DIR: the instrumented test binary of the package in DIR, into
# $bindir (go test -c -fuzz instruments the package and everything it
# imports but the runtime's core, as go test -fuzz does).
#
# FUZZ_INSTRUMENT=package (make test's short runs) instruments only the
# package whose targets run (-gcflags=IMPORTPATH=-d=libfuzzer): everything
# it imports, this repository's packages included, comes from the plain
# build the server already compiled, instead of an instrumented build of
# its own (about 300 CPU-s cold on 2 cores for the standard library and
# the dependencies, 100 more for this repository's packages, for 2 s of
# fuzzing a target). Coverage of the package under test, the parser a
# target feeds, still guides the fuzzer; make fuzz's long runs instrument
# everything.
build() {
	local flags=(-fuzz=.)
	if [[ ${FUZZ_INSTRUMENT:-all} == package ]]; then
		# The bench module's path is the server's with /bench.
		flags=(-gcflags="github.com/srtwhep/srtwhep/$1=-d=libfuzzer")
	fi
	(cd "$root/$1" && "$go" test -c "${flags[@]}" -o "$bindir/${1//\//_}.test" .)
}

if [[ $time == build ]]; then
	bindir=${2:?usage: fuzz.sh build DIR}
	mkdir -p "$bindir"
	rc=0
	for dir in $(targets | cut -d: -f1 | uniq); do
		echo "== ./$dir: building the instrumented test binary"
		build "$dir" || rc=1
	done
	exit "$rc"
fi

# go test stops a test binary after 10 minutes unless told otherwise; a
# fuzz run gets its time plus that, so a hung target still ends.
# FUZZ_PARALLEL=N: N fuzzing workers (go test's -parallel; default one per
# CPU). With one, go's runner ended pkg/whep's handler targets with
# "context deadline exceeded" three times running in one make test, which
# two never did: make test keeps the default.
parallel_args=()
[[ -z ${FUZZ_PARALLEL:-} ]] || parallel_args=(-test.parallel="$FUZZ_PARALLEL")
timeout_args=()
case $time in
*[0-9]s) timeout_args=(-test.timeout="$((${time%s} + 600))s") ;;
*[0-9]m) timeout_args=(-test.timeout="$((${time%m} + 10))m") ;;
*[0-9]h) timeout_args=(-test.timeout="$((${time%h} + 1))h") ;;
esac

found=0
failed=()
built=
# One failing target does not hide the others: all run, then the failures
# are listed (each with the input go test saved under testdata/fuzz/).
while IFS=: read -r dir target; do
	pkg=./$dir
	found=$((found + 1))
	bin=$bindir/${dir//\//_}.test
	if [[ $built != "$dir" ]]; then
		built=$dir
		if [[ -z ${FUZZ_BINDIR:-} ]]; then
			echo "== $pkg: building the instrumented test binary"
			build "$dir" || rm -f "$bin"
		fi
		if [[ $fresh == fresh ]]; then
			cachedir=$work/cache/${dir//\//_}
		else
			cachedir=$("$go" env GOCACHE)/fuzz/$(cd "$dir" && "$go" list -f '{{.ImportPath}}' .)
		fi
	fi
	if [[ ! -x $bin ]]; then
		failed+=("$pkg $target (the test binary did not build)")
		continue
	fi
	echo "== $pkg $target ($time)"
	# go test's fuzz coordinator can report "context deadline exceeded" when
	# the time runs out while a worker is busy, with no input saved: that is
	# the runner, not a finding, so such a run is tried again, up to three
	# times in all (on a busy machine it happened about once per run of
	# the 16 targets). A real failure writes its input under
	# testdata/fuzz and is never retried.
	for attempt in 1 2 3; do
		if out=$(cd "$root/$dir" && "$bin" -test.paniconexit0 -test.run='^$' -test.fuzz="^${target}\$" \
			-test.fuzztime="$time" -test.fuzzminimizetime="$minimize" -test.fuzzcachedir="$cachedir" "${parallel_args[@]}" \
			"${timeout_args[@]}" 2>&1); then
			echo "$out"
			break
		fi
		echo "$out"
		if [[ $attempt -lt 3 && $out == *"context deadline exceeded"* && $out != *"Failing input written"* ]]; then
			echo "fuzz.sh: $target: the fuzz runner timed out without a finding; running it again"
			continue
		fi
		failed+=("$pkg $target")
		break
	done
done < <(targets)
if [[ $found -eq 0 ]]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi
if [[ ${#failed[@]} -gt 0 ]]; then
	echo "fuzz.sh: ${#failed[@]} of $found fuzz targets failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz.sh: $found fuzz targets passed ($time each)"
