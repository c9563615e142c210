#!/usr/bin/env bash
# `eden top` watching RUNS live runs (20 by default) for SECS seconds (60): its CPU (utime +
# stime from /proc, as a share of one core) and its peak RSS (VmHWM). Each run's agent prints
# five lines a second, so every log grows the whole time and the dashboard redraws their last
# lines. The floor, measured the same way in the same session: `eden top` with no run at all.
# Needs tmux.
#   bench/top.sh [RUNS] [SECS]
source "$(dirname "$0")/common.sh"
runs=${1:-20}
secs=${2:-60}
cd "$repo"
ticker_manifest 0.2

# Ticks of CPU eden top used, and its peak RSS, over $secs seconds; $1 names the tmux socket.
measure() {
  local socket=$1
  tmux -L "$socket" -f /dev/null new-session -d -s top -x 120 -y 40 "$eden top"
  sleep 5
  local pid
  pid=$(pgrep -f "^$eden top" | head -1)
  local ticks_per_sec
  ticks_per_sec=$(getconf CLK_TCK)
  local before after
  before=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  sleep "$secs"
  after=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  local hwm
  hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
  tmux -L "$socket" capture-pane -p -t top | head -3 >&2
  tmux -L "$socket" send-keys -t top q
  sleep 0.5
  tmux -L "$socket" kill-server 2>/dev/null || true
  awk -v t=$((after - before)) -v hz="$ticks_per_sec" -v s="$secs" -v kb="$hwm" \
    'BEGIN { printf "CPU %.2f%% of a core (%.2f s in %d s), peak RSS %.1f MB\n", 100 * t / hz / s, t / hz, s, kb / 1024 }'
}

echo "floor: eden top with no run"
measure eden-bench-top-floor

pids=()
for _ in $(seq "$runs"); do
  "$eden" run "$work/ticker.toml" --quiet > /dev/null 2>&1 &
  pids+=($!)
done
sleep 3
echo "eden top watching $runs live runs for $secs s"
measure eden-bench-top
kill -INT "${pids[@]}" 2>/dev/null || true
wait "${pids[@]}" 2>/dev/null || true
