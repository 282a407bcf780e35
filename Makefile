GO      ?= go
BIN     ?= bin/dreamgate
ARGS    ?=
DIST    ?= dist
PKG     := ./cmd/dreamgate

# Stamped into the binary (`dreamgate version`); taken from git, never kept
# by hand.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)

# Every binary is static and cgo-free: building and running need Go alone.
# The Dockerfile builds with the same flags (a test compares them).
# -buildvcs=false: the stamp above is the binary's one account of where it
# came from, so the toolchain's own VCS stamping is off. Under Go's default
# (-buildvcs=auto) it depends on the machine: it fails the build where git
# refuses the checkout (another owner: "error obtaining VCS status"), and
# records nothing in a git worktree or without git.
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(DATE)
BUILD   := CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "$(LDFLAGS)"

RELEASE_TARGETS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64

# The race detector needs cgo and a C compiler; without one the tests still
# run, without -race, and say so.
CC_FOUND  = $(shell command -v "$$($(GO) env CC)" 2>/dev/null)
RACE      = $(if $(CC_FOUND),-race,)
TEST_CGO  = $(if $(CC_FOUND),1,0)
TEST_NOTE = $(if $(CC_FOUND),race detector on (C compiler $(CC_FOUND)),NO RACE DETECTOR: no C compiler ($(shell $(GO) env CC)) found; install gcc or clang to test with -race)

.PHONY: build run demo test test-postgres chaos bench bench-tokens bench-recall screenshots templ size lint release clean

# Go says nothing while it compiles, and the first time it also fetches and
# compiles every module: say so, or a first `make run` looks hung.
build:
	@echo "make: compiling $(BIN); the first time, Go also downloads and compiles the modules it needs (a few minutes), later it takes seconds"
	$(BUILD) -o $(BIN) $(PKG)

# The gateway with the terminal chat (the built-in default channel).
run: build
	@echo "make: starting ./$(BIN) gateway --terminal $(ARGS)"
	./$(BIN) gateway --terminal $(ARGS)

# The gateway at this terminal with a stand-in for a model: the
# rule-following fake the tests use (llm/llmtest.MemoryModel), served on
# 127.0.0.1 by cmd/dreamgate-demo, so memory can be seen at work without a
# model or a key (README's walk-through). The dreamgate binary carries none
# of it. The demo's home is a new temporary folder, removed at the end;
# DEMO_HOME=dir keeps one.
DEMO_HOME ?=
demo: build
	$(GO) run ./cmd/dreamgate-demo -bin $(BIN) $(if $(DEMO_HOME),-home $(DEMO_HOME),)

# The whole suite. Every test process gets an explicit budget
# (TEST_TIMEOUT, above what a 2-core machine under a parallel CPU load
# needs: docs/development.md), and the slowest end-to-end tests of
# cmd/dreamgate (SLOW_TESTS) run each in a test process of its own, with a
# budget of its own, after the rest: together with the package's other
# tests they passed one budget on a loaded machine. `go test ./...` alone
# still runs every test, in the package's one budget.
TEST_TIMEOUT ?= 20m
SLOW_TESTS   ?= TestMonthsOfFactsStayWithinBudget TestPostgresEndToEnd TestChaos TestWebPageInABrowser
GO_TEST       = CGO_ENABLED=$(TEST_CGO) $(GO) test $(RACE) -count=1 -timeout $(TEST_TIMEOUT)
empty :=
space := $(empty) $(empty)
test:
	@echo "make test: $(TEST_NOTE)"
	$(GO) vet ./...
	$(GO_TEST) -skip '^($(subst $(space),|,$(strip $(SLOW_TESTS))))$$' ./...
	@set -e; for t in $(SLOW_TESTS); do \
		echo "make test: $$t, on its own"; \
		$(GO_TEST) -run "^$$t\$$" ./cmd/dreamgate/; \
	done

# The tests of the PostgreSQL engine (every test named ...Postgres..., and
# the scenarios of cmd/dreamgate/testdata/scenarios, which run several
# gateways on one database) against a throwaway cluster that .ci/postgres
# starts and stops (Debian's postgresql package must be installed; .ci/run
# installs it). make test skips them, saying why, unless
# DREAMGATE_TEST_POSTGRES names a server; under CI=true a skipped one fails.
PG_PKGS ?= ./internal/pgtest/ ./store/... ./gateway/ ./gateway/session/ ./dream/ ./cmd/dreamgate/
test-postgres:
	.ci/postgres run env CGO_ENABLED=$(TEST_CGO) $(GO) test $(RACE) -count=1 -timeout 30m -run 'Postgres|Scenarios' $(PG_PKGS)

