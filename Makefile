# TensorGrid settlement layer. `make demo` and `make test` work on a fresh machine: they
# install what they need (Rust crates from crates.io, npm packages for Foundry).

CARGO ?= cargo

.PHONY: demo demo-offline test test-rust test-contracts setup-nats bench bench-transformers bench-aggregation bench-latency bench-queue bench-wrap bench-sequencer bench-self-settle bench-ezkl bench-corpus setup-contracts fmt

## Every role end to end on a local devnet: compile the bundled models, deploy, register them by a
## DAO vote, stake a provider, post 8 tasks, prove, batch, wrap, settle one batch on-chain, check
## the outputs and audit the batch. Last stdout line: one JSON summary.
demo: setup-contracts
	bash scripts/demo.sh

## The proof pipeline alone, no chain: compile, prove, verify, aggregate, wrap, verify.
demo-offline:
	bash scripts/offline-demo.sh

## Every test: Rust (unit, property, integration, CLI, real anvil devnets) and Solidity (forge).
## The Foundry toolchain comes first: Rust tests spawn anvil and run the deployment script.
test: setup-contracts test-rust test-contracts

## Processes the tests start share one circuit cache under target/ (not the user's ~/.cache).
test-rust: setup-contracts setup-nats
	TGRID_CIRCUIT_CACHE=$(CURDIR)/target/circuit-cache $(CARGO) test --workspace --locked

## The NATS server (Debian package) the job-queue tests start.
setup-nats:
	@bash scripts/setup-nats.sh

setup-contracts:
	@if [ -f scripts/foundry/setup.sh ]; then bash scripts/foundry/setup.sh; fi

test-contracts: setup-contracts
	@if [ -f foundry.toml ]; then node_modules/.bin/forge test; fi

## Proving benchmarks on the fixtures (one JSON line per fixture), in the release profile a
## provider runs. Benchmarks build in release; `make test` keeps the dev profile.
bench:
	$(CARGO) build --release --locked -p tgrid-prover
	target/release/tgrid-prover bench fixtures/mlp fixtures/cnn fixtures/lenet

## The third-party corpus (fixtures/corpus: transformers GPT-2 and BERT, timm ViT, MobileNetV2,
## ResNet, torch attention layers, a Keras CNN from tf2onnx) beside the digits cnn, LeNet and our
## vision transformer, in one run, release profile, one JSON line each.
bench-corpus:
	$(CARGO) build --release --locked -p tgrid-prover
	bash scripts/bench-corpus.sh

## Transformer benchmarks: the PyTorch fixtures (MLP-Mixer, vision transformer, character GPT
## with 32 characters of context), release profile, one JSON line each.
bench-transformers:
	$(CARGO) build --release --locked -p tgrid-prover
	target/release/tgrid-prover bench fixtures/mixer fixtures/vit
	target/release/tgrid-prover bench --wide-attention-scores fixtures/gpt

## Aggregation benchmark: leaf, chunk and merge proofs alone, then a 64-task batch
## end to end (about 13 minutes on 2 cores, release build). One JSON object.
bench-aggregation:
	$(CARGO) build --release --locked -p tgrid-sequencer
	target/release/tgrid-sequencer bench --tasks 64 --provider-leaves

## Close → settleable proof of a 64-task batch with provider leaves (production FRI wrap with the
## INSECURE devnet Groth16 key, set up once into .tgrid/keys): all tasks there at the close, and
## tasks arriving one every 4 s into the open batch. One JSON object; ~20 minutes.
bench-latency:
	$(CARGO) build --release --locked -p tgrid-sequencer
	target/release/tgrid-sequencer bench --tasks 64 --provider-leaves --skip-sequencer-leaves --arrival-every 4 --wrap-insecure-devnet-key

## The same batch in-process and on a job queue with 2 worker processes (a throwaway NATS
## broker): same root checked, seconds per task and each worker's share, then its wrap as a job
## on a worker (INSECURE devnet key; the workers hold it, ~4 GB each). One JSON object.
bench-queue: setup-nats
	$(CARGO) build --release --locked -p tgrid-sequencer
	bash scripts/bench-queue.sh target/release/tgrid-sequencer 16 2 --wrap-insecure-devnet-key

## Wrap benchmarks: BN254 Poseidon speed, the settle and BN254 final layers over a one-task
## batch (production and test FRI parameters), Groth16 setup and proving of a 2^20-constraint
## circuit (INSECURE devnet setup). One JSON line each; a few minutes and 3 GB.
bench-wrap:
	$(CARGO) build --release --locked -p tgrid-poseidon-bn254 -p tgrid-wrap -p tgrid-groth16 --examples
	target/release/examples/permutation_speed
	target/release/examples/wrap_timings
	target/release/examples/groth16_bench 1048576

## Sequencer ingest load harness (real anvil, tiny model, loopback): throughput of acknowledged
## submissions and acknowledgement latency at 50 requests/s. One JSON object; ~6 minutes.
bench-sequencer: setup-contracts
	$(CARGO) run --release --locked -q -p tgrid-sequencer --example load_harness -- --tasks 200

## Self-settlement: a provider settles its own result without a sequencer (aggregation, the
## production wrap, Groth16, settleBatch from its account), release build, on anvil. One JSON
## object; a few minutes (more on the first run: the INSECURE devnet key setup).
bench-self-settle: setup-contracts
	bash scripts/bench-self-settle.sh

## EZKL 23 (installed from PyPI into .tgrid/ezkl-venv) and a one-shot `tgrid-prover prove` on
## the same ONNX and input, interleaved in one run. One JSON object per fixture: the digits cnn by
## default (a few minutes), `FIXTURES="vit gpt"` for the transformers, `FIXTURES=corpus/keras_cnn`
## for a model of the third-party corpus.
bench-ezkl:
	bash scripts/bench-ezkl.sh

fmt:
	$(CARGO) fmt --all
