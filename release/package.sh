#!/usr/bin/env bash
# Builds the release archive of each target, computes its sha256 and writes the krew manifest
# plugins/ctrlaudit.yaml from release/ctrlaudit.yaml.in, for archives uploaded to the GitHub release v$VERSION.
#
# Usage: release/package.sh [TARGET...]        default: x86_64-unknown-linux-gnu (linux/amd64)
# Other targets need their toolchain and linker (rustup target add …): aarch64-unknown-linux-gnu (linux/arm64),
# x86_64-apple-darwin and aarch64-apple-darwin (darwin/amd64, darwin/arm64; build on macOS).
# Archives go to dist/; upload them to the release, then submit the manifest to krew-index.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
repository=$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -1)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-unknown-linux-gnu)

platform_of() {
	case $1 in
	x86_64-unknown-linux-gnu) echo "linux amd64" ;;
	aarch64-unknown-linux-gnu) echo "linux arm64" ;;
	x86_64-apple-darwin) echo "darwin amd64" ;;
	aarch64-apple-darwin) echo "darwin arm64" ;;
	*) echo "release/package.sh: no krew platform for target $1" >&2; return 1 ;;
	esac
}

mkdir -p dist
platforms=
for target in "${targets[@]}"; do
	read -r os arch <<<"$(platform_of "$target")"
	cargo build --release --locked --target "$target"
	name="kubectl-ctrlaudit-v$version-$target"
	stage=$(mktemp -d)
	cp "target/$target/release/kubectl-ctrlaudit" LICENSE README.md "$stage/"
	# Reproducible archive: fixed order, owner and times.
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$stage" -cf - . | gzip -n >"dist/$name.tar.gz"
	rm -r "$stage"
	sha=$(sha256sum "dist/$name.tar.gz" | cut -d' ' -f1)
	echo "dist/$name.tar.gz $sha"
	platforms+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $repository/releases/download/v$version/$name.tar.gz
    sha256: $sha
    bin: kubectl-ctrlaudit
    files:
      - from: kubectl-ctrlaudit
        to: .
      - from: LICENSE
        to: .
"
done

mkdir -p plugins
awk -v version="$version" -v repository="$repository" -v platforms="$platforms" '
	/@PLATFORMS@/ { printf "%s", platforms; next }
	{ gsub(/@VERSION@/, version); gsub(/@REPOSITORY@/, repository); print }
' release/ctrlaudit.yaml.in >plugins/ctrlaudit.yaml
echo "wrote plugins/ctrlaudit.yaml"
