#!/usr/bin/env bash
# scan against its parse floor and ast-grep, side by side in one run, on two corpora:
#   vendored   the `cargo vendor` tree of benches/scan_speed.sh (most crates use no kube: selection matters)
#   kube-heavy the published operators of corpus/crates.tsv (every file is real work: the analysis matters)
# The floor (crates/ctrlaudit-scan/examples/parse_floor.rs) is scan's own walk and `syn::parse_file` of every
# `.rs` file on rayon, nothing else. Prints each tool's median wall time and peak RSS, and the ratios.
#
# Usage: benches/scan_floor.sh [runs]      (default 3 runs each after a warm-up; the median is reported)
# Env:   CTRLAUDIT_CORPUS_DIR  where the corpora and ast-grep go (default $TMPDIR/ctrlaudit-corpus)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${CTRLAUDIT_CORPUS_DIR:-${TMPDIR:-/tmp}/ctrlaudit-corpus}
runs=${1:-3}
mkdir -p "$work"
# shellcheck source=benches/corpus.sh
. "$root/benches/corpus.sh"

vendored_tree "$work" "$root"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin kubectl-ctrlaudit
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p ctrlaudit-scan --example parse_floor
target="${CARGO_TARGET_DIR:-$root/target}/release"
ours="$target/kubectl-ctrlaudit"
floor="$target/examples/parse_floor"
sg=$(ast_grep "$work")

# The kube-heavy corpus: corpus/run.sh's crates (fetched and checked against crates.io's checksums by
# corpus/accuracy.py), copied side by side, with the kube-using dependencies it fetched into its CARGO_HOME.
if [ ! -f "$work/kube-heavy.done" ]; then
	echo "fetching the kube-heavy corpus (corpus/accuracy.py)…" >&2
	python3 "$root/corpus/accuracy.py" --bin "$ours" --dir "$work" >/dev/null
	rm -rf "$work/kube-heavy"
	mkdir -p "$work/kube-heavy"
	while IFS=$'\t' read -r name version _; do
		case $name in '#'* | '') continue ;; esac
		cp -r "$work/$name-$version" "$work/kube-heavy/"
	done <"$root/corpus/crates.tsv"
	touch "$work/kube-heavy.done"
fi
export CARGO_HOME="$work/cargo-home"

printf '%-11s %-30s %9s %13s %8s\n' corpus tool "wall (s)" "peak RSS (MB)" "files"
for corpus in vendored kube-heavy; do
	dir=$work/$corpus
	[ "$corpus" = vendored ] && dir=$work/vendor
	files=$(find "$dir" -name '*.rs' | wc -l)
	read -r scan_s scan_kb < <(measure "$work" "$runs" "$ours" scan "$dir" -o json --fail-on never)
	# scan also reads the source of the kube-using dependencies it finds (the floor parses the tree only):
	# --no-deps parses the same files as the floor.
	read -r nodeps_s nodeps_kb < <(measure "$work" "$runs" "$ours" scan "$dir" -o json --fail-on never --no-deps)
	read -r floor_s floor_kb < <(measure "$work" "$runs" "$floor" "$dir")
	read -r sg_s sg_kb < <(measure "$work" "$runs" "$sg" scan --inline-rules "$SG_RULES" --json=compact "$dir")
	for row in "kubectl-ctrlaudit scan:$scan_s:$scan_kb" "scan --no-deps:$nodeps_s:$nodeps_kb" "parse floor (walk + syn):$floor_s:$floor_kb" "ast-grep (3 patterns):$sg_s:$sg_kb"; do
		IFS=: read -r tool s kb <<<"$row"
		awk -v c="$corpus" -v t="$tool" -v s="$s" -v kb="$kb" -v f="$files" \
			'BEGIN { printf "%-11s %-30s %9.2f %13.1f %8d\n", c, t, s, kb / 1024, f }'
	done
	awk -v c="$corpus" -v a="$scan_s" -v n="$nodeps_s" -v fl="$floor_s" -v g="$sg_s" -v ak="$scan_kb" -v nk="$nodeps_kb" -v fk="$floor_kb" 'BEGIN {
		z = 0.001
		printf "%-11s scan / floor: %.2fx time, %.2fx peak RSS; ast-grep / scan: %.1fx time\n",
			c, a / (fl > 0 ? fl : z), ak / (fk > 0 ? fk : z), g / (a > 0 ? a : z)
		printf "%-11s scan --no-deps / floor: %.2fx time, %.2fx peak RSS; ast-grep / scan --no-deps: %.1fx time\n",
			c, n / (fl > 0 ? fl : z), nk / (fk > 0 ? fk : z), g / (n > 0 ? n : z)
	}'
done
