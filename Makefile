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
	@echo "variables: CONFIG=FILE (run), MODE=build|run|test (deps), FUZZTIME=30s (fuzz), DURATION=10m VIEWERS=100 (soak), VERSION=v1.2.3 (build; default: git describe)"

deps: ## install missing Debian packages (MODE=build|run|test, default test)
	scripts/deps.sh $(MODE)

build: ## build every binary under cmd/ into bin/
	scripts/deps.sh build
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

run: ## build and start the server (embedded defaults, or CONFIG=FILE)
	scripts/deps.sh run
	$(MAKE) --no-print-directory build
	./bin/srtwhep $(if $(CONFIG),-config $(CONFIG))

test: ## deps, tidy go.mod, go vet, gofmt, go test -race, shellcheck, offline deploy checks (tools/)
	scripts/deps.sh test
	@# An untidy go.mod (a missing, stale or mislabelled requirement) fails
	@# here with the diff that `go mod tidy` would apply.
	$(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff
	$(GO) vet ./...
	unformatted=$$(gofmt -l .); \
	if [[ -n "$$unformatted" ]]; then \
		echo "gofmt: these files need 'gofmt -w':"; echo "$$unformatted"; exit 1; \
	fi
	$(GO) test -race -count=1 -timeout 8m $$($(GO) list ./... | grep -v '/cmd/srtwhep$$')
	@# pkg/whep's tests again on the pion media plane (webrtc.mediaPlane:
	@# pion), which is not the default; cmd/srtwhep covers it with
	@# TestPionMediaPlaneCorePath.
	TEST_MEDIAPLANE=pion $(GO) test -race -count=1 -timeout 5m ./pkg/whep
	@# The end-to-end package runs on its own, verbose into a log, so the
	@# browser test has the machine to itself and its figures are shown.
	log=$$(mktemp); \
	if ! $(GO) test -race -count=1 -timeout 11m -v ./cmd/srtwhep >"$$log" 2>&1; then \
		grep -v '^time=' "$$log" | tail -150; rm -f "$$log"; exit 1; \
	fi; \
	grep -E '^(browser:|--- (PASS|FAIL)|ok )' "$$log"; rm -f "$$log"
	@# Every fuzz target for a few seconds from its checked-in corpus: no
	@# panic, no 5xx, no broken invariant on what has been found so far.
	scripts/fuzz.sh 2s 0 fresh
	shellcheck $(SHELL_SCRIPTS)
	cd tools && $(GO) vet ./... && $(GO) test -count=1 -timeout 5m ./...

bench: ## Go benchmarks + capacity ladders of browser-like viewers (headline; gro as an extra), server on CPU 0; PLANES, ROUNDS, STEPS: see scripts/bench.sh (report in bench/results/)
	scripts/deps.sh run
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
