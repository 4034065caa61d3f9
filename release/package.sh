#!/usr/bin/env bash
# Release archives, their checksums and the krew manifest, for archives uploaded to the GitHub release v$VERSION.
#
# Usage: release/package.sh archive TARGET   build TARGET and write dist/kubectl-ctrlaudit-v$VERSION-TARGET.tar.gz
#                                            (.zip for Windows): the binary, LICENSE and README.md
#        release/package.sh manifest         from the archives in dist/: dist/checksums.txt (sha256sum format)
#                                            and plugins/ctrlaudit.yaml from release/ctrlaudit.yaml.in
#        release/package.sh [TARGET...]      both, for the TARGETs (default: x86_64-unknown-linux-gnu)
# Targets: x86_64-unknown-linux-gnu, x86_64-unknown-linux-musl (static), aarch64-unknown-linux-gnu,
# x86_64-apple-darwin, aarch64-apple-darwin, x86_64-pc-windows-msvc; each needs its toolchain and linker
# (rustup target add …; .github/workflows/release.yml builds each on its own runner).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
repository=$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -1)

# krew's os and arch of a target; nothing for a target krew has no platform for.
platform_of() {
	case $1 in
	x86_64-unknown-linux-gnu) echo "linux amd64" ;;
	aarch64-unknown-linux-gnu) echo "linux arm64" ;;
	x86_64-apple-darwin) echo "darwin amd64" ;;
	aarch64-apple-darwin) echo "darwin arm64" ;;
	x86_64-pc-windows-msvc) echo "windows amd64" ;;
	# The static build is for containers and old distributions; krew takes the glibc one on linux/amd64.
	x86_64-unknown-linux-musl) echo "" ;;
	*) echo "release/package.sh: unknown target $1" >&2; return 1 ;;
	esac
}

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

archive() {
	local target=$1 name exe stage
	platform_of "$target" >/dev/null
	cargo build --release --locked --target "$target"
	name="kubectl-ctrlaudit-v$version-$target"
	exe=kubectl-ctrlaudit
	case $target in *windows*) exe=kubectl-ctrlaudit.exe ;; esac
	stage=$(mktemp -d)
	cp "target/$target/release/$exe" LICENSE README.md "$stage/"
	mkdir -p dist
	case $target in
	*windows*)
		(cd "$stage" && 7z a -tzip -bd "$OLDPWD/dist/$name.zip" . >/dev/null)
		echo "dist/$name.zip"
		;;
	*)
		# Reproducible archive: fixed order, owner and times (GNU tar; macOS runners have gtar).
		local tar=tar
		if command -v gtar >/dev/null 2>&1; then tar=gtar; fi
		"$tar" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$stage" -cf - . | gzip -n >"dist/$name.tar.gz"
		echo "dist/$name.tar.gz"
		;;
	esac
	rm -r "$stage"
}

manifest() {
	local platforms="" file base target os arch bin
	: >dist/checksums.txt
	for file in dist/kubectl-ctrlaudit-v"$version"-*; do
		base=$(basename "$file")
		case $base in *.tar.gz | *.zip) ;; *) continue ;; esac
		printf '%s  %s\n' "$(sha256 "$file")" "$base" >>dist/checksums.txt
		target=${base#kubectl-ctrlaudit-v"$version"-}
		target=${target%.tar.gz}
		target=${target%.zip}
		read -r os arch <<<"$(platform_of "$target")"
		[ -n "$os" ] || continue
		bin=kubectl-ctrlaudit
		[ "$os" = windows ] && bin=kubectl-ctrlaudit.exe
		platforms+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $repository/releases/download/v$version/$base
    sha256: $(sha256 "$file")
    bin: $bin
    files:
      - from: $bin
        to: .
      - from: LICENSE
        to: .
"
	done
	if [ -z "$platforms" ]; then
		echo "release/package.sh: no archive of v$version in dist/" >&2
		exit 1
	fi
	mkdir -p plugins
	awk -v version="$version" -v repository="$repository" -v platforms="$platforms" '
		/@PLATFORMS@/ { printf "%s", platforms; next }
		{ gsub(/@VERSION@/, version); gsub(/@REPOSITORY@/, repository); print }
	' release/ctrlaudit.yaml.in >plugins/ctrlaudit.yaml
	echo "wrote dist/checksums.txt and plugins/ctrlaudit.yaml"
}

case ${1:-} in
archive)
	[ $# = 2 ] || { echo "usage: release/package.sh archive TARGET" >&2; exit 2; }
	archive "$2"
	;;
manifest) manifest ;;
*)
	targets=("$@")
	[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-gnu)
	for t in "${targets[@]}"; do archive "$t"; done
	manifest
	;;
esac
