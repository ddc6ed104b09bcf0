# dragonx: the two commands a person needs are `make run` and `make test`.
# Both install what is missing first (`make setup`), idempotently and quickly
# when everything is already present.

GO         ?= go
# The paper's pipeline at its default scale ("small"): docs/pipeline.md.
EXPERIMENT ?= experiments/paper.hcl

# Two binaries from one program: bin/dragonx is pure Go (static, starts in a
# few ms: a no-op run must be fast); bin/dragonx-torch is the same program
# built with -tags=torch, linked to libtorch through gotch, and runs the
# dragon commands that dragonx hands to it. Loading libtorch costs ~0.7 s.
BIN        := bin/dragonx
BIN_TORCH  := bin/dragonx-torch
# Packages with libtorch code: tested again with the torch tag.
TORCH_PKGS := ./dragon/... ./internal/torchrt/... ./stages/sft/... ./stages/rl/... ./stages/bench/... ./stages/netbench/...

.PHONY: all setup cuda build run test bench clean

all: build

setup:
	@scripts/setup.sh

# The CUDA compiler (Debian's nvidia-cuda-toolkit, no GPU needed) for the
# tests that compile generated CUDA (kernels/ptxas): installed for `make
# test` only, idempotently (at once when nvcc is present; ~1.5 min the first
# time). DRAGONX_NO_CUDA=1 skips it; those tests then skip, saying why.
cuda:
	@scripts/cuda-toolkit.sh

build: setup
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/dragonx
	$(GO) build -tags=torch -o $(BIN_TORCH) ./cmd/dragonx

run: build
	$(BIN) run $(EXPERIMENT)

# The full suite: unit, golden, property, fuzz seed corpora, testscript
# end-to-end and fault tests, without and with libtorch. CI runs exactly
# this (.ci/run).
# The end-to-end test of experiments/paper.hcl (smoke scale) trains in
# dragonx-torch: DRAGONX_TORCH points the tests at the one just built.
test: setup cuda build
	$(GO) vet ./...
	$(GO) vet -tags=torch ./...
	DRAGONX_TORCH=$(CURDIR)/$(BIN_TORCH) $(GO) test -timeout 30m ./...
	$(GO) test -tags=torch -timeout 30m $(TORCH_PKGS)
	$(GO) test -tags=torch -timeout 30m -run 'Dragon|Bench' ./cmd/dragonx/

# Benchmarks and heavy checks; figures go into the issues' closing notes.
bench: build
	@scripts/bench.sh

clean:
	rm -rf bin
