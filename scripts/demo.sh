#!/usr/bin/env bash
# `make demo`: every role end to end on a local devnet.
#   1. compile the bundled ONNX models (cnn, mlp) to int8 models and circuits; list them in a registry
#   2. start anvil and deploy the contracts (verifier: the INSECURE devnet Groth16 key's)
#   3. DAO: delegate, propose the models' registration, vote, queue in the timelock, execute
#   4. fund the provider; start the sequencer service (with its order relay) and the provider
#      daemon (it bonds)
#   5. a task poster funds one deposit book and signs 8 orders, published on the relay (nothing
#      on-chain per order); the last one is private (its input sealed to the provider's announced
#      key, its output encrypted back to the poster by the proof, a zero-knowledge proof); the provider accepts
#      them by signature, proves and submits them; the
#      sequencer aggregates them into one batch, wraps it into one Groth16 proof and settles it on
#      the TaskMarket in one transaction
#   6. the poster fetches every output and checks it against the settled commitment; an
#      auditor re-verifies the settled batch from calldata
#   7. the provider daemon withdraws its earnings
# The last stdout line is one JSON object (tasks_posted, tasks_settled, batches, batch_verify_gas,
# settle_gas_per_task, gas of the deposit and the withdrawal, task_life_gas_per_task,
# wall_seconds, ...). Data lives under ./.tgrid; the
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
source scripts/lib.sh
trap stop_all EXIT
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
# The mlp's private mode too (its own circuit, under the model's private id).
$S registry add "$DATA/mlp.tgm" --private --registry "$DATA/registry.json" >/dev/null
echo "    registry root $(jget root < "$DATA/registry.json")"

step "devnet: anvil and the contracts (Groth16 verifier for the INSECURE devnet key)"
start_anvil "$DATA/anvil.log"
export TGRID_RPC_URL=$RPC TGRID_DEPLOYMENT=$DATA/deployment.json
# No placeholder model: the DAO registers the real ones below.
TGRID_DEVNET_MODEL_ID=0x0000000000000000000000000000000000000000000000000000000000000000 \
TGRID_DEPLOYMENTS_OUT=$DATA/deployment.json node_modules/.bin/forge script contracts/script/Deploy.s.sol \
  --rpc-url "$RPC" --broadcast --slow > "$DATA/deploy.log" 2>&1 || { tail -40 "$DATA/deploy.log"; exit 1; }
echo "    deployed on $RPC: TaskMarket $(jget market < "$DATA/deployment.json"), verifier key $(jget verifyingKeyId < "$DATA/deployment.json")"

step "DAO: register both models by a governance vote (delegate, propose, vote, queue, execute)"
$T dao delegate
$T devnet advance-time 1 >/dev/null
PROPOSAL=$($T --json dao propose register-models --registry "$DATA/registry.json" | jget proposal_id)
echo "    proposal $PROPOSAL"
$T devnet advance-time --voting-open "$PROPOSAL" >/dev/null
$T dao vote "$PROPOSAL"
$T devnet advance-time --past-voting "$PROPOSAL" >/dev/null
$T dao queue "$PROPOSAL"
$T devnet advance-time --past-timelock "$PROPOSAL" >/dev/null
$T dao execute "$PROPOSAL"
$V registry --rpc "$RPC" --deployment "$DATA/deployment.json"

step "provider: fund anvil account 1, start the sequencer service (and its order relay) and the provider daemon"
PROVIDER=0x70997970C51812dc3A010C7d01b50e0d17dc79C8
$T token transfer $PROVIDER 2000
SEQ_PORT=$(free_port)
SEQ=http://127.0.0.1:$SEQ_PORT
# The batch closes when it holds all the demo's tasks (or after 15 minutes).
TGRID_SEQUENCER_RPC_URL=$RPC TGRID_SEQUENCER_DEPLOYMENT=$DATA/deployment.json \
TGRID_SEQUENCER_REGISTRY=$DATA/registry.json TGRID_SEQUENCER_DATA_DIR=$DATA/sequencer \
TGRID_SEQUENCER_LISTEN=127.0.0.1:$SEQ_PORT TGRID_SEQUENCER_MAX_BATCH_TASKS=$TASKS \
TGRID_SEQUENCER_MAX_BATCH_AGE_SECS=900 TGRID_SEQUENCER_INSECURE_DEVNET_KEY=true RUST_LOG=${RUST_LOG:-info} \
  $S run > "$DATA/sequencer.out" 2> "$DATA/sequencer.log" &
