#!/usr/bin/env bash
# A single-node Kubernetes for the kubernetes sandbox's tests, from the binaries build.sh made:
# etcd, kube-apiserver (:6443 on every address, so that pods reach it at the node's; TLS from
# openssl, static tokens, RBAC), the controller manager, the scheduler and a kubelet driving the local dockerd (dockershim, no CNI: pods get
# docker0 addresses; the node at 10.213.79.1 on a bridge of its own). Everything lives
# in STATE; every process is stopped by the pid it wrote.
#   tests/kubernetes/cluster.sh start BUILD STATE   (writes STATE/admin.conf, STATE/nobody.conf)
#   tests/kubernetes/cluster.sh stop STATE
set -euo pipefail
action=$1

stop() {
  local state=$1
  for name in kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
    [ -f "$state/$name.pid" ] && kill "$(cat "$state/$name.pid")" 2>/dev/null || true
  done
  sleep 1
  for name in kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
    [ -f "$state/$name.pid" ] && kill -9 "$(cat "$state/$name.pid")" 2>/dev/null || true
  done
  # The containers the kubelet made (dockershim names them k8s_*), then its mounts.
  docker ps -aq --filter "label=io.kubernetes.docker.type" --filter "name=k8s_" | xargs -r docker rm -f >/dev/null 2>&1 || true
  grep " $state/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  ip link del eden-k8s0 2>/dev/null || true
  # The host settings the kubelet changed, put back.
  if [ -f "$state/sysctl" ]; then
    while read -r key value; do sysctl -q -w "$key=$value" >/dev/null 2>&1 || true; done < "$state/sysctl"
  fi
  rm -rf "$state"
}

if [ "$action" = stop ]; then stop "$2"; exit 0; fi

build=$2
state=$3
bin=$build/bin
mkdir -p "$state"
cd "$state"
for key in vm.overcommit_memory kernel.panic kernel.panic_on_oops; do echo "$key $(sysctl -n "$key")"; done > sysctl
# The node's address (a kubelet refuses a loopback one): a bridge of the fixture's own (no dummy module here).
node_ip=10.213.79.1
ip link add eden-k8s0 type bridge 2>/dev/null || true
ip addr add $node_ip/32 dev eden-k8s0 2>/dev/null || true
ip link set eden-k8s0 up

# Certificates: a CA, the API server's serving certificate, the service-account key pair.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=eden-k8s-ca -keyout ca-key.pem -out ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=kube-apiserver -keyout api-key.pem -out api.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' > api.cnf
openssl x509 -req -in api.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile api.cnf -out api.pem 2>/dev/null
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
admin=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
nobody=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s,admin,admin,system:masters\n%s,nobody,nobody\n' "$admin" "$nobody" > tokens.csv
kubeconfig() { # FILE TOKEN
  cat > "$1" <<CONF
apiVersion: v1
kind: Config
clusters:
- name: eden-test
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: $state/ca.pem
users:
- name: user
  user:
    token: $2
contexts:
- name: eden-test
  context:
    cluster: eden-test
    user: user
    namespace: default
current-context: eden-test
CONF
}
kubeconfig admin.conf "$admin"
kubeconfig nobody.conf "$nobody"

start() { # NAME COMMAND...
  local name=$1; shift
  setsid "$@" > "$state/$name.log" 2>&1 < /dev/null &
  echo $! > "$state/$name.pid"
}
wait_for() { # WHAT COMMAND...
  local what=$1; shift
  for _ in $(seq 600); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "$what did not come up"; tail -20 "$state"/*.log; exit 1
}

start etcd etcd --name eden-test --data-dir "$state/etcd" --listen-client-urls http://127.0.0.1:23790 \
  --advertise-client-urls http://127.0.0.1:23790 --listen-peer-urls http://127.0.0.1:23800 \
  --initial-advertise-peer-urls http://127.0.0.1:23800 --initial-cluster eden-test=http://127.0.0.1:23800
start kube-apiserver "$bin/kube-apiserver" --etcd-servers http://127.0.0.1:23790 --bind-address 0.0.0.0 \
  --advertise-address 127.0.0.1 --secure-port 6443 --insecure-port 0 --tls-cert-file api.pem --tls-private-key-file api-key.pem \
  --client-ca-file ca.pem --token-auth-file tokens.csv --authorization-mode Node,RBAC \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file sa.pub \
  --service-account-signing-key-file sa.key --service-cluster-ip-range 10.96.0.0/24 --allow-privileged \
  --enable-admission-plugins NamespaceLifecycle,ServiceAccount --disable-admission-plugins DefaultStorageClass \
  --kubelet-preferred-address-types InternalIP
wait_for "the API server" "$bin/kubectl" --kubeconfig admin.conf get --raw /readyz
start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig admin.conf --leader-elect=false --port=0 \
  --service-account-private-key-file sa.key --root-ca-file ca.pem --flex-volume-plugin-dir "$state/flex" \
  --controllers '*,-nodeipam,-cloud-node-lifecycle'
start kube-scheduler "$bin/kube-scheduler" --kubeconfig admin.conf --leader-elect=false --port=0
start kubelet "$bin/kubelet" --kubeconfig admin.conf --root-dir "$state/kubelet" --cert-dir "$state/kubelet-pki" \
  --container-runtime docker --container-runtime-endpoint "unix://$state/dockershim.sock" \
  --docker-endpoint unix:///var/run/docker.sock --pod-infra-container-image eden-test-pause:1 \
  --hostname-override eden-node --node-ip $node_ip --address $node_ip --port 10250 --read-only-port 0 \
  --healthz-port 0 --cgroups-per-qos=false --enforce-node-allocatable '' --cgroup-driver cgroupfs \
  --make-iptables-util-chains=false --fail-swap-on=false --image-gc-high-threshold 100 --image-gc-low-threshold 99 \
  --eviction-hard 'memory.available<1Ki,nodefs.available<1Ki,imagefs.available<1Ki' --anonymous-auth=true \
  --authorization-mode AlwaysAllow --volume-plugin-dir "$state/kubelet-plugins" --serialize-image-pulls=false
# The pause container, imported into docker (no registry).
if ! docker image inspect eden-test-pause:1 >/dev/null 2>&1; then
  mkdir -p pause && cp "$build/pause" pause/pause
  tar -C pause -c pause | docker import -c 'ENTRYPOINT ["/pause"]' - eden-test-pause:1 >/dev/null
fi
wait_for "the node" sh -c "'$bin/kubectl' --kubeconfig admin.conf get node eden-node -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -q True"
wait_for "the default service account" "$bin/kubectl" --kubeconfig admin.conf get serviceaccount default
echo "kubernetes: up in $state"
