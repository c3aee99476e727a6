# Shared by scripts/demo.sh and scripts/bench-*.sh (sourced). Node is there for Foundry anyway.

# One field of the JSON object on stdin (dotted path; the last line if there are several).
jget() {
  node -e 'let d="";process.stdin.on("data",c=>d+=c).on("end",()=>{let v;try{v=JSON.parse(d)}catch{v=JSON.parse(d.trim().split("\n").pop())}for(const k of process.argv[1].split("."))v=v[k];console.log(typeof v==="object"?JSON.stringify(v):v)})' "$1"
}

# Waits (up to 2 minutes) until provider $2 has announced its sealing key on the relay $1.
wait_for_sealing_key() {
  node -e '
const [relay, provider] = process.argv.slice(1);
(async () => {
  for (let i = 0; i < 240; i++) {
    const r = await fetch(`${relay}/v1/providers/${provider}/sealing-key`).catch(() => null);
    if (r && r.ok) return;
    await new Promise(ok => setTimeout(ok, 500));
  }
  console.error(`provider ${provider} announced no sealing key on ${relay}`);
  process.exit(1);
})();' "$1" "$2"
}

# A free TCP port on loopback.
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# Starts anvil on a free port, logging to $1; sets RPC and appends its pid to PIDS.
start_anvil() {
  local port
  port=$(free_port)
  RPC=http://127.0.0.1:$port
  node_modules/.bin/anvil --port "$port" --silent > "$1" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do
    node -e 'fetch(process.argv[1],{method:"POST",headers:{"content-type":"application/json"},body:JSON.stringify({jsonrpc:"2.0",id:1,method:"eth_chainId",params:[]})}).then(()=>process.exit(0),()=>process.exit(1))' "$RPC" && return
    sleep 0.2
  done
  echo "anvil did not start (log: $1)" >&2
  return 1
}

# Kills the processes in PIDS (the scripts' EXIT trap).
stop_all() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
