#!/usr/bin/env bash
# Container overhead, for docker and podman: eden's per-iteration time in a running container
# (20 iterations of an agent that prints one line) against a raw `ENGINE exec` of the same
# command in a container from the same image, medians side by side; and the time from the start
# of `eden run` to the first iteration (container start included).
# Needs the test image `localhost/eden-test:git` (built by `cargo test containers`).
#   bench/container.sh [ENGINE...]   (default: docker podman)
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:git
cmd='cat >/dev/null; echo working'
cd "$repo"
engines=("$@")
[ ${#engines[@]} -eq 0 ] && engines=(docker podman)
for engine in "${engines[@]}"; do
  if ! "$engine" image inspect "$image" >/dev/null 2>&1; then
    echo "$engine: image $image missing (run \`cargo test containers\` once to build it)"; continue
  fi
  pull=(); [ "$engine" = podman ] && pull=(--pull=never)
  "$engine" run -d --init --name eden-bench-raw "${pull[@]}" "$image" tail -f /dev/null >/dev/null
  time_raw "$engine" exec -i eden-bench-raw
  "$engine" rm -f eden-bench-raw >/dev/null
  sandbox="kind = \"$engine\"
image = \"$image\""
  sandbox_plan 20 "$cmd"
  "$eden" run "$work/plan.toml" --quiet --json > "$work/$engine.json"
  compare_iterations "$engine" "$work/$engine.json" "${raw[@]}"
done
