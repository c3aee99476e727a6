#!/usr/bin/env bash
# Installs the NATS server (Debian's nats-server, JetStream included) that the job-queue tests
# start (rollup-sequencer/tests/job_queue.rs) and `tgrid-sequencer worker` uses. Idempotent.
set -euo pipefail
if command -v nats-server >/dev/null 2>&1 || [[ -x /usr/sbin/nats-server ]]; then
    exit 0
fi
SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
    SUDO="sudo"
fi
echo "setup: apt-get install nats-server"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q nats-server >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q nats-server >/dev/null
}
