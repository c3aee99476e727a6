#!/usr/bin/env bash
# The main job end to end on embedded defaults: compile a bundled ONNX model to int8 and its
# circuit, commit an input, prove a task bound to a task id and a provider, verify the proof
# as an auditor would, and print the timings. Data lives under ./.tgrid/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-cnn}
DATA=.tgrid/demo
mkdir -p "$DATA"

echo "==> building tgrid-prover and tgrid-verifier (dev profile: dependencies and circuit crates at opt-level 3)"
cargo build --locked -q -p tgrid-prover -p tgrid-verifier
P=target/debug/tgrid-prover
V=target/debug/tgrid-verifier
TASK_ID=0x$(printf 'tensorgrid-demo-task-%s' "$MODEL" | sha256sum | cut -c1-64)
PROVIDER=0x00000000000000000000000000000000000000d1

echo "==> compile fixtures/$MODEL/model.onnx"
$P compile "fixtures/$MODEL/model.onnx" --calibration "fixtures/$MODEL/calibration.json" --out "$DATA/$MODEL.tgm"

echo "==> commit the task input (what the poster puts on-chain)"
$P commit-input "$DATA/$MODEL.tgm" --input "fixtures/$MODEL/input.json"

echo "==> prove task $TASK_ID for provider $PROVIDER"
$P prove "$DATA/$MODEL.tgm" --input "fixtures/$MODEL/input.json" --task-id "$TASK_ID" --provider "$PROVIDER" \
  --out "$DATA/$MODEL.tgp" --output "$DATA/$MODEL.out.json"

echo "==> verify the proof (rebuilding the circuit from the model's weights)"
$V task "$DATA/$MODEL.tgp" --model "$DATA/$MODEL.tgm"

echo "==> summary"
$V --json task "$DATA/$MODEL.tgp" --model "$DATA/$MODEL.tgm"
