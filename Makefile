# dragonx: the two commands a person needs are `make run` and `make test`.
# Both install what is missing first (`make setup`), idempotently and quickly
# when everything is already present.

GO        ?= go
BIN       := bin/dragonx
# The torch tag builds the little dragon (gotch + libtorch); `make setup`
# installs what it needs. Untagged builds work too, without the dragon commands.
TAGS      ?= torch
GOFLAGS_T := -tags=$(TAGS)
EXPERIMENT ?= experiments/examples/pipeline.hcl

.PHONY: all setup build run test bench fuzz clean

all: build

setup:
	@scripts/setup.sh

build: setup
	$(GO) build $(GOFLAGS_T) -o $(BIN) ./cmd/dragonx

run: build
	$(BIN) run $(EXPERIMENT)

# The full suite: unit, golden, property, fuzz seed corpora, testscript
# end-to-end and fault tests. CI runs exactly this (.ci/run).
test: setup
	$(GO) vet $(GOFLAGS_T) ./...
	$(GO) test $(GOFLAGS_T) -timeout 30m ./...

# Benchmarks and heavy checks; figures go into the issues' closing notes.
bench: build
	@scripts/bench.sh

clean:
	rm -rf bin
