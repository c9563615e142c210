#!/usr/bin/env bash
# Run one integration test N times in a row while both cores are kept busy, to catch races that
# only show on a loaded machine. Prints how many runs passed; exits 1 if any failed.
#   bench/loop-test.sh TEST [N]   e.g. bench/loop-test.sh containers::docker::a_container_removed_mid_run_is_a_sandbox_error 30
set -euo pipefail
test=${1:?usage: bench/loop-test.sh TEST [N]}
runs=${2:-30}
cd "$(dirname "$0")/.."
cargo test --quiet --test it --no-run 2>/dev/null
load=()
for _ in $(seq "$(nproc)"); do (while :; do :; done) & load+=($!); done
trap 'kill "${load[@]}" 2>/dev/null' EXIT
passed=0
for _ in $(seq "$runs"); do
  if cargo test --quiet --test it -- --exact "$test" 2>&1 | grep -q "1 passed"; then passed=$((passed + 1)); fi
done
echo "$test: $passed of $runs passed under load"
[ "$passed" = "$runs" ]
