#!/usr/bin/env bash
# Installs the pinned Solidity toolchain from the npm registry (package.json / package-lock.json):
# forge and anvil 1.7.1, solc-js, OpenZeppelin Contracts, forge-std, snarkjs, circom2.
# Idempotent: runs `npm ci` only when node_modules is missing or older than package-lock.json.
# Afterwards everything works offline:  node_modules/.bin/forge test
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

STAMP="node_modules/.tgrid-lock.sha256"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [[ ! -x node_modules/.bin/forge || "$want" != "$have" ]]; then
    echo "setup: npm ci (node_modules missing or stale)"
    npm ci --no-audit --no-fund --loglevel=error
    echo "$want" > "$STAMP"
fi

chmod +x scripts/foundry/solc
forge_version="$(node_modules/.bin/forge --version | head -n1)"
case "$forge_version" in
    *"1.7.1"*) ;;
    *) echo "setup: unexpected forge version: $forge_version" >&2; exit 1 ;;
esac
solc_version="$(scripts/foundry/solc --version | tail -n1)"
echo "setup: $forge_version; solc shim: $solc_version"
