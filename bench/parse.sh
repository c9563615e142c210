#!/usr/bin/env bash
# Parsing throughput and peak memory: a 200 MB Claude stream-json stream (the recorded
# write-and-commit run, repeated with distinct message ids: about 100,000 messages) through `eden run --quiet` with a `cli` agent that cats it and
# `parser = "claude-code"`.
#   bench/parse.sh [SIZE_MB]   (default 200)
source "$(dirname "$0")/common.sh"
size_mb=${1:-200}
fixture=$root/tests/fixtures/agent-streams/claude-write_bash.jsonl
# Everything but the final result line (which carries the signal), repeated to the size, each
# copy's messages with ids of their own, as a long session's are (a parser that keeps usage per
# message would be flattered by ids that repeat).
python3 - "$fixture" "$work/stream.jsonl" "$size_mb" <<'PY'
import sys
fixture, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1_000_000
lines = open(fixture).read().splitlines(keepends=True)
body, last = lines[:-1], lines[-1]
written, copy = 0, 0
with open(path, "w") as out:
    while written < size:
        copy += 1
        text = "".join(body).replace('"id":"msg_', f'"id":"msg_{copy:08d}_')
        out.write(text)
        written += len(text)
    out.write(last)
PY
bytes=$(wc -c < "$work/stream.jsonl")
agent_printing "$work/stream.jsonl"
cd "$repo"
sync
runs=() rss=()
for _ in 1 2 3; do
  start=$(now_ns)
  rss+=($( { /usr/bin/time -f '%M' "$eden" run --agent cli --binary "$work/agent.sh" --prompt x \
      --set agent.parser=claude-code --set loop.max_iterations=1 --quiet 2>&1 >/dev/null; } | tail -1))
  runs+=($(( $(now_ns) - start )))
done
elapsed=$(printf '%s\n' "${runs[@]}" | median)
rss_kb=$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)
awk -v b="$bytes" -v e="$elapsed" -v m="$rss_kb" 'BEGIN {
  printf "claude stream-json, %.0f MB (median of 3): eden %.0f MB/s, peak RSS %.1f MB (targets: >= 200 MB/s, < 50 MB)\n",
    b / 1e6, b / (e / 1e9) / 1e6, m / 1024 }'
