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
time_raw docker exec -i eden-bench-raw
docker rm -f eden-bench-raw >/dev/null
sandbox="kind = \"docker\"
image = \"$image\""
cd "$repo"
sandbox_plan 20 "$cmd"
"$eden" run "$work/plan.toml" --quiet --json > "$work/iterations.json"
compare_iterations "remote docker (small repository)" "$work/iterations.json" "${raw[@]}"

big=$work/big
big_repo "$big"
cd "$big"
firsts=()
for _ in 1 2 3; do
  sandbox_plan 1 "$cmd"
  sync
  "$eden" run "$work/plan.toml" --quiet --json > "$work/big.json" || true
  firsts+=("$(first_iteration_ms "$work/big.json")")
done
echo "remote docker: start to first iteration, $(git ls-files | wc -l) files and $(git rev-list --count HEAD) commits: $(printf '%s\n' "${firsts[@]}" | median) ms (runs: ${firsts[*]})"

commit_cost "remote docker"
