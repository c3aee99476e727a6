#!/usr/bin/env bash
# `make bench-self-settle`: how long a provider takes to settle its own result without a sequencer
# (what the daemon's self_settle_before_secs and the market's self-settlement window must exceed),
# with the release binaries a provider runs, the production FRI wrap and the default devnet
# verifier (INSECURE devnet key, set up once and cached in .tgrid/keys).
#   anvil + contracts (the cnn registered at deployment) → a poster's book and one signed order
#   naming the provider → tgrid-prover prove → time tgrid-prover settle (aggregate, wrap, Groth16,
#   settleBatch from the provider's account)
# Prints one JSON object: settle_wall_seconds, prove_seconds (aggregation + wrap), gas_used, ...
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=.tgrid/bench-self-settle
BIN=target/release
rm -rf "$DATA"
mkdir -p "$DATA"
PIDS=()
source scripts/lib.sh
trap stop_all EXIT

bash scripts/foundry/setup.sh >&2
cargo build --release --locked -q -p tgrid-prover -p tgrid-sequencer -p tgrid-client >&2

$BIN/tgrid-prover --json compile fixtures/cnn/model.onnx --calibration fixtures/cnn/calibration.json --out "$DATA/cnn.tgm" > "$DATA/compile.json"
$BIN/tgrid-sequencer registry add "$DATA/cnn.tgm" --registry "$DATA/registry.json" > /dev/null
ROOT=$(jget root < "$DATA/registry.json")
MODEL=$(jget model_id < "$DATA/compile.json")
DIGEST=$(jget leaf_digest < "$DATA/compile.json")

start_anvil "$DATA/anvil.log"
TGRID_REGISTRY_ROOT=$ROOT TGRID_DEVNET_MODEL_ID=$MODEL TGRID_DEVNET_CIRCUIT_DIGEST=$DIGEST \
TGRID_DEPLOYMENTS_OUT=$DATA/deployment.json node_modules/.bin/forge script contracts/script/Deploy.s.sol \
  --rpc-url "$RPC" --broadcast --slow > "$DATA/deploy.log" 2>&1 || { tail -40 "$DATA/deploy.log" >&2; exit 1; }
export TGRID_RPC_URL=$RPC TGRID_DEPLOYMENT=$DATA/deployment.json TGRID_STATE_DIR=$DATA/poster

# Anvil account 1 is the provider; account 0 the poster.
PROVIDER=0x70997970C51812dc3A010C7d01b50e0d17dc79C8
PROVIDER_KEY=0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d
$BIN/tgrid --json deposit add 10 --per-order 10 > /dev/null
node -e 'const d=require(process.argv[1]);console.log(JSON.stringify({input_data:[d.input_data[0]]}))' ./fixtures/cnn/calibration.json > "$DATA/input.json"
HASH=$($BIN/tgrid --json order post --model "$DATA/cnn.tgm" --input "$DATA/input.json" --payment 10 \
  --deadline-in 1800 --provider $PROVIDER --inputs-dir "$DATA/inputs" --no-relay --out "$DATA/order.json" | jget order_hash)
$BIN/tgrid-prover --json prove "$DATA/cnn.tgm" --input "$DATA/input.json" --task-id "$HASH" --provider $PROVIDER \
  --out "$DATA/proof.tgp" > /dev/null

STARTED=$(date +%s.%N)
TGRID_PRIVATE_KEY=$PROVIDER_KEY $BIN/tgrid-prover --json settle --order "$DATA/order.json" --proof "$DATA/proof.tgp" \
  --model "$DATA/cnn.tgm" --insecure-devnet-key --keys-dir .tgrid/keys > "$DATA/settle.json"
ENDED=$(date +%s.%N)
node -e '
const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").pop());
console.log(JSON.stringify({
  bench: "self_settlement",
  orders: 1,
  settle_wall_seconds: +(process.argv[3] - process.argv[2]).toFixed(1),
  prove_seconds: +s.prove_seconds.toFixed(1),
  gas_used: s.gas_used,
  skipped: s.skipped.length,
  fri: "production",
  key: "insecure devnet key (cached)",
  build: "release",
}));' "$DATA/settle.json" "$STARTED" "$ENDED"
