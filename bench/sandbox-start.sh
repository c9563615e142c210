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
      sandbox="kind = \"$engine\"
image = \"$image\"
expose_worktree = $expose"
      sandbox_plan 1 'cat >/dev/null; echo working'
      sync
      "$eden" run "$work/plan.toml" --quiet --json > "$work/run.json" || true
      if [ "$expose" = true ]; then exposed+=("$(first_iteration_ms "$work/run.json")"); else own+=("$(first_iteration_ms "$work/run.json")"); fi
    done
  done
  o=$(printf '%s\n' "${own[@]}" | median); x=$(printf '%s\n' "${exposed[@]}" | median)
  echo "$engine: start to first iteration: default (own repository) $o ms (runs: ${own[*]}), expose_worktree (bind mount) $x ms (runs: ${exposed[*]}): $(python3 -c "print(f'{$o / $x:.2f}')")x"
  sandbox="kind = \"$engine\"
image = \"$image\""
  commit_cost "$engine"
  git -C "$big" reset -q --hard main
done
