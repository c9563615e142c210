#!/usr/bin/env bash
# The sandbox's own repository, measured on a repository of 50,000 files and 2,000 commits, for
# docker and podman:
# - start to first iteration (worktree, container, seeding) with the default (a repository and
#   a copy of the files of the container's own) against `expose_worktree = true` (the host
#   worktree bind-mounted, as every run did before the boundary); medians of 3 runs;
# - the cost of bringing work back: the median iteration of an agent that commits 10 files,
#   against one that writes them and commits nothing (its iteration needs no exchange).
# Needs the test image `localhost/eden-test:git` (built by `cargo test containers`).
#   bench/sandbox-start.sh [ENGINE...]   (default: docker podman)
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:git
engines=("$@")
[ ${#engines[@]} -eq 0 ] && engines=(docker podman)

big=$work/big
big_repo "$big"
echo "repository: $(git -C "$big" ls-files | wc -l) files, $(git -C "$big" rev-list --count HEAD) commits"

plan() { # ENGINE EXPOSE ITERATIONS SCRIPT
  cat > "$work/plan.toml" <<PLAN
name = "bench"
prompt = "go"
[agent]
kind = "cli"
binary = "sh"
args = ["-c", "$4"]
[sandbox]
kind = "$1"
image = "$image"
expose_worktree = $2
[loop]
max_iterations = $3
require_completion = false
PLAN
}

first_ms() {
  python3 - "$1" <<'PY'
import json, sys
from datetime import datetime
record = json.load(open(sys.argv[1]))
parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
print(int((parse(record["iterations"][0]["started_at"]) - parse(record["started_at"])).total_seconds() * 1000))
PY
}

iteration_ms() {
  python3 -c 'import json, statistics, sys; r = json.load(open(sys.argv[1])); print(int(statistics.median(i["duration_ms"] for i in r["iterations"][1:])))' "$1"
}

cd "$big"
for engine in "${engines[@]}"; do
  if ! "$engine" image inspect "$image" >/dev/null 2>&1; then
    echo "$engine: image $image missing (run \`cargo test containers\` once to build it)"; continue
  fi
  # Interleaved, each after the page cache's dirty pages are written out (`sync`): 50,000 new
  # files a run leave the disk busy, which otherwise lands on the next run's worktree.
  own=(); exposed=()
  for _ in 1 2 3; do
    for expose in false true; do
      plan "$engine" "$expose" 1 'cat >/dev/null; echo working'
      sync
      "$eden" run "$work/plan.toml" --quiet --json > "$work/run.json" || true
      if [ "$expose" = true ]; then exposed+=("$(first_ms "$work/run.json")"); else own+=("$(first_ms "$work/run.json")"); fi
    done
  done
  o=$(printf '%s\n' "${own[@]}" | median); x=$(printf '%s\n' "${exposed[@]}" | median)
  echo "$engine: start to first iteration: default (own repository) $o ms (runs: ${own[*]}), expose_worktree (bind mount) $x ms (runs: ${exposed[*]}): $(python3 -c "print(f'{$o / $x:.2f}')")x"
  commit='cat >/dev/null; n=$(date +%s%N); mkdir -p w; for i in 0 1 2 3 4 5 6 7 8 9; do echo $n > w/$i.txt; done; git add w && git -c user.name=b -c user.email=b@e commit -qm $n'
  plan "$engine" false 6 "$commit"
  "$eden" run "$work/plan.toml" --quiet --json > "$work/commit.json" || true
  plan "$engine" false 6 'cat >/dev/null; n=$(date +%s%N); mkdir -p w; for i in 0 1 2 3 4 5 6 7 8 9; do echo $n > w/$i.txt; done'
  "$eden" run "$work/plan.toml" --quiet --json > "$work/none.json" || true
  with=$(iteration_ms "$work/commit.json"); without=$(iteration_ms "$work/none.json")
  echo "$engine: iteration committing 10 files $with ms, writing them uncommitted $without ms: bringing the commit back costs $((with - without)) ms"
  git -C "$big" reset -q --hard main
done
