#!/bin/sh
# Builds kube-apiserver from the Go module proxy into the test cache, once:
# the real API server is the authority on which Gateway API objects are
# valid (internal/kubeapitest starts it with Debian's etcd-server).
# Usage: tools/build-kube-apiserver.sh VERSION OUTPUT
#
# k8s.io/kubernetes is not meant to be required as a module: its go.mod
# replaces its 31 staging modules (k8s.io/api, apimachinery, apiserver,
# client-go, ...) with directories of its own tree. A small wrapper module in
# a temporary directory requires k8s.io/kubernetes VERSION and replaces each
# of those modules with the same module published at v0.MINOR.PATCH, the
# release the staging tree was tagged as. Measured by the issue's author:
# about 3 minutes and 2.1 GB of memory on an idle machine.
set -eu
version=$1 out=$2
[ -x "$out" ] && exit 0
go=${GO:-go}
staging=v0.${version#v1.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "building kube-apiserver $version (staging modules $staging) into $out (once)"

modfile=$(cd "$tmp" && GOFLAGS=-mod=mod $go mod download -json "k8s.io/kubernetes@$version" |
	sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -f "$modfile" ] || { echo "build-kube-apiserver: no go.mod for k8s.io/kubernetes@$version" >&2; exit 1; }

{
	printf 'module gwretry.io/kube-apiserver-build\n\ngo 1.24.0\n\ngodebug default=go1.24\n\n'
	printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "$version"
	# Each "k8s.io/X => ./staging/src/k8s.io/X" becomes "k8s.io/X => k8s.io/X v0.M.P".
	sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*$#\t\1 => \1 '"$staging"'#p' "$modfile"
	printf ')\n'
} >"$tmp/go.mod"
n=$(grep -c " => k8s.io/" "$tmp/go.mod")
echo "replacing $n staging modules with $staging"
[ "$n" -gt 0 ] || { echo "build-kube-apiserver: no staging replace lines in $modfile" >&2; exit 1; }

pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$(echo "$version" | cut -d. -f2)"
mkdir -p "$(dirname "$out")"
cd "$tmp"
GOFLAGS=-mod=mod $go get "k8s.io/kubernetes/cmd/kube-apiserver@$version"
GOFLAGS=-mod=mod $go build -trimpath -ldflags "$ldflags" -o "$out.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$out.tmp" "$out"
"$out" --version
