#!/usr/bin/env bash
# `make bench-ezkl`: EZKL 23 (PyPI) and tgrid-prover prove the bundled digits cnn on the same
# ONNX file and input, interleaved in one run (scripts/bench_ezkl.py). Prints one JSON object.
# EZKL is installed in a virtualenv under .tgrid/ezkl-venv (a benchmark dependency only).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.tgrid/ezkl-venv
RUNS=${RUNS:-3}
[[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q ezkl==23.0.5
cargo build --locked -q --release -p tgrid-prover
mkdir -p .tgrid/bench
target/release/tgrid-prover --json compile fixtures/cnn/model.onnx --calibration fixtures/cnn/calibration.json \
  --out .tgrid/bench/cnn.tgm > /dev/null
"$VENV/bin/python" scripts/bench_ezkl.py fixtures/cnn/model.onnx fixtures/cnn/calibration.json .tgrid/bench/cnn.tgm \
  target/release/tgrid-prover --runs "$RUNS"
