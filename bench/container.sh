#!/usr/bin/env bash
# Container overhead, for docker and podman: eden's per-iteration time in a running container
# (20 iterations of an agent that prints one line) against a raw `ENGINE exec` of the same
# command in a container from the same image, medians side by side; and the time from the start
# of `eden run` to the first iteration (container start included).
# Needs the test image `localhost/eden-test:git` (built by `cargo test containers`).
#   bench/container.sh [ENGINE...]   (default: docker podman)
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:git
cmd='cat >/dev/null; echo working'
cd "$repo"
engines=("$@")
[ ${#engines[@]} -eq 0 ] && engines=(docker podman)
for engine in "${engines[@]}"; do
  if ! "$engine" image inspect "$image" >/dev/null 2>&1; then
    echo "$engine: image $image missing (run \`cargo test containers\` once to build it)"; continue
  fi
  pull=(); [ "$engine" = podman ] && pull=(--pull=never)
  "$engine" run -d --init --name eden-bench-raw "${pull[@]}" "$image" tail -f /dev/null >/dev/null
  raw=()
  for _ in $(seq 20); do
    start=$(now_ns); echo prompt | "$engine" exec -i eden-bench-raw sh -c "$cmd" >/dev/null; raw+=($(( $(now_ns) - start )))
  done
  "$engine" rm -f eden-bench-raw >/dev/null
  cat > "$work/$engine.toml" <<PLAN
name = "bench"
prompt = "go"
[agent]
kind = "cli"
binary = "sh"
args = ["-c", "$cmd"]
[sandbox]
kind = "$engine"
image = "$image"
[loop]
max_iterations = 20
require_completion = false
PLAN
  "$eden" run "$work/$engine.toml" --quiet --json > "$work/$engine.json"
  python3 - "$work/$engine.json" "${raw[@]}" <<'PY'
import json, statistics, sys
from datetime import datetime
record = json.load(open(sys.argv[1]))
raw = statistics.median(int(n) for n in sys.argv[2:]) / 1e6
eden = statistics.median(i["duration_ms"] for i in record["iterations"])
parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
first = (parse(record["iterations"][0]["started_at"]) - parse(record["started_at"])).total_seconds() * 1000
print(f"{record['sandbox']}: per iteration eden {eden:.0f} ms vs raw exec {raw:.0f} ms = {eden / raw:.2f}x (target <= 1.2x); "
      f"start to first iteration {first:.0f} ms")
PY
done
