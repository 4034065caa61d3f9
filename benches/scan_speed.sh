#!/usr/bin/env bash
# Scan speed and memory, side by side in one run: `kubectl-ctrlaudit scan` (the full rule set)
# against ast-grep running three comparable patterns, on a corpus of real Rust made with
# `cargo vendor` from this project's dependencies plus published kube-rs controllers.
#
# Usage: benches/scan_speed.sh [runs]      (default 3 runs each; the median is reported)
# Env:   CTRLAUDIT_CORPUS_DIR  where the corpus, ast-grep and results go (default $TMPDIR/ctrlaudit-corpus)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${CTRLAUDIT_CORPUS_DIR:-${TMPDIR:-/tmp}/ctrlaudit-corpus}
runs=${1:-3}
mkdir -p "$work"

# shellcheck source=benches/corpus.sh
. "$root/benches/corpus.sh"

# 1. The corpus: every dependency of this crate and of published controllers, vendored.
vendored_tree "$work" "$root"

# 2. The tools.
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin kubectl-ctrlaudit
ours="${CARGO_TARGET_DIR:-$root/target}/release/kubectl-ctrlaudit"
sg=$(ast_grep "$work")

files=$(find "$work/vendor" -name '*.rs' | wc -l)
lines=$(find "$work/vendor" -name '*.rs' -print0 | xargs -0 cat | wc -l)

read -r ours_s ours_kb < <(measure "$work" "$runs" "$ours" scan "$work/vendor" -o json --fail-on never)
read -r sg_s sg_kb < <(measure "$work" "$runs" "$sg" scan --inline-rules "$SG_RULES" --json=compact "$work/vendor")
"$ours" scan "$work/vendor" --fail-on never -o json >"$work/findings.json" || true

awk -v f="$files" -v l="$lines" -v os="$ours_s" -v ok="$ours_kb" -v ss="$sg_s" -v sk="$sg_kb" -v n="$(nproc)" 'BEGIN {
	printf "corpus: %d Rust files, %d lines (cargo vendor), %d cores\n", f, l, n
	printf "%-34s %9s %14s %12s\n", "tool", "wall (s)", "lines/s", "peak RSS (MB)"
	printf "%-34s %9.2f %14.0f %12.1f\n", "kubectl-ctrlaudit scan (all rules)", os, l / (os > 0 ? os : 0.001), ok / 1024
	printf "%-34s %9.2f %14.0f %12.1f\n", "ast-grep scan (3 patterns)", ss, l / (ss > 0 ? ss : 0.001), sk / 1024
	printf "speed-up: %.1fx; findings in %s\n", ss / (os > 0 ? os : 0.001), "'"$work/findings.json"'"
}'
