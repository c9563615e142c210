#!/usr/bin/env bash
# Beyond one machine, measured: 20 runs as one `eden run m1.toml … m20.toml --jobs 20`, spread
# over two remote docker engines (14 runs, `sandbox.host` a list of both: eden places each on
# the one with fewer of its runs) and the single-node Kubernetes cluster of the tests (6 runs,
# a pod each), on a repository of 50,000 files and 2,000 commits (each sandbox gets it streamed
# through its engine's channel). Each agent works for $AGENT_SECONDS (default 20) and commits;
# every run merges into `main` through the merge queue.
# Reports runs per minute, the merge queue's wait (`merge_wait_ms` of the records: median and
# longest), and what it cost this machine: eden's CPU (eden and every client it started, from
# `/usr/bin/time`) and the peak of the summed RSS of every eden process (`sampled`, every 20 ms).
# The remote engines are dockerds of their own in network namespaces, reached over TCP, with
# the benchmark's folders and eden's executable hidden from them (a tmpfs over them in their
# mount namespace), as on other machines. Needs root, iproute2, the cluster's binaries (`bash
# tests/kubernetes/build.sh /var/tmp/eden-k8s`) and the test image `localhost/eden-test:git` in
# the local docker (`cargo test containers`).
#   bench/scale.sh
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:git
build=/var/tmp/eden-k8s
state=/var/tmp/eden-bench-scale-$$
agent_seconds=${AGENT_SECONDS:-20}
hosts=(80 81)

engine_up() { # N: a dockerd at tcp://10.213.N.2:2375 in a namespace of its own
  local n=$1 ns=eden-bench-scale-$1-$$
  ip netns add "$ns"
  ip link add "ebs$n-$$" type veth peer name "ebs$n-$$-b"
  ip link set "ebs$n-$$-b" netns "$ns"
  ip addr add "10.213.$n.1/24" dev "ebs$n-$$" && ip link set "ebs$n-$$" up
  ip netns exec "$ns" ip addr add "10.213.$n.2/24" dev "ebs$n-$$-b"
  ip netns exec "$ns" ip link set "ebs$n-$$-b" up && ip netns exec "$ns" ip link set lo up
  mkdir -p "$state/$n" && echo '{}' > "$state/$n/daemon.json"
  setsid nsenter --net=/run/netns/"$ns" unshare --mount --propagation private sh -c \
    "mount -t tmpfs none '$work'; mount -t tmpfs none '$(dirname "$eden")'; exec dockerd --data-root $state/$n/data \
     --exec-root $state/$n/exec --pidfile $state/$n/docker.pid -H unix://$state/$n/docker.sock \
     -H tcp://10.213.$n.2:2375 --bip 172.31.$((n + 140)).1/24 --cgroup-parent /$ns \
     --config-file $state/$n/daemon.json" >"$state/$n/log" 2>&1 </dev/null &
  for _ in $(seq 300); do docker -H "tcp://10.213.$n.2:2375" version >/dev/null 2>&1 && break; sleep 0.1; done
  docker save "$image" | docker -H "tcp://10.213.$n.2:2375" load >/dev/null
}

down() {
  for n in "${hosts[@]}"; do
    [ -f "$state/$n/docker.pid" ] && kill "$(cat "$state/$n/docker.pid")" 2>/dev/null
  done
  sleep 2
  for n in "${hosts[@]}"; do
    ip netns del "eden-bench-scale-$n-$$" 2>/dev/null; ip link del "ebs$n-$$" 2>/dev/null
  done
  bash "$root/tests/kubernetes/cluster.sh" stop "$state/k8s" >/dev/null 2>&1 || true
  rm -rf "$state" "$work"
}
trap down EXIT
for n in "${hosts[@]}"; do engine_up "$n"; done
bash "$root/tests/kubernetes/cluster.sh" start "$build" "$state/k8s" >/dev/null
export KUBECONFIG=$state/k8s/admin.conf PATH=$build/bin:$PATH
unset DOCKER_HOST DOCKER_TLS_VERIFY DOCKER_CERT_PATH

rm -rf "$repo" && big_repo "$repo"
script="sleep $agent_seconds; echo \$RANDOM\$RANDOM > change-\$RANDOM\$RANDOM.txt && git add -A && git -c user.name=bench -c user.email=b@e commit -qm change && echo '<promise>COMPLETE</promise>'"
manifests=()
for i in $(seq 0 19); do
  if [ "$i" -lt 14 ]; then
    sandbox="kind = \"docker\"
image = \"$image\"
network = \"bridge\"
host = [\"tcp://10.213.${hosts[0]}.2:2375\", \"tcp://10.213.${hosts[1]}.2:2375\"]"
  else
    sandbox="kind = \"kubernetes\"
image = \"$image\"
image_pull_policy = \"Never\""
  fi
  sandbox_plan 1 "$script"
  sed -i "s/^name = \"bench\"/name = \"scale$i\"/" "$work/plan.toml"
  mv "$work/plan.toml" "$work/m$i.toml"
  manifests+=("$work/m$i.toml")
done
cd "$repo"

# The runs, their status kept (a failure is reported below, after the sampling has stopped).
run_all() {
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$eden" run "${manifests[@]}" --jobs 20 --quiet --json \
    > "$work/records.json" && echo 0 > "$work/status" || echo 1 > "$work/status"
}
read -r _ peak_kb <<< "$(sampled run_all)"
if [ "$(cat "$work/status")" != 0 ]; then
  echo "the runs failed:"
  python3 -c 'import json,sys; [print(r["name"], r["status"], r.get("error")) for r in json.load(open(sys.argv[1]))]' "$work/records.json"
  exit 1
fi

python3 - "$work/records.json" "$work/time" "$peak_kb" "$agent_seconds" <<'PY'
import json, statistics, sys
records = json.load(open(sys.argv[1]))
wall, user, system = (float(x) for x in open(sys.argv[2]).read().split())
peak_mb = int(sys.argv[3]) / 1024
merged = [r for r in records if r.get("merged_into") == "main"]
assert len(merged) == 20, f"only {len(merged)} of 20 merged"
waits = sorted(r["merge_wait_ms"] for r in merged)
where = {}
for r in records:
    container = r.get("container") or {}
    place = f"node {container.get('node')}" if r.get("sandbox") == "kubernetes" else container.get("host", "?")
    where[place] = where.get(place, 0) + 1
print(f"20 runs (agents working {sys.argv[4]} s each) on {', '.join(f'{k}: {v}' for k, v in sorted(where.items()))}")
print(f"  wall {wall:.1f} s = {20 * 60 / wall:.1f} runs per minute")
print(f"  merge queue wait: median {statistics.median(waits):.0f} ms, longest {waits[-1]} ms")
print(f"  this machine: eden and its clients {user + system:.1f} s of CPU ({(user + system) / wall * 100:.0f}% of one core), "
      f"eden's processes at most {peak_mb:.0f} MB together")
PY
