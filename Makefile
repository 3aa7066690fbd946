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
# The nested modules (each its own go.mod), tested by make test beside the
# main one.
MODULES  := $(patsubst %/go.mod,%,$(wildcard */go.mod))

.PHONY: help deps build run test bench fuzz soak lintref clean

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

test: ## deps, tidy, gofmt, shellcheck, every test binary built once (-race), then side by side: the end-to-end package, the unit packages, go vet, fuzz, each nested module (tools/ ...)
	@# While apt installs (a minute and a half on a fresh machine, mostly
	@# waiting), what needs no Debian package compiles into the build
	@# cache: see scripts/warm.sh.
	DEPS_BESIDE="scripts/warm.sh $(MODULES)" scripts/deps.sh test
	@# The checks that take seconds come before the lines that take
	@# minutes, so a finding is reported at once. An untidy go.mod (a
	@# missing, stale or mislabelled requirement) fails here with the diff
	@# that `go mod tidy` would apply.
	for mod in . $(MODULES); do (cd "$$mod" && $(GO) mod tidy -diff); done
	unformatted=$$(gofmt -l .); \
	if [[ -n "$$unformatted" ]]; then \
		echo "gofmt: these files need 'gofmt -w':"; echo "$$unformatted"; exit 1; \
	fi
	shellcheck $(SHELL_SCRIPTS)
	@# The test binaries built once, then the end-to-end package, the
	@# unit packages, go vet, fuzz and the nested modules side by side:
	@# see the script for how.
	scripts/test.sh $(MODULES)

bench: ## Go benchmarks (video transcoder included) + glass-to-glass passthrough/transcoded + capacity ladders of browser-like viewers (headline; gro as an extra), server on CPU 0, + the publisher matrix (encoders); BASE (compare against a revision's server), ROUNDS, STEPS: see scripts/bench.sh (report in bench/results/)
	scripts/deps.sh bench
	scripts/bench.sh

lintref: ## hold tools/deploycheck's Dockerfile lint to buildkit's own (dockerfile2llb.DockerfileLint) over its rule table and the Dockerfile; outside make test, which never compiles the converter
	cd tools/lintref && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) test -count=1 -v ./...

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
