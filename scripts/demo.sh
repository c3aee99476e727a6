#!/usr/bin/env bash
# `make demo`: every role end to end on a local devnet.
#   1. compile the bundled ONNX models (cnn, mlp) to int8 models and circuits; list them in a registry
#   2. start anvil and deploy the contracts (verifier: the INSECURE devnet Groth16 key's)
#   3. DAO: delegate, propose the models' registration, vote, queue in the timelock, execute
#   4. fund the provider; start the sequencer service and the provider daemon (it stakes)
#   5. a task poster posts 8 tasks; the provider accepts, proves and submits them; the sequencer
#      aggregates them into one batch, wraps it into one Groth16 proof and settles it on-chain
#   6. the poster fetches every output and checks it against the settled commitment; an
#      auditor re-verifies the settled batch from calldata
#   7. the provider daemon claims the pay of its settled tasks (TaskEscrow.claimSettled, which
#      also releases their collateral)
# The last stdout line is one JSON object (tasks_posted, tasks_settled, batches,
# batch_verify_gas, settle_gas_per_task, provider_tasks_claimed, wall_seconds, ...). Data lives under ./.tgrid; the
# Groth16 key (INSECURE: from a public seed) is set up on the first run, then reused from
# ./.tgrid/keys. Environment: TASKS (default 8).
set -euo pipefail
cd "$(dirname "$0")/.."
STARTED=$(date +%s)
TASKS=${TASKS:-8}
DATA=.tgrid/demo
BIN=target/debug
P=$BIN/tgrid-prover
S=$BIN/tgrid-sequencer
V=$BIN/tgrid-verifier
T=$BIN/tgrid
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# One field of a JSON object on stdin (dotted path); node is there for Foundry anyway.
jget() {
  node -e 'let d="";process.stdin.on("data",c=>d+=c).on("end",()=>{let v;try{v=JSON.parse(d)}catch{v=JSON.parse(d.trim().split("\n").pop())}for(const k of process.argv[1].split("."))v=v[k];console.log(typeof v==="object"?JSON.stringify(v):v)})' "$1"
}
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
step() { echo; echo "==> $*"; }

step "toolchain: Foundry from npm, then tgrid, tgrid-prover, tgrid-sequencer, tgrid-verifier"
bash scripts/foundry/setup.sh
cargo build --locked -q -p tgrid-prover -p tgrid-verifier -p tgrid-sequencer -p tgrid-client

rm -rf "$DATA"
mkdir -p "$DATA/tasks"

step "model owner: compile the bundled models and list them in a registry"
for m in cnn mlp; do
  $P --json compile "fixtures/$m/model.onnx" --calibration "fixtures/$m/calibration.json" --out "$DATA/$m.tgm" \
    | node -e 'let d="";process.stdin.on("data",c=>d+=c).on("end",()=>{const v=JSON.parse(d);console.log(`    ${process.argv[1]}: model ${v.model_id}, ${v.segments} segment(s), argmax agreement with float ${(100*v.calibration.argmax_agreement).toFixed(1)}%`)})' "$m"
  $S registry add "$DATA/$m.tgm" --registry "$DATA/registry.json" >/dev/null
done
echo "    registry root $(jget root < "$DATA/registry.json")"

step "devnet: anvil and the contracts (Groth16 verifier for the INSECURE devnet key)"
RPC_PORT=$(free_port)
RPC=http://127.0.0.1:$RPC_PORT
node_modules/.bin/anvil --port "$RPC_PORT" --silent > "$DATA/anvil.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  node -e 'fetch(process.argv[1],{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify({jsonrpc:"2.0",id:1,method:"eth_chainId",params:[]})}).then(()=>process.exit(0),()=>process.exit(1))' "$RPC" && break
  sleep 0.2
done
export TGRID_RPC_URL=$RPC TGRID_DEPLOYMENT=$DATA/deployment.json
# No placeholder model: the DAO registers the real ones below.
TGRID_DEVNET_MODEL_ID=0x0000000000000000000000000000000000000000000000000000000000000000 \
TGRID_DEPLOYMENTS_OUT=$DATA/deployment.json node_modules/.bin/forge script contracts/script/Deploy.s.sol \
  --rpc-url "$RPC" --broadcast --slow > "$DATA/deploy.log" 2>&1 || { tail -40 "$DATA/deploy.log"; exit 1; }
echo "    deployed on $RPC: $(jget settlement < "$DATA/deployment.json") (settlement), verifier key $(jget verifyingKeyId < "$DATA/deployment.json")"

step "DAO: register both models by a governance vote (delegate, propose, vote, queue, execute)"
$T dao delegate
$T devnet advance-time 1 >/dev/null
PROPOSAL=$($T --json dao propose register-models --registry "$DATA/registry.json" | jget proposal_id)
echo "    proposal $PROPOSAL"
$T devnet advance-time 2 >/dev/null
$T dao vote "$PROPOSAL"
$T devnet advance-time --past-voting "$PROPOSAL" >/dev/null
$T dao queue "$PROPOSAL"
$T devnet advance-time --past-timelock "$PROPOSAL" >/dev/null
$T dao execute "$PROPOSAL"
$V registry --rpc "$RPC" --deployment "$DATA/deployment.json"

