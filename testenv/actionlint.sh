#!/bin/sh
# Builds actionlint (the workflow linter tests/integrations.rs runs) from its Go module (testenv/actionlint/go.mod)
# into testenv's binary cache, or reuses it when it reports the pinned version; prints its path. Kept apart from
# build.sh, which `demo` embeds to build the control plane only.
#
# Usage: testenv/actionlint.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testenv/versions.sh
. "$here/versions.sh"

if "$ACTIONLINT_BIN" -version 2>/dev/null | grep -qx -- "$ACTIONLINT_VERSION"; then
	echo "$ACTIONLINT_BIN"
	exit 0
fi
if ! command -v go >/dev/null 2>&1; then
	echo "actionlint.sh: 'go' is not on PATH; it builds actionlint $ACTIONLINT_VERSION from source" >&2
	exit 1
fi
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0
mkdir -p "$(dirname "$ACTIONLINT_BIN")"
# Built next to the target and renamed, so an interrupted build never leaves a half-written binary.
tmp=$ACTIONLINT_BIN.tmp.$$
if ! (cd "$here/actionlint" && go build -trimpath -ldflags "-s -w" -o "$tmp" github.com/rhysd/actionlint/cmd/actionlint); then
	rm -f "$tmp"
	echo "actionlint.sh: building actionlint $ACTIONLINT_VERSION failed" >&2
	exit 1
fi
mv -f "$tmp" "$ACTIONLINT_BIN"
if ! "$ACTIONLINT_BIN" -version | grep -qx -- "$ACTIONLINT_VERSION"; then
	echo "actionlint.sh: $ACTIONLINT_BIN does not report $ACTIONLINT_VERSION" >&2
	exit 1
fi
echo "$ACTIONLINT_BIN"
