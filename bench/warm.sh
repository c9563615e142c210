#!/usr/bin/env bash
# Time from `eden run` to the agent's first byte, cold (a container made for the run) and warm
# (a member of `eden pool up`'s pool claimed), for docker and podman: RUNS runs of a `cli` agent
# that prints at once, one after another, p50 and p95 of the record's `first byte` timing (which
# counts from eden's start). With `--big`, on a repository of 50,000 files and 2,000 commits
# instead of a small one, and `git worktree add` there timed with `checkout.workers` 1 and 0 (one
# per core).
# Needs the test image `localhost/eden-test:git` (built by `cargo test containers`).
#   bench/warm.sh [--big] [ENGINE...]     RUNS=20 by default (5 with --big); MODES="warm" skips the cold runs
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:git
big=false
if [ "${1:-}" = --big ]; then big=true; shift; fi
runs=${RUNS:-$($big && echo 5 || echo 20)}
if $big; then
  rm -rf "$repo" && big_repo "$repo"
  for workers in 1 0; do
    start=$(now_ns)
    git -C "$repo" -c checkout.workers=$workers worktree add -q "$work/wt-$workers" HEAD
    echo "git worktree add of 50,000 files, checkout.workers=$workers: $(( ($(now_ns) - start) / 1000000 )) ms"
    git -C "$repo" worktree remove --force "$work/wt-$workers"
  done
else
  echo "small" > "$repo/README.md" && git -C "$repo" add README.md && git -C "$repo" commit -qm readme
fi
cd "$repo"
engines=("$@")
[ ${#engines[@]} -eq 0 ] && engines=(docker podman)
# p50 and p95 of the first-byte timings (ms) in the records given.
percentiles() {
  python3 - "$@" <<'PY'
import json, sys
label, files = sys.argv[1], sys.argv[2:]
firsts = sorted(next(t["at_ms"] for t in json.load(open(f))["timings"] if t["step"] == "first byte") for f in files)
pick = lambda q: firsts[min(len(firsts) - 1, int(round(q * (len(firsts) - 1))))]
steps = {}
for f in files:
    for t in json.load(open(f))["timings"]:
        steps.setdefault(t["step"], []).append(t["ms"])
mid = lambda xs: sorted(xs)[len(xs) // 2]
print(f"{label}: first byte p50 {pick(0.5)} ms, p95 {pick(0.95)} ms over {len(firsts)} runs; "
      + " · ".join(f"{step} {mid(ms)}" for step, ms in steps.items()))
PY
}
for engine in "${engines[@]}"; do
  if ! "$engine" image inspect "$image" >/dev/null 2>&1; then
    echo "$engine: image $image missing (run \`cargo test containers\` once to build it)"; continue
  fi
  sandbox="kind = \"$engine\"
image = \"$image\"
network = \"bridge\""
  sandbox_plan 1 'cat >/dev/null; echo first'
  for mode in ${MODES:-cold warm}; do
    [ "$mode" = warm ] && "$eden" pool up "$work/plan.toml" --size 2 >/dev/null 2>&1
    records=()
    for n in $(seq "$runs"); do
      "$eden" run "$work/plan.toml" --quiet --json > "$work/$engine-$mode-$n.json" || true
      records+=("$work/$engine-$mode-$n.json")
      # A warm run's member is replaced behind it, two seconds later: let the refill finish.
      [ "$mode" = warm ] && sleep "${PAUSE:-3}"
    done
    [ "$mode" = warm ] && "$eden" pool down >/dev/null 2>&1
    percentiles "$engine $mode" "${records[@]}"
  done
done
