#!/usr/bin/env bash
# `make bench-ezkl`: EZKL 23 (PyPI) and tgrid-prover prove the same ONNX file and input,
# interleaved in one run (scripts/bench_ezkl.py), one JSON object per fixture. The bundled digits
# cnn by default; `FIXTURES="vit gpt" make bench-ezkl` for the transformers,
# `FIXTURES=corpus/keras_cnn` for a third-party model of fixtures/corpus (its opset-17 file, else
# its torch.export file)
# (EZKL's failure, if any, is reported with its step and message; EZKL_SCALE=BITS sets its input
# and parameter scale). TGRID_PROVER=target/debug/tgrid-prover skips the release build.
# EZKL is installed in a virtualenv under .tgrid/ezkl-venv (a benchmark dependency only).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.tgrid/ezkl-venv
RUNS=${RUNS:-3}
FIXTURES=${FIXTURES:-cnn}
[[ -x $VENV/bin/python ]] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q ezkl==23.0.5
PROVER=${TGRID_PROVER:-target/release/tgrid-prover}
[[ -n ${TGRID_PROVER:-} ]] || cargo build --locked -q --release -p tgrid-prover
mkdir -p .tgrid/bench
for name in $FIXTURES; do
  dir=fixtures/$name
  model=$dir/model.onnx
  [[ -f $model ]] || model=$dir/opset17.onnx
  # A corpus model whose TorchScript export failed (GPT-2): its torch.export file.
  [[ -f $model ]] || model=$dir/dynamo18.onnx
  # The GPT as its tests compile it: attention scores at 16 bits (docs/quantization.md).
  flags=()
  [[ $name == gpt ]] && flags=(--wide-attention-scores)
  tgm=.tgrid/bench/${name//\//_}.tgm
  "$PROVER" --json compile "$model" --calibration "$dir/calibration.json" "${flags[@]}" --out "$tgm" > /dev/null
  "$VENV/bin/python" scripts/bench_ezkl.py "$model" "$dir/calibration.json" "$tgm" \
    "$PROVER" --runs "$RUNS" ${EZKL_SCALE:+--scale "$EZKL_SCALE"}
done
