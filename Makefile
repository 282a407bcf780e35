GO      ?= go
BIN     ?= bin/dreamgate
ARGS    ?=
# -race needs cgo; the Go toolchain brings everything else.
export CGO_ENABLED ?= 1

.PHONY: build run test bench lint clean

# A static binary (the pure-Go DNS resolver): no dynamic loader and no libc
# at start-up, about 1 ms less CPU per run. `make build BUILD_CGO=1` links libc.
BUILD_CGO ?= 0
build:
	CGO_ENABLED=$(BUILD_CGO) $(GO) build -trimpath -ldflags "-s -w" -o $(BIN) ./cmd/dreamgate

# The gateway with the terminal chat (the built-in default channel).
run: build
	./$(BIN) gateway $(ARGS)

test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin
