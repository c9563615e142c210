#!/usr/bin/env bash
# Several attempts at one task (`eden run task.toml --attempts N`) on a repository of real
# size (50,000 files, 2,000 commits): N = 1, 2, 4 attempts of an agent that works for 1 s,
# changes a file and commits, with a `[[check]]` that passes; the first to pass lands and the
# others are stopped. Wall time (median of 3) and the peak of the summed RSS of every eden
# process (the coordinator and each attempt's eden, sampled every 20 ms).
#   bench/attempts.sh [N...]   (default 1 2 4)
source "$(dirname "$0")/common.sh"
sizes=("${@:-1 2 4}")
read -r -a sizes <<< "${sizes[*]}"
rm -rf "$repo"
big_repo "$repo"
agent=$work/agent.sh
cat > "$agent" <<'AGENT'
#!/usr/bin/env bash
read -r prompt
sleep 1
echo "$prompt $RANDOM" >> src/d1/f600.txt
git add -A && git commit -q -m "$prompt"
echo "done <promise>COMPLETE</promise>"
AGENT
chmod +x "$agent"
printf 'name = "task"\nprompt = "attempt {{ATTEMPT}}"\n[agent]\nkind = "cli"\nbinary = "%s"\n[loop]\nmax_iterations = 1\n[[check]]\nname = "built"\ncmd = "git log -1 --format=%%s | grep -q attempt"\n' \
  "$agent" > "$work/task.toml"
cd "$repo"
printf '%9s  %12s  %12s\n' attempts "wall (med)" "peak RSS"
for n in "${sizes[@]}"; do
  walls=() peak=0
  for _ in 1 2 3; do
    read -r ns kb < <(sampled "$eden" run "$work/task.toml" --attempts "$n" --quiet)
    walls+=("$ns")
    [ "$kb" -gt "$peak" ] && peak=$kb
  done
  wall=$(printf '%s\n' "${walls[@]}" | median)
  awk -v n="$n" -v w="$wall" -v k="$peak" 'BEGIN { printf "%9d  %9.0f ms  %9.1f MB\n", n, w / 1e6, k / 1024 }'
done
test "$(git -C "$repo" status --porcelain --untracked-files=no)" = "" || { echo "the checkout is not clean" >&2; exit 1; }
