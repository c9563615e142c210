#!/usr/bin/env bash
# The cold path, this build against another eden (e.g. a release build of an earlier commit):
# start to first iteration and the whole run, runs alternating, a small repository, medians.
#   bench/cold-vs.sh OTHER_EDEN [ENGINE]     RUNS=15 by default
set -euo pipefail
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_GLOBAL=$work/gitconfig GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@e GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@e
mkdir -p "$HOME"; : > "$GIT_CONFIG_GLOBAL"
git init -q -b main "$work/repo"; echo x > "$work/repo/a"; git -C "$work/repo" add a; git -C "$work/repo" commit -qm a
other=$1
engine=${2:-docker}
root=$(cd "$(dirname "$0")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
cat > "$work/plan.toml" <<PLAN
name = "b"
prompt = "go"
[agent]
kind = "cli"
binary = "sh"
args = ["-c", "cat >/dev/null; echo first"]
[sandbox]
kind = "$engine"
image = "localhost/eden-test:git"
network = "bridge"
[loop]
max_iterations = 1
require_completion = false
PLAN
cd "$work/repo"
for n in $(seq ${RUNS:-15}); do
  for build in old new; do
    bin=$root/target/release/eden; [ $build = old ] && bin=$other
    start=$(date +%s%N)
    "$bin" run "$work/plan.toml" --quiet --json > "$work/$build-$n.json" || true
    end=$(date +%s%N)
    python3 - "$work/$build-$n.json" "$start" "$end" "$build" >> "$work/$build.txt" <<'PY'
import json, sys
from datetime import datetime
r = json.load(open(sys.argv[1])); p = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
first = (p(r["iterations"][0]["started_at"]) - p(r["started_at"])).total_seconds() * 1000
print(int(first), (int(sys.argv[3]) - int(sys.argv[2])) // 1000000)
PY
  done
done
for build in old new; do
  python3 - "$work/$build.txt" "$build" "$engine" <<'PY'
import sys, statistics
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
print(f"{sys.argv[3]} {sys.argv[2]}: start to first iteration median {statistics.median(r[0] for r in rows):.0f} ms, whole run median {statistics.median(r[1] for r in rows):.0f} ms over {len(rows)} runs")
PY
done
