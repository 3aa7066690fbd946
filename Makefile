# srtwhep — build, run and test. `make` alone lists the targets.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Builds must not depend on .git being present or readable (Docker context,
# tarballs, CI clones owned by another user).
GOFLAGS ?= -buildvcs=false
export GOFLAGS
export CGO_ENABLED := 1

GO       ?= go
CONFIG   ?=
FUZZTIME ?= 30s
# Go minimizes each new-coverage input before reporting it (60 s budget by
# default), which stalls workers on kilobyte seeds: bounded here.
FUZZMINIMIZE ?= 5s
DURATION ?= 10m
VIEWERS  ?= 100
MODE     ?= test

# The version comes from git itself rather than from Go's VCS stamping
# (off above), so a tree without .git still builds, as "dev".
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/srtwhep/srtwhep/pkg/version.Version=$(VERSION)

SHELL_SCRIPTS := $(wildcard *.sh scripts/*.sh deploy/*.sh) .ci/run

.PHONY: help deps build run test bench fuzz soak clean

help: ## list the targets
	@echo "srtwhep make targets:"
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-7s %s\n", $$1, $$2}'
	@echo "variables: CONFIG=FILE (run), MODE=build|run|test|bench (deps), FUZZTIME=30s (fuzz), DURATION=10m VIEWERS=100 (soak), VERSION=v1.2.3 (build; default: git describe)"

deps: ## install missing Debian packages (MODE=build|run|test|bench, default test)
	scripts/deps.sh $(MODE)

build: ## build every binary under cmd/ and bench/cmd/ (whep-loadgen) into bin/
	scripts/deps.sh build
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...
	cd bench && $(GO) build -ldflags '$(LDFLAGS)' -o ../bin/ ./cmd/...

run: ## build and start the server (embedded defaults, or CONFIG=FILE)
	scripts/deps.sh run
	$(MAKE) --no-print-directory build
	./bin/srtwhep $(if $(CONFIG),-config $(CONFIG))

test: ## deps, tidy go.mod, go vet, gofmt, shellcheck, go test -race, fuzz, offline deploy checks (tools/), bench tooling (bench/)
	scripts/deps.sh test
	@# An untidy go.mod (a missing, stale or mislabelled requirement) fails
	@# here with the diff that `go mod tidy` would apply.
	$(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff
	@# The checks that take seconds come before the tests that take
	@# minutes, so a lint finding is reported at once.
	$(GO) vet ./...
	cd tools && $(GO) vet ./...
	cd bench && $(GO) vet ./...
	unformatted=$$(gofmt -l .); \
	if [[ -n "$$unformatted" ]]; then \
		echo "gofmt: these files need 'gofmt -w':"; echo "$$unformatted"; exit 1; \
	fi
	shellcheck $(SHELL_SCRIPTS)
	@# Beside the unit packages rather than after them: the tools module's
	@# offline deploy checks and the bench module's tests
	@# (bench/internal/loadgen alone takes about 90 s, which the unit line
	@# no longer waits on in one of go test's two package slots).
	dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	(cd tools && { $(GO) test -count=1 -timeout 5m ./... >"$$dir/tools.log" 2>&1 && echo 0 || echo $$?; } >"$$dir/tools.rc") & \
	(cd bench && { $(GO) test -race -count=1 -timeout 8m ./... >"$$dir/bench.log" 2>&1 && echo 0 || echo $$?; } >"$$dir/bench.rc") & \
	units=0; $(GO) test -race -count=1 -timeout 8m $$($(GO) list ./... | grep -v '/cmd/srtwhep$$') || units=$$?; \
	wait; tools=$$(cat "$$dir/tools.rc"); bench=$$(cat "$$dir/bench.rc"); \
	cat "$$dir/tools.log" "$$dir/bench.log"; \
	[[ $$units == 0 && $$tools == 0 && $$bench == 0 ]]
	@# The end-to-end package runs on its own, verbose into a log, so the
	@# tests that need the machine to themselves (the browser tests, which
	@# print figures, and those that measure load; they do not call
	@# t.Parallel) have it, and their figures are shown. The rest run two
	@# at a time (go test's -parallel is GOMAXPROCS, 2 here).
	log=$$(mktemp); \
	if ! $(GO) test -race -count=1 -timeout 11m -v ./cmd/srtwhep >"$$log" 2>&1; then \
		grep -v '^time=' "$$log" | tail -150; \
		echo "== what the failed tests logged (parallel tests log far above the tail):"; \
		awk -f scripts/failed-tests.awk "$$log" "$$log" | tail -400 || true; rm -f "$$log"; exit 1; \
	fi; \
	grep -E '^(browser:|--- (PASS|FAIL)|ok )' "$$log"; rm -f "$$log"
	@# Every fuzz target for a few seconds from its checked-in corpus: no
	@# panic, no 5xx, no broken invariant on what has been found so far.
	scripts/fuzz.sh 2s 0 fresh

bench: ## Go benchmarks (video transcoder included) + glass-to-glass passthrough/transcoded + capacity ladders of browser-like viewers (headline; gro as an extra), server on CPU 0, + the publisher matrix (encoders); PLANES, ROUNDS, STEPS: see scripts/bench.sh (report in bench/results/)
	scripts/deps.sh bench
	scripts/bench.sh

fuzz: ## run every Fuzz target for FUZZTIME each, one at a time
	scripts/deps.sh build
	scripts/fuzz.sh $(FUZZTIME) $(FUZZMINIMIZE)

soak: ## real server, VIEWERS viewers, churn and publisher restarts for DURATION; fails on a rising trend
	scripts/deps.sh run
	$(MAKE) --no-print-directory build
	./bin/whep-loadgen soak -server bin/srtwhep -duration $(DURATION) -viewers $(VIEWERS)

clean: ## remove build output and test caches
	rm -rf bin/
	$(GO) clean -testcache
