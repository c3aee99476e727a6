#!/usr/bin/env bash
# `make bench-ezkl`: EZKL 23 (PyPI) and tgrid-prover prove the same ONNX file and input,
# interleaved in one run (scripts/bench_ezkl.py), one JSON object per fixture. The bundled digits
# cnn by default; `FIXTURES="vit gpt" make bench-ezkl` for the transformers (EZKL's failure, if
# any, is reported with its step and message; EZKL_SCALE=BITS sets its input and parameter scale).
# EZKL is installed in a virtualenv under .tgrid/ezkl-venv (a benchmark dependency only).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.tgrid/ezkl-venv
RUNS=${RUNS:-3}
FIXTURES=${FIXTURES:-cnn}
[[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q ezkl==23.0.5
cargo build --locked -q --release -p tgrid-prover
mkdir -p .tgrid/bench
for name in $FIXTURES; do
  dir=fixtures/$name
  # The GPT as its tests compile it: attention scores at 16 bits (docs/quantization.md).
  flags=()
  [[ $name == gpt ]] && flags=(--wide-attention-scores)
  target/release/tgrid-prover --json compile "$dir/model.onnx" --calibration "$dir/calibration.json" \
    "${flags[@]}" --out ".tgrid/bench/$name.tgm" > /dev/null
  "$VENV/bin/python" scripts/bench_ezkl.py "$dir/model.onnx" "$dir/calibration.json" ".tgrid/bench/$name.tgm" \
    target/release/tgrid-prover --runs "$RUNS" ${EZKL_SCALE:+--scale "$EZKL_SCALE"}
done
