#!/usr/bin/env bash
# Several runs at once: N runs of the overhead job (a one-iteration `cli` agent that commits,
# merge-to-head) as one `eden run m1.toml ... mN.toml --jobs N` against N `eden run`s one after
# the other. Wall time, and the peak of the summed RSS of every eden process (the coordinator
# and each run's eden, sampled every 20 ms).
# Then the same with an agent that works for 1 s, as real agents work for minutes: there the
# runs overlap.
#   bench/parallel.sh [N...]   (default 1 4 16)
source "$(dirname "$0")/common.sh"
sizes=("${@:-1 4 16}")
read -r -a sizes <<< "${sizes[*]}"
agent=$work/agent.sh
cat > "$agent" <<'AGENT'
#!/usr/bin/env bash
cat > /dev/null
sleep "${AGENT_SECONDS:-0}"
echo "change $RANDOM$RANDOM" > "file-$RANDOM$RANDOM$RANDOM.txt"
git add -A && git commit -q -m "agent change"
echo "done <promise>COMPLETE</promise>"
AGENT
chmod +x "$agent"
for i in $(seq 0 15); do
  printf 'name = "bench%s"\nprompt = "make a change"\n[agent]\nkind = "cli"\nbinary = "%s"\n[loop]\nmax_iterations = 1\n' \
    "$i" "$agent" > "$work/m$i.toml"
done
cd "$repo"

one_after_another() { for i in $(seq 0 $(( $1 - 1 ))); do "$eden" run "$work/m$i.toml" --quiet; done; }
all_at_once() {
  local manifests=()
  for i in $(seq 0 $(( $1 - 1 ))); do manifests+=("$work/m$i.toml"); done
  "$eden" run "${manifests[@]}" --jobs "$1" --quiet
}

table() {
  printf '%4s  %14s  %14s  %8s  %16s  %16s\n' N sequential parallel speedup "peak RSS seq" "peak RSS par"
  for n in "${sizes[@]}"; do
    read -r seq_ns seq_kb < <(sampled one_after_another "$n")
    read -r par_ns par_kb < <(sampled all_at_once "$n")
    awk -v n="$n" -v s="$seq_ns" -v p="$par_ns" -v sk="$seq_kb" -v pk="$par_kb" 'BEGIN {
      printf "%4d  %12.0f ms  %12.0f ms  %7.2fx  %13.1f MB  %13.1f MB\n", n, s / 1e6, p / 1e6, s / p, sk / 1024, pk / 1024 }'
  done
}
echo "the overhead job (the agent commits at once):"
table
echo "an agent that works for 1 s first:"
export AGENT_SECONDS=1
table
test "$(git -C "$repo" status --porcelain --untracked-files=no)" = "" || { echo "the checkout is not clean" >&2; exit 1; }
