#!/usr/bin/env bash
# fuzz.sh TIME [MINIMIZE] [fresh] — run every Go fuzz target of the server
# and bench modules for TIME each, one target at a time (go test -fuzz takes
# one package and one target). `make test` runs it for a few seconds, `make
# fuzz` for longer.
#
# fresh starts each target from its seeds and checked-in corpus
# (testdata/fuzz/NAME/) only, ignoring the inputs earlier runs cached in
# GOCACHE: `make test` then fuzzes the same start point on every machine,
# and its time does not grow with the cache. `make fuzz` keeps the cache,
# so long runs build on each other.
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

time=${1:?usage: fuzz.sh TIME [MINIMIZE] [fresh]}
minimize=${2:-0}
fresh=${3:-}
go=${GO:-go}

cache_args=()
if [[ $fresh == fresh ]]; then
	cache=$(mktemp -d)
	trap 'rm -rf "$cache"' EXIT
	cache_args=(-args -test.fuzzcachedir="$cache")
fi

cd "$(dirname "$0")/.."
found=0
failed=()
# One failing target does not hide the others: all run, then the failures
# are listed (each with the input go test saved under testdata/fuzz/).
while IFS=: read -r file decl; do
	target=${decl#func }
	# bench/ is a module of its own: its targets are run from there.
	mod=.
	if [[ $file == bench/* ]]; then
		mod=bench
		file=${file#bench/}
	fi
	pkg=./$(dirname "$file")
	name=$mod/${pkg#./}
	found=$((found + 1))
	echo "== $name $target ($time)"
	# go test's fuzz coordinator can report "context deadline exceeded" when
	# the time runs out while a worker is busy, with no input saved: that is
	# the runner, not a finding, so such a run is tried again, up to three
	# times in all (on a busy machine it happened about once per run of
	# the 16 targets). A real failure writes its input under
	# testdata/fuzz and is never retried.
	for attempt in 1 2 3; do
		if out=$(cd "$mod" && "$go" test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -fuzzminimizetime "$minimize" "$pkg" "${cache_args[@]}" 2>&1); then
			echo "$out"
			break
		fi
		echo "$out"
		if [[ $attempt -lt 3 && $out == *"context deadline exceeded"* && $out != *"Failing input written"* ]]; then
			echo "fuzz.sh: $target: the fuzz runner timed out without a finding; running it again"
			continue
		fi
		failed+=("$name $target")
		break
	done
done < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' cmd pkg internal bench/cmd bench/internal | sort)
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
