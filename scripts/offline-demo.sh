#!/usr/bin/env bash
# `make demo-offline`: the proof pipeline alone, no chain: compile bundled ONNX models to int8 and their
# circuits, commit an input, prove tasks bound to task ids and a provider, verify a proof as an
# auditor would, register the models, aggregate the task proofs into one batch proof and verify
# the batch, wrap it into one Groth16 proof (INSECURE devnet key, set up once and cached in
# ./.tgrid/keys) and verify that proof as an auditor. Data lives under ./.tgrid/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-cnn}
DATA=.tgrid/demo
mkdir -p "$DATA"

echo "==> building tgrid-prover, tgrid-verifier and tgrid-sequencer (dev profile: dependencies and circuit crates at opt-level 3)"
cargo build --locked -q -p tgrid-prover -p tgrid-verifier -p tgrid-sequencer
P=target/debug/tgrid-prover
V=target/debug/tgrid-verifier
S=target/debug/tgrid-sequencer
SECOND=${SECOND:-mlp}
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

echo "==> compile a second model (fixtures/$SECOND) and prove two more tasks"
$P compile "fixtures/$SECOND/model.onnx" --calibration "fixtures/$SECOND/calibration.json" --out "$DATA/$SECOND.tgm"
for i in 1 2; do
  $P prove "$DATA/$SECOND.tgm" --input "fixtures/$SECOND/input.json" \
    --task-id "0x$(printf 'tensorgrid-demo-task-%s-%s' "$SECOND" "$i" | sha256sum | cut -c1-64)" \
    --provider "$PROVIDER" --out "$DATA/$SECOND-$i.tgp"
done

echo "==> register both models (the registry root is what governance puts on-chain)"
rm -f "$DATA/registry.json"
$S registry add "$DATA/$MODEL.tgm" --registry "$DATA/registry.json"
$S registry add "$DATA/$SECOND.tgm" --registry "$DATA/registry.json"

echo "==> aggregate the three task proofs into one batch proof"
$S aggregate "$DATA/$MODEL.tgp" "$DATA/$SECOND-1.tgp" "$DATA/$SECOND-2.tgp" --registry "$DATA/registry.json" --out "$DATA/batch.tgb"

echo "==> verify the batch as an auditor (rebuilding the aggregation circuits)"
$V batch "$DATA/batch.tgb" --registry "$DATA/registry.json"

echo "==> wrap the batch into one Groth16 proof over BN254 (production FRI parameters)"
echo "    INSECURE devnet key from a public seed; the first run does the setup (minutes) and caches it in .tgrid/keys"
$S wrap "$DATA/batch.tgb" --out "$DATA/batch.g16" --insecure-devnet-key --keys-dir .tgrid/keys

echo "==> verify the settlement proof as an auditor (root and public input recomputed from the leaves)"
$V groth16 "$DATA/batch.g16" --keys-dir .tgrid/keys

echo "==> summary"
$V --json groth16 "$DATA/batch.g16" --keys-dir .tgrid/keys
