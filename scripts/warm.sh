#!/usr/bin/env bash
# warm.sh [MODULE_DIR...] — fills the Go module and build caches while
# deps.sh's apt-get install runs: make test runs it beside the install
# (deps.sh starts it only when it installs something, and ends it when
# the install ends; DEPS_HEADERS names the file deps.sh creates once the
# cgo headers are in), whose minute and a half on a fresh machine is
# mostly waiting on the network and the disk.
# What it finished stays in GOCACHE, so test.sh's builds find it there
# instead of compiling it on the two cores the tests need; what it had
# not finished is compiled there as before. MODULE_DIRs are the nested
# modules (tools, bench, ...).
#
# In the order test.sh needs them, each a build whose output is dropped
# (the cache is the point):
#   1. every module's downloads (go mod download);
#   2. what test.sh compiles first, the critical path: the server and the
#      end-to-end test binary (go build, go test -c ./cmd/srtwhep; the
#      standard library, every dependency and this repository's packages
#      without -race, the build the fuzz targets and tools/ share);
#   3. the standard library and the dependencies of the other test
#      binaries with -race (the unit line's);
#   4. the nested modules in NORACE (tools): their test binaries and go vet.
# A package that fails to build here is not an error: test.sh builds it
# again and reports it.
set -uo pipefail

go=${GO:-go}
norace=" ${NORACE:-tools} "
module_path=github.com/srtwhep/srtwhep

cd "$(dirname "$0")/.." || exit
root=$PWD
began=$SECONDS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 143' TERM

# step NAME COMMAND...: runs COMMAND, its output dropped, and says how long
# it took.
step() {
	local name=$1 t=$SECONDS
	shift
	"$@" >/dev/null 2>&1
	echo "warm.sh: $name: $((SECONDS - t)) s"
}

for dir in . "$@"; do
	(cd "$root/$dir" && step "go mod download in $dir/" "$go" mod download)
done

# The cgo packages need the headers deps.sh installs first.
if [[ -n ${DEPS_HEADERS:-} ]]; then
	until [[ -e $DEPS_HEADERS ]]; do
		sleep 1
	done
	echo "warm.sh: the headers are in after $((SECONDS - began)) s"
fi
step "the e2e test binary" "$go" test -c -o "$work/e2e/" ./cmd/srtwhep
step "the server" "$go" build -o "$work/bin/" ./cmd/srtwhep
# deps: the packages the main module's test binaries import, this
# repository's own left out (and go list's test variants, "P [P.test]").
mapfile -t deps < <("$go" list -deps -test -f '{{.ImportPath}}' ./... 2>/dev/null |
	grep -v -e ' ' -e '\.test$' -e "^$module_path\(/\|$\)")
step "${#deps[@]} dependencies with -race" "$go" build -race "${deps[@]}"

for dir in "$@"; do
	[[ $norace == *" $dir "* ]] || continue
	(
		cd "$root/$dir" || exit
		step "$dir/'s test binaries" "$go" test -c -o "$work/$dir/" ./...
		step "go vet in $dir/" "$go" vet ./...
	)
done
echo "warm.sh: done in $((SECONDS - began)) s"