PIDS+=($!)
for _ in $(seq 600); do
  [[ -s "$DATA/sequencer.out" ]] && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || { tail -20 "$DATA/sequencer.log"; exit 1; }
  sleep 0.5
done
echo "    sequencer API and order relay on $SEQ (logs: $DATA/sequencer.log)"
TGRID_PROVIDER_RPC_URL=$RPC TGRID_PROVIDER_DEPLOYMENT=$DATA/deployment.json \
TGRID_PROVIDER_MODELS=$DATA/cnn.tgm,$DATA/mlp.tgm TGRID_PROVIDER_INPUTS_DIR=$DATA/inputs \
TGRID_PROVIDER_SEQUENCER_URL=$SEQ TGRID_PROVIDER_DATA_DIR=$DATA/provider TGRID_PROVIDER_STAKE_TGRID=1000 \
TGRID_PROVIDER_WRAP_KEY=insecure-devnet \
  $P run > >(sed -u 's/^/    [provider] /') 2> "$DATA/provider.log" &
PROVIDER_PID=$!
PIDS+=($PROVIDER_PID)

export TGRID_STATE_DIR=$DATA/poster
step "task poster: one deposit book for $TASKS orders of at most 10 TGRID, then $TASKS signed orders on the relay"
DEPOSIT=$($T --json deposit add $((TASKS * 10)) --per-order 10)
echo "    book $(echo "$DEPOSIT" | jget book): $(echo "$DEPOSIT" | jget capacity) orders funded with $(echo "$DEPOSIT" | jget funded) TGRID (tx $(echo "$DEPOSIT" | jget tx))"
ORDERS=()
for i in $(seq 0 $((TASKS - 1))); do
  m=$([[ $((i % 2)) -eq 0 ]] && echo cnn || echo mlp)
  node -e 'const d=require(process.argv[1]);console.log(JSON.stringify({input_data:[d.input_data[+process.argv[2]]]}))' \
    "./fixtures/$m/calibration.json" "$i" > "$DATA/tasks/$i.json"
  PRIVATE=()
  if [[ $i -eq $((TASKS - 1)) && $m == mlp ]]; then
    # A private order names its provider and seals the input to the key it announced on the relay.
    wait_for_sealing_key "$SEQ" "$PROVIDER"
    PRIVATE=(--private --provider "$PROVIDER")
  fi
  hash=$($T --json order post --model "$DATA/$m.tgm" --input "$DATA/tasks/$i.json" --payment 10 \
    --deadline-in 3600 --inputs-dir "$DATA/inputs" --relay "$SEQ" "${PRIVATE[@]}" | jget order_hash)
  echo "    signed and published order $hash ($m${PRIVATE:+, private: input sealed to the provider})"
  ORDERS+=("$hash:$m")
done

