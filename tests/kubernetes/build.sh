#!/usr/bin/env bash
# Builds a single-node Kubernetes (v1.20.2: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kubectl) and a pause image from Debian bookworm's archive alone, for
# the kubernetes sandbox's tests (shared/KUBERNETES.md has the measured facts). About four
# minutes on 2 cores; does nothing when DIR/bin already holds the binaries.
#   tests/kubernetes/build.sh DIR [--rebuild]
set -euo pipefail
dir=$1
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
[ "${2:-}" = --rebuild ] && rm -rf "$dir/bin"
done=1
for bin in "${bins[@]}"; do [ -x "$dir/bin/$bin" ] || done=0; done
if [ "$done" = 1 ]; then echo "kubernetes: already built in $dir/bin"; exit 0; fi
mkdir -p "$dir"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends --no-upgrade golang-1.19-go golang-github-modern-go-reflect2-dev \
  etcd-server conntrack socat gcc libc6-dev dpkg-dev >/dev/null
# The source, from a deb-src line of our own (removed again).
src=/etc/apt/sources.list.d/eden-kubernetes-src.sources
printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$src"
trap 'rm -f "$src"; apt-get update -qq >/dev/null 2>&1 || true' EXIT
apt-get update -qq
(cd "$dir" && apt-get source --download-only -qq kubernetes >/dev/null)
rm -f "$src"
tree=$dir/src/k8s.io/kubernetes
rm -rf "$dir/src" && mkdir -p "$tree"
tar -xzf "$dir"/kubernetes_*.orig.tar.gz -C "$tree" --strip-components=1
# The vendored reflect2 1.0.1 crashes under Go >= 1.18: Debian's 1.0.2 instead.
rm -f "$tree"/vendor/github.com/modern-go/reflect2/*.go "$tree"/vendor/github.com/modern-go/reflect2/*.s
cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go "$tree/vendor/github.com/modern-go/reflect2/"
cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.s "$tree/vendor/github.com/modern-go/reflect2/" 2>/dev/null || true
rm -f "$tree"/vendor/github.com/modern-go/reflect2/*_test.go
# Root cannot lower oom_score_adj on this machine kind: pods keep the default.
sed -i 's/defaultSandboxOOMAdj\s*int\s*=\s*-998/defaultSandboxOOMAdj int = 0/; s/defaultSandboxOOMAdj = -998/defaultSandboxOOMAdj = 0/' "$tree/pkg/kubelet/dockershim/docker_sandbox.go"
sed -i 's/guaranteedOOMScoreAdj\s*int\s*=\s*-997/guaranteedOOMScoreAdj int = 0/; s/guaranteedOOMScoreAdj = -997/guaranteedOOMScoreAdj = 0/' "$tree/pkg/kubelet/qos/policy.go"
grep -q "defaultSandboxOOMAdj.*= 0" "$tree/pkg/kubelet/dockershim/docker_sandbox.go"
grep -q "guaranteedOOMScoreAdj.*= 0" "$tree/pkg/kubelet/qos/policy.go"
export GOPATH=$dir GO111MODULE=off CGO_ENABLED=0 GOFLAGS= PATH=/usr/lib/go-1.19/bin:$PATH GOCACHE=$dir/gocache
cd "$tree"
# The OpenAPI definitions the tarball lacks.
go build -o "$dir/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
# The packages that ask for OpenAPI definitions, as Makefile.generated_files finds them: any Go
# file with a `+k8s:openapi-gen=` tag, all but code-generator's and sample-apiserver's.
packages=$(grep -Rl --include='*.go' '+k8s:openapi-gen=' pkg vendor/k8s.io 2>/dev/null \
  | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' -e '_test.go$' \
  | xargs -n1 dirname | LC_ALL=C sort -u | sed 's#^#k8s.io/kubernetes/#' | paste -sd, -)
"$dir/openapi-gen" --input-dirs "$packages" --output-base "$dir/src" \
  --output-package k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
  --go-header-file hack/boilerplate/boilerplate.generatego.txt >/dev/null 2>"$dir/openapi-gen.log" || { tail -20 "$dir/openapi-gen.log"; exit 1; }
version="-X k8s.io/component-base/version.gitVersion=v1.20.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=20"
mkdir -p "$dir/bin"
nice go build -tags selinux,notest -trimpath -ldflags "-s -w $version" -o "$dir/bin/" \
  ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/kube-scheduler ./cmd/kubelet ./cmd/kubectl
# The pause container, without a registry.
gcc -Os -static -o "$dir/pause" build/pause/linux/pause.c
echo "kubernetes: built in $dir/bin"
