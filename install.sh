#!/bin/sh
# Builds kubectl-ctrlaudit in release mode and installs it where kubectl finds plugins, so that
# `kubectl ctrlaudit …` works. Safe to run again: it rebuilds and replaces the binary.
#
# Usage: ./install.sh            installs to ~/.local/bin
#        PREFIX=/usr/local ./install.sh   installs to /usr/local/bin
set -eu

cd "$(dirname "$0")"
prefix=${PREFIX:-$HOME/.local}
bindir=$prefix/bin

if ! command -v cargo >/dev/null 2>&1; then
	echo "install.sh: cargo is not on PATH; install Rust (stable) with rustup: https://rustup.rs" >&2
	exit 1
fi

echo "install.sh: building kubectl-ctrlaudit (release)…"
cargo build --release --locked --bin kubectl-ctrlaudit

mkdir -p "$bindir"
# Copy to a temporary name and rename, so that a running copy is never half-written.
cp target/release/kubectl-ctrlaudit "$bindir/.kubectl-ctrlaudit.tmp"
chmod 755 "$bindir/.kubectl-ctrlaudit.tmp"
mv -f "$bindir/.kubectl-ctrlaudit.tmp" "$bindir/kubectl-ctrlaudit"
echo "install.sh: installed $bindir/kubectl-ctrlaudit ($("$bindir/kubectl-ctrlaudit" --version))"
# kubectl (1.26 and later) completes a plugin's arguments by running kubectl_complete-<plugin> from PATH; the
# binary answers under that name.
ln -sf kubectl-ctrlaudit "$bindir/kubectl_complete-ctrlaudit"
echo "install.sh: linked $bindir/kubectl_complete-ctrlaudit (completion of 'kubectl ctrlaudit <TAB>')"

case ":$PATH:" in
*":$bindir:"*)
	echo "install.sh: $bindir is on PATH: run 'kubectl ctrlaudit --help' (or 'kubectl-ctrlaudit --help')"
	;;
*)
	echo "install.sh: $bindir is not on your PATH. Add it, e.g. in ~/.profile:"
	echo "    export PATH=\"$bindir:\$PATH\""
	echo "then run 'kubectl ctrlaudit --help'."
	;;
esac
