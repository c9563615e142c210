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
