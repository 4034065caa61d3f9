#!/bin/sh
# Builds kube-apiserver and etcd from the published Go modules (the wrapper modules next to this script) into
# the binary cache, or reuses them: a binary already there that reports the pinned version is never rebuilt.
#
# Usage: testenv/build.sh [--force]
# Env:   CTRLAUDIT_TESTENV_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ctrlaudit/testenv)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testenv/versions.sh
. "$here/versions.sh"

force=0
for a in "$@"; do
	case $a in
	--force) force=1 ;;
	-h | --help) sed -n '2,7p' "$0"; exit 0 ;;
	*) echo "build.sh: unknown argument: $a" >&2; exit 2 ;;
	esac
done

# Go is needed only for a build: cached binaries that report the pinned versions run without it.
need_go() {
	if ! command -v go >/dev/null 2>&1; then
		echo "build.sh: 'go' is not on PATH. testenv builds kube-apiserver and etcd from source and needs Go >= 1.25:" >&2
		echo "  install it from https://go.dev/doc/install (or your package manager), then re-run." >&2
		exit 1
	fi
}
# The committed go.mod/go.sum are the build's inputs: never let go switch toolchains or rewrite them.
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0

# Prints the version a binary reports, or nothing when it is absent or broken (kubectl has no --version flag).
reported_version() {
	[ -x "$1" ] || return 0
	case $1 in
	*/kubectl) "$1" version --client 2>/dev/null | head -n 1 || true ;;
	*) "$1" --version 2>/dev/null | head -n 3 || true ;;
	esac
}

# build NAME VERSION WANT_PATTERN OUT MODULE_DIR PACKAGE LDFLAGS
build() {
	name=$1 version=$2 want=$3 out=$4 moddir=$5 pkg=$6 ldflags=$7
	if [ "$force" = 0 ] && reported_version "$out" | grep -q -- "$want"; then
		echo "build.sh: $name $version: reusing $out" >&2
		return 0
	fi
	need_go
	dir=$(dirname "$out")
	mkdir -p "$dir"
	echo "build.sh: $name $version: building into $out (a cold build takes several minutes) ..." >&2
	start=$(date +%s)
	# Build next to the target and rename, so an interrupted build never leaves a half-written binary
	# that a later run would trust.
	tmp=$out.tmp.$$
	if ! (cd "$moddir" && go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg"); then
		rm -f "$tmp"
		echo "build.sh: building $name $version failed (module $moddir)" >&2
		exit 1
	fi
	mv -f "$tmp" "$out"
	end=$(date +%s)
	got=$(reported_version "$out")
	if ! printf '%s\n' "$got" | grep -q -- "$want"; then
		echo "build.sh: $out reports '$got', expected it to match '$want'" >&2
		exit 1
	fi
	printf 'built %s %s in %ss on %s (%s)\n' "$name" "$version" "$((end - start))" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(go version)" >> "$dir/build.log"
	echo "build.sh: $name $version: built in $((end - start))s" >&2
}

# Serialise concurrent builds (two test runs at once) on the cache; flock is util-linux, absent on macOS.
mkdir -p "$TESTENV_CACHE"
if command -v flock >/dev/null 2>&1; then
	exec 9>"$TESTENV_CACHE/.build.lock"
	flock 9
fi

etcd_sha=$(printf '%s' "$ETCD_VERSION" | tr -d v)
build etcd "$ETCD_VERSION" "etcd Version: ${ETCD_VERSION#v}" "$ETCD_BIN" "$here/etcd" go.etcd.io/etcd/server/v3 \
	"-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v$etcd_sha"

minor=${KUBE_VERSION#v1.}
minor=${minor%%.*}
build kube-apiserver "$KUBE_VERSION" "Kubernetes $KUBE_VERSION\$" "$KUBE_APISERVER_BIN" "$here/kube-apiserver" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	"-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"

# kubectl for the live accuracy corpus (tests/live_corpus.rs): its user agent carries the version, as a real one's.
build kubectl "$KUBE_VERSION" "Client Version: $KUBE_VERSION\$" "$KUBECTL_BIN" "$here/kubectl" . \
	"-s -w -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitCommit=0000000000000000000000000000000000000000 -X k8s.io/client-go/pkg/version.gitTreeState=clean -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"

echo "KUBE_APISERVER_BIN=$KUBE_APISERVER_BIN"
echo "ETCD_BIN=$ETCD_BIN"
echo "KUBECTL_BIN=$KUBECTL_BIN"
