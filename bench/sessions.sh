#!/usr/bin/env bash
# `eden sessions list` over many run records: one real run (a `cli` agent speaking Claude's stream
# with five tool calls) copied COUNT times (default 10,000) under new ids, then the listing timed
# (median of 5, table and --json).
#   bench/sessions.sh [COUNT]
source "$(dirname "$0")/common.sh"
count=${1:-10000}
cat > "$work/agent.sh" <<'AGENT'
#!/usr/bin/env bash
cat > /dev/null
echo '{"type":"system","subtype":"init","session_id":"bench-session"}'
for i in 1 2 3 4 5; do
  echo '{"type":"assistant","message":{"id":"m'$i'","content":[{"type":"tool_use","id":"t'$i'","name":"Bash","input":{"command":"cargo test --workspace"}}]}}'
done
echo '{"type":"assistant","message":{"id":"m9","content":[{"type":"text","text":"done <promise>COMPLETE</promise>"}]}}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"bench-session","usage":{"input_tokens":1200,"output_tokens":300},"total_cost_usd":0.01}'
AGENT
chmod +x "$work/agent.sh"
cd "$repo"
"$eden" run --quiet --agent cli --binary "$work/agent.sh" --set agent.parser=claude-code --prompt "bench" \
  --set loop.max_iterations=1 --name bench > /dev/null
record=$(ls .eden/runs/*.json | head -1)
id=$(basename "$record" .json)
python3 - "$record" "$id" "$count" <<'PY'
import sys, os
path, old, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(path).read()
runs = os.path.dirname(path)
for i in range(count):
    new = "20261101-%06d-%06x" % (i // 60 * 100 + i % 60, i)
    open(os.path.join(runs, new + ".json"), "w").write(text.replace(old, new))
PY
echo "records: $(ls .eden/runs | wc -l), $(du -sh .eden/runs | cut -f1), one is $(stat -c %s "$record") bytes"
for args in "" "--json"; do
  times=$(for _ in 1 2 3 4 5; do
    start=$(now_ns); "$eden" sessions list $args > /dev/null; echo $(( ($(now_ns) - start) / 1000000 ))
  done | median)
  echo "eden sessions list $args: ${times} ms (median of 5)"
done
