#!/usr/bin/env bash
# A remote docker engine, measured: eden's per-iteration time against a raw `docker -H … exec`
# of the same command on that engine (20 iterations, medians); start to first iteration on a
# repository of 50,000 files and 2,000 commits (everything streamed: the history packed, the
# files copied); and the cost of bringing a 10-file commit back.
#
# The "remote" engine is a dockerd of its own in a network namespace on this machine, reached
# over TCP at 10.213.78.2:2375, with the benchmark's folders and eden's executable hidden from
# it (a tmpfs over them in its mount namespace), as on another machine. Needs root, iproute2,
# and the test image `localhost/eden-test:git` in the local docker (`cargo test containers`).
#   bench/remote.sh            (or REMOTE=tcp://HOST:2375 bench/remote.sh for a real one,
#                               with the test image loaded there)
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:git
cmd='cat >/dev/null; echo working'
ns=eden-bench-remote-$$
state=/var/tmp/eden-bench-remote-$$

up() {
  ip netns add "$ns"
  ip link add ebr$$a type veth peer name ebr$$b
  ip link set ebr$$b netns "$ns"
  ip addr add 10.213.78.1/24 dev ebr$$a && ip link set ebr$$a up
  ip netns exec "$ns" ip addr add 10.213.78.2/24 dev ebr$$b
  ip netns exec "$ns" ip link set ebr$$b up && ip netns exec "$ns" ip link set lo up
  mkdir -p "$state" && echo '{}' > "$state/daemon.json"
  setsid nsenter --net=/run/netns/"$ns" unshare --mount --propagation private sh -c \
    "mount -t tmpfs none '$work'; mount -t tmpfs none '$(dirname "$eden")'; exec dockerd --data-root $state/data \
     --exec-root $state/exec --pidfile $state/docker.pid -H unix://$state/docker.sock -H tcp://10.213.78.2:2375 \
     --bip 172.31.210.1/24 --cgroup-parent /$ns --config-file $state/daemon.json" >"$state/log" 2>&1 </dev/null &
  for _ in $(seq 300); do docker -H tcp://10.213.78.2:2375 version >/dev/null 2>&1 && break; sleep 0.1; done
  docker save "$image" | docker -H tcp://10.213.78.2:2375 load >/dev/null
}

down() {
  [ -f "$state/docker.pid" ] && kill "$(cat "$state/docker.pid")" 2>/dev/null && sleep 2
  ip netns del "$ns" 2>/dev/null; ip link del ebr$$a 2>/dev/null
  rm -rf "$state" "$work"
}

if [ -z "${REMOTE:-}" ]; then
  trap down EXIT
  up
  REMOTE=tcp://10.213.78.2:2375
fi
export DOCKER_HOST=$REMOTE
unset DOCKER_TLS_VERIFY DOCKER_CERT_PATH

# Per iteration.
docker run -d --init --name eden-bench-raw "$image" tail -f /dev/null >/dev/null
raw=()
for _ in $(seq 20); do
  start=$(now_ns); echo prompt | docker exec -i eden-bench-raw sh -c "$cmd" >/dev/null; raw+=($(( $(now_ns) - start )))
done
docker rm -f eden-bench-raw >/dev/null

plan() { # ITERATIONS SCRIPT
  cat > "$work/plan.toml" <<PLAN
name = "bench"
prompt = "go"
[agent]
kind = "cli"
binary = "sh"
args = ["-c", "$2"]
[sandbox]
kind = "docker"
image = "$image"
[loop]
max_iterations = $1
require_completion = false
PLAN
}

cd "$repo"
plan 20 "$cmd"
"$eden" run "$work/plan.toml" --quiet --json > "$work/iterations.json"
python3 - "$work/iterations.json" "${raw[@]}" <<'PY'
import json, statistics, sys
from datetime import datetime
record = json.load(open(sys.argv[1]))
raw = statistics.median(int(n) for n in sys.argv[2:]) / 1e6
eden = statistics.median(i["duration_ms"] for i in record["iterations"])
parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
first = (parse(record["iterations"][0]["started_at"]) - parse(record["started_at"])).total_seconds() * 1000
print(f"remote docker: per iteration eden {eden:.0f} ms vs raw exec {raw:.0f} ms = {eden / raw:.2f}x (goal <= 1.2x); "
      f"start to first iteration (small repository) {first:.0f} ms")
PY

big=$work/big
big_repo "$big"
cd "$big"
firsts=()
for _ in 1 2 3; do
  plan 1 "$cmd"
  sync
  "$eden" run "$work/plan.toml" --quiet --json > "$work/big.json" || true
  firsts+=("$(python3 -c '
import json, sys
from datetime import datetime
r = json.load(open(sys.argv[1])); p = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))
print(int((p(r["iterations"][0]["started_at"]) - p(r["started_at"])).total_seconds() * 1000))' "$work/big.json")")
done
echo "remote docker: start to first iteration, $(git ls-files | wc -l) files and $(git rev-list --count HEAD) commits: $(printf '%s\n' "${firsts[@]}" | median) ms (runs: ${firsts[*]})"

iteration_ms() {
  python3 -c 'import json, statistics, sys; r = json.load(open(sys.argv[1])); print(int(statistics.median(i["duration_ms"] for i in r["iterations"][1:])))' "$1"
}
commit='cat >/dev/null; n=$(date +%s%N); mkdir -p w; for i in 0 1 2 3 4 5 6 7 8 9; do echo $n > w/$i.txt; done; git add w && git -c user.name=b -c user.email=b@e commit -qm $n'
plan 6 "$commit"
"$eden" run "$work/plan.toml" --quiet --json > "$work/commit.json" || true
plan 6 'cat >/dev/null; n=$(date +%s%N); mkdir -p w; for i in 0 1 2 3 4 5 6 7 8 9; do echo $n > w/$i.txt; done'
"$eden" run "$work/plan.toml" --quiet --json > "$work/none.json" 2>/dev/null || true
with=$(iteration_ms "$work/commit.json"); without=$(iteration_ms "$work/none.json")
echo "remote docker: iteration committing 10 files $with ms, writing them uncommitted $without ms: bringing the commit back costs $((with - without)) ms"
