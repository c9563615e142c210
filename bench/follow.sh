#!/usr/bin/env bash
# Following a pull request whose CI never finishes, at the default poll: how many requests eden
# sends over the whole `timeout` (most of them conditional), and its CPU and memory meanwhile.
# Two hours at `poll = "30s"` are played a hundred times faster (`poll = "300ms"`, `timeout =
# "72s"`; the backoff cap is ten polls, 5 min at the default, so the requests are those of the
# real two hours). Then one real minute and a half at `poll = "30s"`, for eden's CPU while it
# waits. Each against the same run with `follow = false`, whose CPU is taken off.
#   bench/follow.sh
source "$(dirname "$0")/common.sh"
bare=$work/forge/octo/hello.git
git clone -q --bare "$repo" "$bare"
git -C "$repo" remote add origin "$bare"
python3 "$root/bench/forge.py" "$bare" > "$work/port" &
forge=$!
trap 'kill $forge 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
cat > "$work/agent.sh" <<'AGENT'
#!/usr/bin/env bash
cat > /dev/null
date +%s%N > "change-$RANDOM.txt" && git add -A && git commit -q -m change
echo "<promise>COMPLETE</promise>"
AGENT
chmod +x "$work/agent.sh"
plan() { # FOLLOW POLL TIMEOUT
  cat > "$work/plan.toml" <<PLAN
name = "follow"
prompt = "change"
[agent]
kind = "cli"
binary = "$work/agent.sh"
[loop]
max_iterations = 1
[forge]
api_url = "http://127.0.0.1:$port"
repository = "octo/hello"
[pull_request]
follow = $1
poll = "$2"
timeout = "$3"
PLAN
}
stats() { curl -s "http://127.0.0.1:$port/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["requests"], s["not_modified"])'; }
measure() { # prints "user+sys seconds, max RSS KB"
  (cd "$repo" && GITHUB_TOKEN=ghs_bench_token_0000 /usr/bin/time -f "%U %S %M" -o "$work/time" "$eden" run "$work/plan.toml" --quiet >/dev/null 2>&1) || true
  tail -1 "$work/time" | awk '{ printf "%.3f %d\n", $1 + $2, $3 }'
}
plan false 300ms 72s
read -r base_cpu base_rss < <(measure)
read -r before _ < <(stats)
plan true 300ms 72s
read -r cpu rss < <(measure)
read -r after not_modified < <(stats)
requests=$((after - before))
plan true 30s 90s
read -r wait_cpu wait_rss < <(measure)
echo "a followed pull request whose CI never finishes, 2 h at the default poll (played 100x faster):"
echo "  $requests requests to the forge, $not_modified of them answered 304 Not Modified (goal: < 300, most conditional)"
awk -v c="$cpu" -v b="$base_cpu" -v r="$rss" 'BEGIN { printf "  eden: %.2f s CPU for the whole follow (the run itself taken off), peak RSS %.1f MB\n", c - b, r / 1024 }'
awk -v c="$wait_cpu" -v b="$base_cpu" -v r="$wait_rss" 'BEGIN { printf "  waiting at the real poll (90 s): %.3f s CPU, %.2f s per hour; peak RSS %.1f MB (goal: < 1 s per hour, < 15 MB)\n", c - b, (c - b) * 40, r / 1024 }'
