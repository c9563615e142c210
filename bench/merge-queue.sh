#!/usr/bin/env bash
# The merge queue on a big repository: N runs (default 8) as one `eden run m1.toml … mN.toml
# --jobs N` on a repository of 50,000 files and 2,000 commits, each agent working 1 s and then
# committing a file; every run merges into `main`. What a run holds the repository lock for is
# what the others wait: the merge, and whatever else is done under the lock. Reports the wall
# time and the merge queue's wait (`merge_wait_ms` of the records: median and longest).
#   bench/merge-queue.sh [N]
source "$(dirname "$0")/common.sh"
n=${1:-8}
rm -rf "$repo" && big_repo "$repo"
agent=$work/agent.sh
cat > "$agent" <<'AGENT'
#!/usr/bin/env bash
cat > /dev/null
sleep 1
echo "change $RANDOM$RANDOM" > "change-$RANDOM$RANDOM$RANDOM.txt"
git add -A && git commit -q -m "agent change"
echo "done <promise>COMPLETE</promise>"
AGENT
chmod +x "$agent"
manifests=()
for i in $(seq 1 "$n"); do
  printf 'name = "queue%s"\nprompt = "make a change"\n[agent]\nkind = "cli"\nbinary = "%s"\n[loop]\nmax_iterations = 1\n' \
    "$i" "$agent" > "$work/m$i.toml"
  manifests+=("$work/m$i.toml")
done
cd "$repo"
start=$(now_ns)
"$eden" run "${manifests[@]}" --jobs "$n" --quiet --json > "$work/runs.json"
elapsed_ns=$(( $(now_ns) - start ))
python3 - "$work/runs.json" "$elapsed_ns" "$n" <<'PY'
import json, statistics, sys
runs = json.load(open(sys.argv[1]))
merged = [run for run in runs if run.get("merged_into")]
waits = sorted(run["merge_wait_ms"] for run in merged)
print(f"{sys.argv[3]} runs on 50,000 files at once: {int(sys.argv[2]) / 1e9:.1f} s, {len(merged)} merged; "
      f"merge queue wait median {statistics.median(waits) / 1000:.1f} s, longest {waits[-1] / 1000:.1f} s")
PY
test "$(git -C "$repo" status --porcelain --untracked-files=no)" = "" || { echo "the checkout is not clean" >&2; exit 1; }
left=$(find "$repo/.eden/worktrees" -mindepth 1 -maxdepth 1 | wc -l)
test "$left" -eq 0 || { echo "$left worktree(s) left behind" >&2; exit 1; }
