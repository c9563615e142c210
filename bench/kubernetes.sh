#!/usr/bin/env bash
# The kubernetes sandbox, measured on the single-node cluster of the tests (tests/kubernetes/):
# eden's per-iteration time in a pod against a raw `kubectl exec -i` of the same command in a
# pod from the same image (20 iterations, medians); the time from the start of `eden run` to
# its first iteration (the pod created, scheduled, started and seeded: 3 runs, median); and
# the cost of bringing a 10-file commit back.
# Needs root, the cluster's binaries (`bash tests/kubernetes/build.sh /var/tmp/eden-k8s`), and
# the test image `localhost/eden-test:git` in the local docker (`cargo test containers`).
#   bench/kubernetes.sh       (or KUBECONFIG=… bench/kubernetes.sh for a cluster of yours whose
#                              nodes have the image; it runs in the context's namespace)
source "$(dirname "$0")/common.sh"
image=localhost/eden-test:git
cmd='cat >/dev/null; echo working'
build=/var/tmp/eden-k8s
state=/var/tmp/eden-bench-k8s-$$

if [ -z "${KUBECONFIG:-}" ]; then
  trap 'bash "$root/tests/kubernetes/cluster.sh" stop "$state"; rm -rf "$work"' EXIT
  bash "$root/tests/kubernetes/cluster.sh" start "$build" "$state" >/dev/null
  export KUBECONFIG=$state/admin.conf PATH=$build/bin:$PATH
fi

# Per iteration: a raw exec in a pod of the same image, then eden's iterations.
kubectl run eden-bench-raw --image "$image" --image-pull-policy Never --restart Never \
  --command -- tail -f /dev/null >/dev/null
kubectl wait --for condition=Ready pod/eden-bench-raw --timeout 120s >/dev/null
time_raw kubectl exec -i eden-bench-raw --
kubectl delete pod eden-bench-raw --grace-period 0 --force >/dev/null 2>&1
sandbox="kind = \"kubernetes\"
image = \"$image\"
image_pull_policy = \"Never\""
cd "$repo"
sandbox_plan 20 "$cmd"
"$eden" run "$work/plan.toml" --quiet --json > "$work/iterations.json"
compare_iterations "kubernetes" "$work/iterations.json" "${raw[@]}"

firsts=()
for _ in 1 2 3; do
  sandbox_plan 1 "$cmd"
  "$eden" run "$work/plan.toml" --quiet --json > "$work/first.json"
  firsts+=("$(first_iteration_ms "$work/first.json")")
done
echo "kubernetes: pod start to first iteration $(printf '%s\n' "${firsts[@]}" | median) ms (runs: ${firsts[*]})"

commit_cost "kubernetes"