step "waiting: the provider accepts, proves and submits; the sequencer batches, wraps (Groth16) and settles"
echo "    (first run: the Groth16 setup of the INSECURE devnet key takes a few minutes, then it is cached)"
SETTLED=0
for entry in "${ORDERS[@]}"; do
  hash=${entry%%:*}; m=${entry##*:}
  $T order result "$hash" --relay "$SEQ" --model "$DATA/$m.tgm" --wait 2400 --out "$DATA/tasks/$hash.result.json"
  SETTLED=$((SETTLED + 1))
done

step "auditor: re-verify every settled batch from its calldata"
BATCH_ROOTS=$(for entry in "${ORDERS[@]}"; do $V --json task "${entry%%:*}" --rpc "$RPC" --deployment "$DATA/deployment.json" --relay "$SEQ" | jget batch_root; done | sort -u)
: > "$DATA/batches.jsonl"
for root in $BATCH_ROOTS; do
  $V batch "$root" --rpc "$RPC" --deployment "$DATA/deployment.json" | sed -n "1,8p"
  $V --json batch "$root" --rpc "$RPC" --deployment "$DATA/deployment.json" >> "$DATA/batches.jsonl"
done

step "provider: the daemon withdraws its earnings"
PAID=0
for _ in $(seq 120); do
  STAKE=$($T --json stake status $PROVIDER)
  PAID=$(echo "$STAKE" | jget tasks_settled)
  [[ $PAID -ge $SETTLED && $(echo "$STAKE" | jget earnings) == "0" ]] && break
  sleep 0.5
done
$T stake status $PROVIDER | sed 's/^/    /'
# The services stop before the summary, so it stays the last line.
kill "$PROVIDER_PID" 2>/dev/null || true
wait "$PROVIDER_PID" 2>/dev/null || true
WITHDRAW_GAS=$(node -e '
const [rpc, market, provider] = process.argv.slice(1);
const call = (method, params) => fetch(rpc, {method: "POST", headers: {"content-type": "application/json"},
  body: JSON.stringify({jsonrpc: "2.0", id: 1, method, params})}).then(r => r.json()).then(r => r.result);
(async () => {
  // EarningsWithdrawn(address indexed account, uint256 amount)
  const topic = "0x" + require("js-sha3").keccak256("EarningsWithdrawn(address,uint256)");
  const logs = await call("eth_getLogs", [{address: market, fromBlock: "0x0",
    topics: [topic, "0x" + provider.slice(2).toLowerCase().padStart(64, "0")]}]);
  let gas = 0;
  for (const l of logs) gas += parseInt((await call("eth_getTransactionReceipt", [l.transactionHash])).gasUsed, 16);
  console.log(gas);
})();' "$RPC" "$(jget market < "$DATA/deployment.json")" "$PROVIDER")
DEPOSIT_GAS=$(echo "$DEPOSIT" | jget gas)

step "summary"
node -e '
const fs = require("fs");
const batches = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const settledTasks = batches.reduce((n, b) => n + b.count, 0);
const gas = batches.reduce((n, b) => n + b.gas_used, 0);
const [deposit, withdraw] = [+process.argv[6], +process.argv[7]];
const summary = {
  tasks_posted: +process.argv[2],
  tasks_settled: +process.argv[3],
  batches: batches.length,
  batch_verify_gas: Math.max(...batches.map(b => b.verify_gas)),
  batch_gas: batches.map(b => b.gas_used),
  settle_gas_per_task: Math.round(gas / settledTasks),
  deposit_gas: deposit,
  withdraw_gas: withdraw,
  // Everything this run sent on-chain for its tasks (one book, one settlement, one withdrawal),
  // per task. At 256 tasks a batch the same costs 9.8k gas a task (docs/BENCHMARKS.md).
  task_life_gas_per_task: Math.round((deposit + gas + withdraw) / settledTasks),
  insecure_devnet_key: batches.every(b => b.insecure_key),
  provider_tasks_paid: +process.argv[5],
  wall_seconds: Math.round(Date.now() / 1000) - +process.argv[4],
};
console.log(`${summary.tasks_settled}/${summary.tasks_posted} tasks settled in ${summary.batches} batch(es); verifyProof ${summary.batch_verify_gas} gas; on-chain gas per task: ${summary.settle_gas_per_task} to settle, ${summary.task_life_gas_per_task} with the deposit and the withdrawal (${summary.tasks_settled} tasks a batch); ${summary.wall_seconds} s`);
console.log(JSON.stringify(summary));
' "$DATA/batches.jsonl" "$TASKS" "$SETTLED" "$STARTED" "$PAID" "$DEPOSIT_GAS" "$WITHDRAW_GAS"
