#!/usr/bin/env bash
# Starts a throwaway anvil on 127.0.0.1, deploys the TensorGrid contracts with
# contracts/script/Deploy.s.sol and writes their addresses to contracts/deployments/31337.json
# (override with TGRID_DEPLOYMENTS_OUT). Stops the anvil it started unless KEEP_ANVIL=1.
# The verifier is the INSECURE devnet Groth16 key: local devnets only.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PORT="${ANVIL_PORT:-8545}"
RPC="http://127.0.0.1:${PORT}"

node_modules/.bin/anvil --host 127.0.0.1 --port "$PORT" --silent &
ANVIL_PID=$!
cleanup() {
    if [[ "${KEEP_ANVIL:-0}" != "1" ]]; then kill "$ANVIL_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

for _ in $(seq 1 50); do
    if node -e "fetch('$RPC',{method:'POST',headers:{'content-type':'application/json'},body:JSON.stringify({jsonrpc:'2.0',id:1,method:'eth_chainId',params:[]})}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"; then
        break
    fi
    sleep 0.2
done

node_modules/.bin/forge script contracts/script/Deploy.s.sol --rpc-url "$RPC" --broadcast "$@"
echo "deploy-local: addresses in ${TGRID_DEPLOYMENTS_OUT:-contracts/deployments/31337.json}"
if [[ "${KEEP_ANVIL:-0}" == "1" ]]; then echo "deploy-local: anvil (pid $ANVIL_PID) left running on $RPC"; fi
