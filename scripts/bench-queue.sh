#!/usr/bin/env bash
# Aggregation on the job queue against in-process: starts a throwaway NATS JetStream broker
# (fresh store, so no outcome of an earlier run is reused), then `tgrid-sequencer bench` proves
# the same batch in-process and on WORKERS worker processes it starts, checks both roots are
# equal and prints one JSON object (the queue's figures under "queue"). Further arguments go to
# `bench` (e.g. --wrap-insecure-devnet-key: the workers also hold the wrap key and one of them
# wraps the queued batch).
# Usage: scripts/bench-queue.sh SEQUENCER_BINARY [TASKS] [WORKERS] [BENCH ARGS...]
set -euo pipefail
bin=${1:?usage: scripts/bench-queue.sh SEQUENCER_BINARY [TASKS] [WORKERS]}
tasks=${2:-16}
workers=${3:-2}
shift $(( $# < 3 ? $# : 3 ))
nats=$(command -v nats-server || echo /usr/sbin/nats-server)
store=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
"$nats" -js -sd "$store" -a 127.0.0.1 -p "$port" >"$store/nats.log" 2>&1 &
broker=$!
trap 'kill "$broker" 2>/dev/null; wait "$broker" 2>/dev/null || true; rm -rf "$store"' EXIT
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
"$bin" bench --tasks "$tasks" --queue "nats://127.0.0.1:$port" --workers "$workers" "$@"
