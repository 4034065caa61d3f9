#!/usr/bin/env bash
# Installs a released kubectl-ctrlaudit for this machine: downloads the archive of VERSION for the runner's OS
# and architecture, checks it against the release's checksums.txt, and unpacks the binary into DEST. What the
# GitHub Action runs first (action.yml); it builds from source only when this exits 3.
#
# Usage: release/fetch.sh VERSION DEST          (VERSION without the leading v, e.g. 0.1.0)
# Env:   CTRLAUDIT_RELEASES  where releases are (default: the repository's GitHub releases); the archive is
#                            $CTRLAUDIT_RELEASES/v$VERSION/kubectl-ctrlaudit-v$VERSION-$TARGET.tar.gz (.zip on Windows)
#        CTRLAUDIT_TARGET    the Rust target to fetch (default: this machine's)
# Exit:  0 installed; 3 no release archive for this version and platform (build from source instead);
#        1 anything else, a checksum that does not match above all (nothing is installed then).
set -euo pipefail

if [ $# != 2 ]; then
	echo "usage: release/fetch.sh VERSION DEST" >&2
	exit 1
fi
version=${1#v}
dest=$2
releases=${CTRLAUDIT_RELEASES:-https://github.com/kubectl-ctrlaudit/kubectl-ctrlaudit/releases/download}

target=${CTRLAUDIT_TARGET:-}
if [ -z "$target" ]; then
	case "$(uname -s)/$(uname -m)" in
	Linux/x86_64) target=x86_64-unknown-linux-gnu ;;
	Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-gnu ;;
	Darwin/x86_64) target=x86_64-apple-darwin ;;
	Darwin/arm64) target=aarch64-apple-darwin ;;
	MINGW*/x86_64 | MSYS*/x86_64 | CYGWIN*/x86_64) target=x86_64-pc-windows-msvc ;;
	*)
		echo "fetch.sh: no release archive for $(uname -s)/$(uname -m)" >&2
		exit 3
		;;
	esac
fi
case $target in
*windows*) archive="kubectl-ctrlaudit-v$version-$target.zip" exe=kubectl-ctrlaudit.exe ;;
*) archive="kubectl-ctrlaudit-v$version-$target.tar.gz" exe=kubectl-ctrlaudit ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# get URL FILE: 0, or 3 when the server has no such file (404), or 1.
get() {
	local code
	code=$(curl -sSL --retry 3 --connect-timeout 10 --max-time 300 -o "$2" -w '%{http_code}' "$1") || return 1
	case $code in
	200) return 0 ;;
	404) return 3 ;;
	*)
		echo "fetch.sh: $1: HTTP $code" >&2
		return 1
		;;
	esac
}
status=0
get "$releases/v$version/checksums.txt" "$work/checksums.txt" || status=$?
if [ "$status" = 0 ]; then
	get "$releases/v$version/$archive" "$work/$archive" || status=$?
fi
if [ "$status" = 3 ]; then
	echo "fetch.sh: no $archive in release v$version" >&2
	exit 3
fi
[ "$status" = 0 ] || exit 1

want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$work/checksums.txt")
if [ -z "$want" ]; then
	echo "fetch.sh: $archive is not in the release's checksums.txt" >&2
	exit 1
fi
if command -v sha256sum >/dev/null 2>&1; then
	got=$(sha256sum "$work/$archive" | cut -d' ' -f1)
else
	got=$(shasum -a 256 "$work/$archive" | cut -d' ' -f1)
fi
if [ "$got" != "$want" ]; then
	echo "fetch.sh: checksum mismatch for $archive: got $got, checksums.txt says $want; nothing installed" >&2
	exit 1
fi

mkdir -p "$work/unpacked"
case $archive in
*.zip) unzip -q "$work/$archive" -d "$work/unpacked" ;;
*) tar -xzf "$work/$archive" -C "$work/unpacked" ;;
esac
if [ ! -f "$work/unpacked/$exe" ]; then
	echo "fetch.sh: $archive holds no $exe" >&2
	exit 1
fi
mkdir -p "$dest"
mv -f "$work/unpacked/$exe" "$dest/$exe"
chmod +x "$dest/$exe"
echo "fetch.sh: installed kubectl-ctrlaudit v$version ($target) into $dest"
