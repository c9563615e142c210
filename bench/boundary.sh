#!/usr/bin/env bash
# What keeping the agent in costs, for docker and podman:
#  - gVisor: eden's per-iteration time (20 iterations of an agent that prints one line) and the
#    start to the first iteration, under `runtime = "runsc"` against the engine's default runtime;
#  - the default network's rules (`network = "internet"`, installed while the workspace is
#    seeded) against the engine's bridge as it is (`network = "bridge"`, no rules): start to
#    first iteration and per iteration, runs interleaved, medians of N.
# Needs root (the rules), the test image `localhost/eden-test:git` (built by `cargo test
# containers`) and runsc registered with docker (`.ci/run` does it).
#   bench/boundary.sh [N] [ENGINE...]   (default: 7, docker podman)
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:git
runs=${1:-7}
shift || true
engines=("$@")
[ ${#engines[@]} -eq 0 ] && engines=(docker podman)
cd "$repo"
cmd='cat >/dev/null; echo working'
iteration_ms='import json, statistics, sys; r = json.load(open(sys.argv[1])); print(int(statistics.median(i["duration_ms"] for i in r["iterations"])))'
for engine in "${engines[@]}"; do
  if ! "$engine" image inspect "$image" >/dev/null 2>&1; then
    echo "$engine: image $image missing (run \`cargo test containers\` once to build it)"; continue
  fi
  # gVisor against the default runtime: per iteration, and start to first iteration.
  for runtime in default runsc; do
    extra=""; [ "$runtime" = runsc ] && extra='runtime = "runsc"'
    sandbox="kind = \"$engine\"
image = \"$image\"
network = \"none\"
$extra"
    sandbox_plan 20 "$cmd"
    "$eden" run "$work/plan.toml" --quiet --json > "$work/$engine-$runtime.json"
    echo "$engine $runtime: per iteration $(python3 -c "$iteration_ms" "$work/$engine-$runtime.json") ms (median of 20); start to first iteration $(first_iteration_ms "$work/$engine-$runtime.json") ms"
  done
  # The default network's rules against none: interleaved runs of 3 iterations each.
  starts_internet=(); starts_bridge=(); its_internet=(); its_bridge=()
  for _ in $(seq "$runs"); do
    for network in internet bridge; do
      sandbox="kind = \"$engine\"
image = \"$image\"
network = \"$network\""
      sandbox_plan 3 "$cmd"
      "$eden" run "$work/plan.toml" --quiet --json > "$work/net.json"
      start=$(first_iteration_ms "$work/net.json"); per=$(python3 -c "$iteration_ms" "$work/net.json")
      if [ "$network" = internet ]; then starts_internet+=("$start"); its_internet+=("$per"); else starts_bridge+=("$start"); its_bridge+=("$per"); fi
    done
  done
  si=$(printf '%s\n' "${starts_internet[@]}" | median); sb=$(printf '%s\n' "${starts_bridge[@]}" | median)
  ii=$(printf '%s\n' "${its_internet[@]}" | median); ib=$(printf '%s\n' "${its_bridge[@]}" | median)
  python3 -c "import sys; si, sb, ii, ib = map(float, sys.argv[2:]); print(f'{sys.argv[1]} default network rules: start to first iteration {si:.0f} vs {sb:.0f} ms without rules ({si / sb:.2f}x); per iteration {ii:.0f} vs {ib:.0f} ms ({ii / ib:.2f}x); medians of $runs, goal within 5%')" "$engine" "$si" "$sb" "$ii" "$ib"
done
