#!/usr/bin/env bash
# The display under a stream of large tool results: a ~100 MB Claude stream-json stream where
# every tool call's result is 1-7 KB (as `Read` and `Bash` results are), each step a message of
# its own id (text and tool call, usage growing: over 20,000 messages, a long session), through `eden run`
# NOT quiet, the plain display written to a file, against the same run with `--quiet`.
#   bench/display.sh [SIZE_MB]   (default 100)
source "$(dirname "$0")/common.sh"
size_mb=${1:-100}
python3 - "$work/stream.jsonl" "$size_mb" <<'PY'
import json, random, sys
path, size = sys.argv[1], int(sys.argv[2]) * 1_000_000
random.seed(7)
session = "94113680-5d7e-4fed-bcfe-07b6d0cdda4f"
def usage(n, output):
    return {"input_tokens": 12 + n % 40, "output_tokens": output, "cache_creation_input_tokens": 200 if n % 9 == 0 else 0,
            "cache_read_input_tokens": 20_000 + 37 * n}
def assistant(n, content, output):
    # One message per step, with an id of its own, its content blocks on lines of their own that
    # repeat the id with the output tokens so far: the shape of a real session.
    return {"type": "assistant", "message": {"id": f"msg_{n:024x}", "type": "message", "role": "assistant", "model": "claude-opus-4-8",
            "content": content, "stop_reason": None, "usage": usage(n, output)}, "parent_tool_use_id": None, "session_id": session}
written, n = 0, 0
with open(path, "w") as out:
    while written < size:
        n += 1
        tool = f"toolu_{n:020d}"
        lines = [
            assistant(n, [{"type": "text", "text": f"Step {n}: reading the next file to see what it does."}], 14),
            assistant(n, [{"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": f"cat src/module_{n}.rs", "description": "Read a module"}}], 61),
            {"type": "user", "message": {"role": "user", "content": [{"tool_use_id": tool, "type": "tool_result",
             "content": "\n".join(f"    let value_{i} = compute({i}, \"{'x' * 40}\");" for i in range(random.randint(16, 112)))}]},
             "parent_tool_use_id": None, "session_id": session},
        ]
        for line in lines:
            text = json.dumps(line, separators=(",", ":")) + "\n"
            out.write(text)
            written += len(text)
    out.write(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "<promise>COMPLETE</promise>",
              "session_id": session, "usage": usage(n, 0)}) + "\n")
print(f"{n} messages", file=sys.stderr)
PY
bytes=$(wc -c < "$work/stream.jsonl")
agent_printing "$work/stream.jsonl"
cd "$repo"
sync
measure() { # $1: extra flag (or empty); prints "elapsed_ns rss_kb lines"
  local runs=() rss=()
  for _ in 1 2 3; do
    local start=$(now_ns)
    rss+=($( { /usr/bin/time -f '%M' "$eden" run --agent cli --binary "$work/agent.sh" --prompt x \
        --set agent.parser=claude-code --set loop.max_iterations=1 --set logging.file=false $1 \
        2>"$work/display.txt" >/dev/null; } 2>&1; tail -1 "$work/display.txt"))
    runs+=($(( $(now_ns) - start )))
  done
  echo "$(printf '%s\n' "${runs[@]}" | median) $(printf '%s\n' "${rss[@]}" | sort -n | tail -1) $(wc -l < "$work/display.txt")"
}
read -r shown shown_rss shown_lines < <(measure "")
read -r quiet quiet_rss _ < <(measure "--quiet")
awk -v b="$bytes" -v e="$shown" -v m="$shown_rss" -v l="$shown_lines" -v q="$quiet" -v qm="$quiet_rss" 'BEGIN {
  printf "claude stream-json with 1-7 KB tool results, %.0f MB (median of 3):\n", b / 1e6
  printf "  display on (plain, to a file, %d lines): %.0f MB/s, peak RSS %.1f MB (targets: >= 450 MB/s, <= 12 MB)\n", l, b / (e / 1e9) / 1e6, m / 1024
  printf "  --quiet: %.0f MB/s, peak RSS %.1f MB\n", b / (q / 1e9) / 1e6, qm / 1024 }'