# The chaos suite in full: kill -9 after every named write, model faults,
# socket drops, invariants after each (docs/development.md). make test runs a
# bounded part of it.
chaos:
	CHAOS=full CGO_ENABLED=$(TEST_CGO) $(GO) test $(RACE) -count=1 -timeout 30m -run 'Chaos' -v ./cmd/dreamgate/

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

# What a 1,000-turn conversation costs in prompt tokens, through the built
# binary and the fake model: by purpose, and the share of each chat request
# a provider's prompt cache could serve, as run and at one turn a minute;
# terminal (128K and 32K windows, and 128K without the conversation budget)
# and a Slack thread of two people; and a turn's and a Dream's cost with
# 100, 1,000 and 10,000 facts in memory. About 6 minutes, so not part of make
# bench (which skips it and says so).
bench-tokens:
	DREAMGATE_BENCH_TOKENS=1 $(GO) test -run '^$$' -bench '^BenchmarkTokens(ByFacts)?$$' -benchtime 1x -count=1 -timeout 60m ./cmd/dreamgate/

# The memory page's pictures in docs/img (docs/web.md, README), taken by
# its browser test in headless Chromium through the built binary. Needs
# Debian's chromium (or DREAMGATE_BROWSER naming a Chrome); the test says
# it skipped when there is none, and nothing is written.
screenshots:
	$(GO) test -count=1 -run '^TestWebPageInABrowser$$' -v ./cmd/dreamgate/ -web-screenshots=$(CURDIR)/docs/img

# Total recall at the size it must answer in well under 100 ms: the index
# of 100,000 archive entries and 1,000,000 archived messages built from
# nothing (about 5 minutes, 0.5 GB of disk in a temporary folder), then
# each kind of search and an update that finds nothing new. make bench runs
# the same at a tenth of that size. Run under .ci/postgres (.ci/postgres run
# make bench-recall), it measures the PostgreSQL engine beside the files'.
bench-recall:
	DREAMGATE_BENCH_1M=1 $(GO) test -run '^$$' -bench '^BenchmarkRecall$$' -benchmem -count=1 -timeout 60m ./recall/

# The memory page's templates (web/*.templ) as Go: the generated *_templ.go
# files are committed, so building needs no generator; run this after
# editing a .templ file (web's TestTemplatesGenerated fails while they
# differ). The version is go.mod's github.com/a-h/templ.
TEMPL_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/a-h/templ)
templ:
	$(GO) run github.com/a-h/templ/cmd/templ@$(TEMPL_VERSION) generate -path web

# What each package adds to the binary (docs/development.md, "Binary size and
# one-shot memory"): make build's stripped size and its large sections
# (binutils' size; data without a symbol, such as an embedded file, shows
# only in .rodata), then the symbol bytes of an unstripped build of the same
# code summed by package (Go modules whole, ours one by one; "std" holds the
# runtime and the function tables).
size: build
	@ls -l $(BIN)
	@size -A -d $(BIN) 2>/dev/null | awk '$$1 ~ /^\.(text|rodata|gopclntab)$$/ { printf "%7.2f MB  %s\n", $$2 / 1e6, $$1 }' || true
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -o $(BIN).syms $(PKG)
	@$(GO) tool nm -size $(BIN).syms | awk '$$2 < 10000000 { n = $$4; sub(/^(type:\.eq\.|type:\.hash\.|type:\*|type:|go:itab\.\*|go:itab\.|go:string\.)/, "", n); sub(/\[.*/, "", n); k = split(n, p, "/"); sub(/\..*/, "", p[k]); pkg = p[1]; for (i = 2; i <= k; i++) pkg = pkg "/" p[i]; if (pkg ~ /^github\.com\/dreamgate\/dreamgate/) m = pkg; else if (p[1] ~ /^(github\.com|golang\.org)$$/) m = p[1] "/" p[2] "/" p[3]; else if (p[1] ~ /\./) m = p[1] "/" p[2]; else m = "std"; s[m] += $$2; t += $$2 } END { for (m in s) printf "%7.2f MB  %s\n", s[m] / 1e6, m; printf "%7.2f MB  (all symbols)\n", t / 1e6 }' | sort -rn | head -40
	@rm -f $(BIN).syms

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Binaries for every release target plus SHA256SUMS, in $(DIST).
release:
	rm -rf $(DIST)
	mkdir -p $(DIST)
	@set -e; for t in $(RELEASE_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=""; if [ "$$os" = windows ]; then ext=.exe; fi; \
		out=$(DIST)/dreamgate-$(VERSION)-$$os-$$arch$$ext; \
		echo "$$out"; \
		GOOS=$$os GOARCH=$$arch $(BUILD) -o $$out $(PKG); \
	done
	cd $(DIST) && if command -v sha256sum >/dev/null 2>&1; then sha256sum dreamgate-*; else shasum -a 256 dreamgate-*; fi > SHA256SUMS

clean:
	rm -rf bin $(DIST)