step "provider: fund anvil account 1, start the sequencer service and the provider daemon"
PROVIDER=0x70997970C51812dc3A010C7d01b50e0d17dc79C8
$T token transfer $PROVIDER 2000
SEQ_PORT=$(free_port)
SEQ=http://127.0.0.1:$SEQ_PORT
# The batch closes when it holds all the demo's tasks (or after 15 minutes).
TGRID_SEQUENCER_RPC_URL=$RPC TGRID_SEQUENCER_DEPLOYMENT=$DATA/deployment.json \
TGRID_SEQUENCER_REGISTRY=$DATA/registry.json TGRID_SEQUENCER_DATA_DIR=$DATA/sequencer \
TGRID_SEQUENCER_LISTEN=127.0.0.1:$SEQ_PORT TGRID_SEQUENCER_MAX_BATCH_TASKS=$TASKS \
TGRID_SEQUENCER_MAX_BATCH_AGE_SECS=900 RUST_LOG=${RUST_LOG:-info} \
  $S run > "$DATA/sequencer.out" 2> "$DATA/sequencer.log" &
PIDS+=($!)
for _ in $(seq 600); do
  [[ -s "$DATA/sequencer.out" ]] && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || { tail -20 "$DATA/sequencer.log"; exit 1; }
  sleep 0.5
done
echo "    sequencer API on $SEQ (logs: $DATA/sequencer.log)"
TGRID_PROVIDER_RPC_URL=$RPC TGRID_PROVIDER_DEPLOYMENT=$DATA/deployment.json \
TGRID_PROVIDER_MODELS=$DATA/cnn.tgm,$DATA/mlp.tgm TGRID_PROVIDER_INPUTS_DIR=$DATA/inputs \
TGRID_PROVIDER_SEQUENCER_URL=$SEQ TGRID_PROVIDER_DATA_DIR=$DATA/provider TGRID_PROVIDER_STAKE_TGRID=1000 \
  $P run > >(sed -u 's/^/    [provider] /') 2> "$DATA/provider.log" &
PIDS+=($!)

step "task poster: post $TASKS tasks (inputs: test digits from the calibration sets)"
TASK_IDS=()
for i in $(seq 0 $((TASKS - 1))); do
  m=$([[ $((i % 2)) -eq 0 ]] && echo cnn || echo mlp)
  node -e 'const d=require(process.argv[1]);console.log(JSON.stringify({input_data:[d.input_data[+process.argv[2]]]}))' \
    "./fixtures/$m/calibration.json" "$i" > "$DATA/tasks/$i.json"
  id=$($T --json task post --model "$DATA/$m.tgm" --input "$DATA/tasks/$i.json" --payment 10 --priority-fee 1 \
    --deadline-in 3600 --inputs-dir "$DATA/inputs" | jget task_id)
  echo "    posted task $id ($m)"
  TASK_IDS+=("$id:$m")
done

step "waiting: the provider proves and submits; the sequencer batches, wraps (Groth16) and settles"
echo "    (first run: the Groth16 setup of the INSECURE devnet key takes a few minutes, then it is cached)"
SETTLED=0
for entry in "${TASK_IDS[@]}"; do
  id=${entry%%:*}; m=${entry##*:}
  $T task result "$id" --sequencer "$SEQ" --model "$DATA/$m.tgm" --wait 2400 --out "$DATA/tasks/$id.result.json"
  SETTLED=$((SETTLED + 1))
done

step "auditor: re-verify every settled batch from its calldata"
BATCH_ROOTS=$(for entry in "${TASK_IDS[@]}"; do $V --json task "${entry%%:*}" --rpc "$RPC" --deployment "$DATA/deployment.json" | jget batch_root; done | sort -u)
: > "$DATA/batches.jsonl"
for root in $BATCH_ROOTS; do
  $V batch "$root" --rpc "$RPC" --deployment "$DATA/deployment.json" | sed -n "1,8p"
  $V --json batch "$root" --rpc "$RPC" --deployment "$DATA/deployment.json" >> "$DATA/batches.jsonl"
done

step "provider: the daemon claims the pay of its settled tasks (and their collateral is released)"
CLAIMED=0
for _ in $(seq 120); do
  STAKE=$($T --json stake status $PROVIDER)
  CLAIMED=$(echo "$STAKE" | jget tasks_settled)
  [[ $(echo "$STAKE" | jget claimable_tasks) -eq 0 && $CLAIMED -ge $SETTLED ]] && break
  sleep 0.5
done
$T stake status $PROVIDER | sed 's/^/    /'

step "summary"
node -e '
const fs = require("fs");
const batches = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const settledTasks = batches.reduce((n, b) => n + b.count, 0);
const gas = batches.reduce((n, b) => n + b.gas_used, 0);
const summary = {
  tasks_posted: +process.argv[2],
  tasks_settled: +process.argv[3],
  batches: batches.length,
  batch_verify_gas: Math.max(...batches.map(b => b.verify_gas)),
  settle_gas_per_task: Math.round(gas / settledTasks),
  batch_gas: batches.map(b => b.gas_used),
  insecure_devnet_key: batches.every(b => b.insecure_key),
  provider_tasks_claimed: +process.argv[5],
  wall_seconds: Math.round(Date.now() / 1000) - +process.argv[4],
};
console.log(`${summary.tasks_settled}/${summary.tasks_posted} tasks settled in ${summary.batches} batch(es); verifyProof ${summary.batch_verify_gas} gas, ${summary.settle_gas_per_task} gas per task; ${summary.wall_seconds} s`);
console.log(JSON.stringify(summary));
' "$DATA/batches.jsonl" "$TASKS" "$SETTLED" "$STARTED" "$CLAIMED"
