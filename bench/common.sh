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
