#!/usr/bin/env bash
# Streaming throughput and peak memory: an agent prints SIZE bytes (default 1 GiB) of output
# through `eden run --quiet` with the `lines` parser and no log file. Two shapes: 100-byte
# lines, and one endless line with no newline (memory must stay bounded either way).
#   bench/stream.sh [SIZE_BYTES]
source "$(dirname "$0")/common.sh"
size=${1:-1073741824}
# The producer is one `cat` of a 1 MiB file named SIZE/1MiB times (page cache: GB/s), so the
# agent is never the bottleneck on a 2-core machine.
line=$(printf 'x%.0s' $(seq 99))
{ yes "$line" || true; } | head -c 1048576 > "$work/chunk-lines"
{ head -c 1048576 /dev/zero || true; } | tr '\0' x > "$work/chunk-nonl"
copies=$(( size / 1048576 ))
cat > "$work/lines.sh" <<AGENT
#!/usr/bin/env bash
cat \$(printf '$work/chunk-lines %.0s' \$(seq $copies))
echo '<promise>COMPLETE</promise>'
AGENT
cat > "$work/one-line.sh" <<AGENT
#!/usr/bin/env bash
cat \$(printf '$work/chunk-nonl %.0s' \$(seq $copies))
echo
echo '<promise>COMPLETE</promise>'
AGENT
chmod +x "$work/lines.sh" "$work/one-line.sh"
cd "$repo"

measure() {
  local name=$1 agent=$2
  # Raw producer speed, for reference: the agent alone into /dev/null.
  local start=$(now_ns); "$agent" > /dev/null; local raw_ns=$(( $(now_ns) - start ))
  start=$(now_ns)
  local rss_kb
  rss_kb=$( { /usr/bin/time -f '%M' "$eden" run --agent cli --binary "$agent" --prompt x \
      --set loop.max_iterations=1 --set loop.idle_timeout=60 --set logging.file=false --quiet 2>&1 >/dev/null; } | tail -1)
  local eden_ns=$(( $(now_ns) - start ))
  awk -v n="$name" -v s="$size" -v e="$eden_ns" -v r="$raw_ns" -v m="$rss_kb" 'BEGIN {
    printf "%-22s eden %6.0f MB/s (producer alone %6.0f MB/s), peak RSS %.1f MB\n",
      n, s / (e / 1e9) / 1e6, s / (r / 1e9) / 1e6, m / 1024 }'
}
echo "streaming $(( size / 1048576 )) MiB through eden run --quiet (lines parser, no log file):"
measure "100-byte lines" "$work/lines.sh"
measure "one line, no newline" "$work/one-line.sh"
