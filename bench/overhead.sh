#!/usr/bin/env bash
# eden's overhead per run: `eden run` of a one-iteration `cli` agent that commits and prints the
# signal (strategy merge-to-head) against a shell script doing the same git steps by hand
# (worktree, agent, merge, remove worktree, delete branch). Runs alternate, medians compared.
#   bench/overhead.sh [RUNS]   (default 30)
source "$(dirname "$0")/common.sh"
runs=${1:-30}
agent=$work/agent.sh
cat > "$agent" <<'AGENT'
#!/usr/bin/env bash
cat > /dev/null
echo "change $RANDOM$RANDOM" > "file-$RANDOM$RANDOM.txt"
git add -A && git commit -q -m "agent change"
echo "done <promise>COMPLETE</promise>"
AGENT
chmod +x "$agent"
cat > "$work/plan.toml" <<PLAN
name = "bench"
prompt = "make a change"
[agent]
kind = "cli"
binary = "$agent"
[loop]
max_iterations = 1
PLAN

by_hand() {
  local branch=bench/manual-$1 tree=$repo/.eden/worktrees/manual-$1
  git -C "$repo" worktree add -q -b "$branch" "$tree" main
  (cd "$tree" && echo "make a change" | "$agent" | grep -q '<promise>COMPLETE</promise>')
  git -C "$repo" merge -q --no-edit "$branch"
  git -C "$repo" worktree remove "$tree"
  git -C "$repo" branch -q -D "$branch"
}

mkdir -p "$repo/.eden/worktrees"
cd "$repo"
eden_times=() script_times=()
for i in $(seq "$runs"); do
  start=$(now_ns); "$eden" run "$work/plan.toml" --quiet; eden_times+=($(( $(now_ns) - start )))
  start=$(now_ns); by_hand "$i"; script_times+=($(( $(now_ns) - start )))
done
eden_ms=$(printf '%s\n' "${eden_times[@]}" | median | awk '{ printf "%.1f", $1 / 1e6 }')
script_ms=$(printf '%s\n' "${script_times[@]}" | median | awk '{ printf "%.1f", $1 / 1e6 }')
ratio=$(awk -v e="$eden_ms" -v s="$script_ms" 'BEGIN { printf "%.2f", e / s }')
echo "overhead ($runs runs, medians): eden ${eden_ms} ms, shell script ${script_ms} ms, ratio ${ratio}x (target <= 1.5x)"
git -C "$repo" log --oneline | wc -l | xargs echo "commits on main after the benchmark:"
