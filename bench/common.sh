# Shared setup for the benchmarks: a release build and a hermetic scratch repository.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
eden=$root/target/release/eden
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_GLOBAL=$work/gitconfig GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$HOME" && : > "$GIT_CONFIG_GLOBAL"
repo=$work/repo
git init -q -b main "$repo"
git -C "$repo" commit -q --allow-empty -m init

now_ns() { date +%s%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# An agent (`$work/agent.sh`) that prints the file $1 as its whole output.
agent_printing() {
  cat > "$work/agent.sh" <<AGENT
#!/usr/bin/env bash
cat > /dev/null
cat "$1"
AGENT
  chmod +x "$work/agent.sh"
}

# A repository at $1 of 2,000 commits of 25 new files each (and one changed): 50,000 files.
big_repo() {
  git init -q -b main "$1"
  python3 - <<'PY' | git -C "$1" fast-import --quiet
import sys
out = sys.stdout
for c in range(2000):
    out.write(f"commit refs/heads/main\ncommitter bench <b@e> {1700000000 + c} +0000\ndata 8\ncommit {c % 10}\n")
    for i in range(25):
        n = c * 25 + i
        body = f"file {n}\n" + "x" * (n % 200) + "\n"
        out.write(f"M 100644 inline src/d{n // 500}/f{n}.txt\ndata {len(body)}\n{body}")
    if c:
        body = f"changed in {c}\n"
        out.write(f"M 100644 inline src/d0/f{c % 25}.txt\ndata {len(body)}\n{body}")
    out.write("\n")
PY
  git -C "$1" reset -q --hard
}

# The plan the sandbox benchmarks run: `sh -c SCRIPT` as the agent, ITERATIONS of it, in the
# sandbox the TOML lines in $sandbox describe. Writes $work/plan.toml.
sandbox_plan() { # ITERATIONS SCRIPT
  cat > "$work/plan.toml" <<PLAN
name = "bench"
prompt = "go"
[agent]
kind = "cli"
binary = "sh"
args = ["-c", "$2"]
[sandbox]
$sandbox
[loop]
max_iterations = $1
require_completion = false
PLAN
}

# LABEL RECORD RAW_NS...: eden's median iteration in RECORD (a run's `--json` record) against
# the median of the raw timings, and the time from the run's start to its first iteration.
compare_iterations() {
  python3 - "$@" <<'PY'
import json, statistics, sys
from datetime import datetime
label, record = sys.argv[1], json.load(open(sys.argv[2]))
raw = statistics.median(int(n) for n in sys.argv[3:]) / 1e6
eden = statistics.median(i["duration_ms"] for i in record["iterations"])
parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
first = (parse(record["iterations"][0]["started_at"]) - parse(record["started_at"])).total_seconds() * 1000
print(f"{label}: per iteration eden {eden:.0f} ms vs raw exec {raw:.0f} ms = {eden / raw:.2f}x (goal <= 1.2x); "
      f"start to first iteration {first:.0f} ms")
PY
}

# RAW_COMMAND...: 20 timings (ns) of `echo prompt | RAW_COMMAND sh -c "$cmd"`, in $raw.
time_raw() {
  raw=()
  for _ in $(seq 20); do
    local start; start=$(now_ns); echo prompt | "$@" sh -c "$cmd" >/dev/null; raw+=($(( $(now_ns) - start )))
  done
}

# LABEL: what bringing back a commit of 10 files costs per iteration, in the sandbox $sandbox
# describes: iterations that commit them against iterations that only write them (medians,
# the first of each left out).
commit_cost() {
  local iteration_ms='import json, statistics, sys; r = json.load(open(sys.argv[1])); print(int(statistics.median(i["duration_ms"] for i in r["iterations"][1:])))'
  local write='cat >/dev/null; n=$(date +%s%N); mkdir -p w; for i in 0 1 2 3 4 5 6 7 8 9; do echo $n > w/$i.txt; done'
  sandbox_plan 6 "$write; git add w && git -c user.name=b -c user.email=b@e commit -qm \$n"
  "$eden" run "$work/plan.toml" --quiet --json > "$work/commit.json" || true
  sandbox_plan 6 "$write"
  "$eden" run "$work/plan.toml" --quiet --json > "$work/none.json" 2>/dev/null || true
  local with without
  with=$(python3 -c "$iteration_ms" "$work/commit.json"); without=$(python3 -c "$iteration_ms" "$work/none.json")
  echo "$1: iteration committing 10 files $with ms, writing them uncommitted $without ms: bringing the commit back costs $((with - without)) ms"
}

# RECORD: milliseconds from the run's start to its first iteration.
first_iteration_ms() {
  python3 -c '
import json, sys
from datetime import datetime
r = json.load(open(sys.argv[1])); p = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
print(int((p(r["iterations"][0]["started_at"]) - p(r["started_at"])).total_seconds() * 1000))' "$1"
}

# Runs "$@" while sampling the summed RSS (KB) of every process of this eden binary; prints
# "elapsed_ns peak_kb".
sampled() {
  local peak_file=$work/peak
  echo 0 > "$peak_file"
  ( peak=0
    while :; do
      now=$(ps -eo rss=,args= | awk -v bin="$eden" 'index($0, bin) { s += $1 } END { print s + 0 }')
      [ "$now" -gt "$peak" ] && peak=$now && echo "$peak" > "$peak_file"
      sleep 0.02
    done ) &
  local sampler=$! start=$(now_ns) status=0
  "$@" || status=$?
  local elapsed=$(( $(now_ns) - start ))
  kill "$sampler"; wait "$sampler" 2>/dev/null || true
  # A failed command is no measurement: say so, and print nothing to read.
  if [ "$status" -ne 0 ]; then echo "failed (exit $status): $*" >&2; return "$status"; fi
  echo "$elapsed $(cat "$peak_file")"
}

# A manifest ($work/ticker.toml) whose `cli` agent prints a line of work every $1 seconds until
# it is stopped: a run that stays live.
ticker_manifest() {
  cat > "$work/ticker.sh" <<AGENT
#!/usr/bin/env bash
cat > /dev/null
i=0
while true; do i=\$((i + 1)); echo "working on step \$i of the task, reading src/file\$i.rs"; sleep $1; done
AGENT
  chmod +x "$work/ticker.sh"
  cat > "$work/ticker.toml" <<TOML
name = "ticker"
prompt = "go"
[agent]
kind = "cli"
binary = "$work/ticker.sh"
[loop]
max_iterations = 1
idle_timeout = "10m"
TOML
}
