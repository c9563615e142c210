#!/usr/bin/env bash
# `eden mcp`: the latency of `tools/call status` (every live run) with RUNS live runs (50 by
# default), CALLS calls one after another (200), p50 and p95, and the server's peak RSS; the
# floor, in the same session: the same calls with no run at all. Each run's agent prints a line
# a second, so records and logs change while it is asked.
#   bench/mcp.sh [RUNS] [CALLS]
source "$(dirname "$0")/common.sh"
runs=${1:-50}
calls=${2:-200}
cd "$repo"
ticker_manifest 1

# p50 and p95 (ms) of CALLS `status` calls, and the server's peak RSS.
measure() {
  python3 - "$eden" "$calls" "$1" <<'PY'
import json, subprocess, sys, time
eden, calls, expect = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
server = subprocess.Popen([eden, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
def ask(n, method, params):
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n")
    server.stdin.flush()
    return json.loads(server.stdout.readline())
ask(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
times, live = [], 0
for n in range(1, calls + 1):
    start = time.perf_counter()
    answer = ask(n, "tools/call", {"name": "status", "arguments": {}})
    times.append((time.perf_counter() - start) * 1000)
    live = len(answer["result"]["structuredContent"]["runs"])
hwm = next(int(line.split()[1]) for line in open(f"/proc/{server.pid}/status") if line.startswith("VmHWM"))
server.stdin.close()
server.wait()
times.sort()
print(f"{live} live runs seen (expected {expect}); status p50 {times[len(times) // 2]:.1f} ms, "
      f"p95 {times[int(len(times) * 0.95)]:.1f} ms, fastest {times[0]:.1f} ms; peak RSS {hwm / 1024:.1f} MB")
PY
}

echo "floor: no run"
measure 0
pids=()
for _ in $(seq "$runs"); do
  "$eden" run "$work/ticker.toml" --quiet > /dev/null 2>&1 &
  pids+=($!)
done
# Until every run is iterating.
for _ in $(seq 120); do
  going=$({ grep -l '"phase": "iterating"' "$repo"/.eden/runs/*.json 2>/dev/null || true; } | wc -l)
  [ "$going" -ge "$runs" ] && break
  sleep 0.5
done
echo "$runs live runs"
measure "$runs"
kill -INT "${pids[@]}" 2>/dev/null || true
wait "${pids[@]}" 2>/dev/null || true
