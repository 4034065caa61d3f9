#!/usr/bin/env bash
# scan against its parse floor and ast-grep, side by side in one run, on two corpora:
#   vendored   the `cargo vendor` tree of benches/scan_speed.sh (most crates use no kube: selection matters)
#   kube-heavy the published operators of corpus/crates.tsv (every file is real work: the analysis matters)
# The floor (crates/ctrlaudit-scan/examples/parse_floor.rs) is scan's own walk and `syn::parse_file` of every
# `.rs` file on rayon, nothing else. scan also reads the kube-using dependencies it finds (their `src/`): on the
# kube-heavy corpus the floor and ast-grep run a second time over the tree plus those dependencies, the files
# the default scan reads, so that scan with its dependencies is compared like for like too. The four commands run in turn, round after round (after one warm-up round),
# so that a machine whose speed drifts slows all four alike; each ratio is the median of the rounds' ratios,
# as farm-bench --vs takes it. Prints each tool's median wall time and peak RSS, and the ratios.
#
# Usage: benches/scan_floor.sh [runs] [kube_heavy_runs]   (rounds per corpus; default 3 and 11)
# Env:   CTRLAUDIT_CORPUS_DIR  where the corpora and ast-grep go (default $TMPDIR/ctrlaudit-corpus)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${CTRLAUDIT_CORPUS_DIR:-${TMPDIR:-/tmp}/ctrlaudit-corpus}
runs=${1:-3}
heavy_runs=${2:-11}
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

# The dependencies scan reads on the kube-heavy corpus: the kube-using crates its Cargo.lock files name, which
# corpus/accuracy.py fetched into the corpus's CARGO_HOME (scan's "dependencies read").
deps=("$CARGO_HOME"/registry/src/corpus/*/src)

# tool I DIR: runs the I-th command on DIR. --no-deps parses the same files as the floor (2) and ast-grep (3);
# the default scan (0) the same as the floor and ast-grep over the tree and the dependencies (4, 5).
tool() {
	case $1 in
	0) timed "$ours" scan "$2" -o json --fail-on never ;;
	1) timed "$ours" scan "$2" -o json --fail-on never --no-deps ;;
	2) timed "$floor" "$2" ;;
	3) timed "$sg" scan --inline-rules "$SG_RULES" --json=compact "$2" ;;
	4) timed "$floor" "$2" "${deps[@]}" ;;
	5) timed "$sg" scan --inline-rules "$SG_RULES" --json=compact "$2" "${deps[@]}" ;;
	esac
}

printf '%-11s %-30s %9s %13s %8s\n' corpus tool "wall (s)" "peak RSS (MB)" "files"
for corpus in vendored kube-heavy; do
	dir=$work/$corpus
	n=$heavy_runs
	[ "$corpus" = vendored ] && dir=$work/vendor && n=$runs
	files=$(find "$dir" -name '*.rs' | wc -l)
	rounds=$work/rounds-$corpus.txt
	: >"$rounds"
	# Round 0 warms the page cache and is not counted.
	tools="0 1 2 3"
	[ "$corpus" = kube-heavy ] && tools="0 1 2 3 4 5"
	for r in $(seq 0 "$n"); do
		row=""
		for i in $tools; do
			row="$row $(tool "$i" "$dir")"
		done
		[ "$r" -gt 0 ] && echo "$row" >>"$rounds"
	done
	python3 - "$corpus" "$files" "$rounds" <<'PY'
import statistics as st, sys
corpus, files, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = [list(map(float, l.split())) for l in open(path) if l.strip()]
ms = lambda i: [r[2 * i] for r in rows]
kb = lambda i: [r[2 * i + 1] for r in rows]
names = ["kubectl-ctrlaudit scan", "scan --no-deps", "parse floor (walk + syn)", "ast-grep (3 patterns)",
         "floor, tree + dependencies", "ast-grep, tree + dependencies"]
tools = len(rows[0]) // 2
for i, name in enumerate(names[:tools]):
    print(f"{corpus:<11} {name:<30} {st.median(ms(i)) / 1000:9.2f} {st.median(kb(i)) / 1024:13.1f} {files:8d}")
ratio = lambda a, b: st.median(x / max(y, 1) for x, y in zip(a, b))
# Each scan against the floor and ast-grep over the same files.
pairs = [(0, "scan", 2, 3), (1, "scan --no-deps", 2, 3)]
if tools == 6:
    pairs = [(0, "scan (with its dependencies)", 4, 5), (1, "scan --no-deps", 2, 3)]
for i, label, f, a in pairs:
    print(f"{corpus:<11} {label} / floor: {ratio(ms(i), ms(f)):.2f}x time, {ratio(kb(i), kb(f)):.2f}x peak RSS; "
          f"ast-grep / {label}: {ratio(ms(a), ms(i)):.2f}x time (medians of {len(rows)} rounds' ratios)")
PY
done
