#!/usr/bin/env bash
# scan of Go against its parse floor, side by side in one run, on the Go corpus (corpus/go-modules.tsv, fetched
# from the Go module proxy and checked against go.sum's hashes by corpus/accuracy.py). The floor
# (crates/ctrlaudit-scan/examples/go_parse_floor.rs) is scan's own walk and a tree-sitter-go parse of every `.go`
# file on rayon, nothing else. The two commands run in turn, round after round (after one warm-up round), so
# that a machine whose speed drifts slows both alike; the ratio is the median of the rounds' ratios, as
# farm-bench --vs takes it. Prints each one's median wall time and peak RSS, and the ratios.
#
# Usage: benches/scan_go_floor.sh [runs]   (rounds; default 11)
# Env:   CTRLAUDIT_CORPUS_DIR  where the corpus goes (default $TMPDIR/ctrlaudit-corpus)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${CTRLAUDIT_CORPUS_DIR:-${TMPDIR:-/tmp}/ctrlaudit-corpus}
runs=${1:-11}
mkdir -p "$work"
# shellcheck source=benches/corpus.sh
. "$root/benches/corpus.sh"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin kubectl-ctrlaudit
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p ctrlaudit-scan --example go_parse_floor
target="${CARGO_TARGET_DIR:-$root/target}/release"
ours="$target/kubectl-ctrlaudit"
floor="$target/examples/go_parse_floor"
python3 "$root/corpus/accuracy.py" --dir "$work" --lang go --fetch-only
dir=$work/go


files=$(find "$dir" -name '*.go' | wc -l)
rounds=$work/rounds-go.txt
: >"$rounds"
for r in $(seq 0 "$runs"); do
	row="$(timed "$ours" scan "$dir" -o json --fail-on never) $(timed "$floor" "$dir")"
	# Round 0 warms the page cache and is not counted.
	[ "$r" -gt 0 ] && echo "$row" >>"$rounds"
done
python3 - "$files" "$rounds" <<'PY'
import statistics as st, sys
files, path = int(sys.argv[1]), sys.argv[2]
rows = [list(map(float, l.split())) for l in open(path) if l.strip()]
for i, name in enumerate(["kubectl-ctrlaudit scan", "parse floor (walk + tree-sitter-go)"]):
    print(f"go corpus {name:<36} {st.median(r[2 * i] for r in rows) / 1000:7.2f} s "
          f"{st.median(r[2 * i + 1] for r in rows) / 1024:8.1f} MB peak RSS  {files} files")
ratio = lambda i, j: st.median(r[i] / max(r[j], 1) for r in rows)
print(f"go corpus scan / floor: {ratio(0, 2):.2f}x time, {ratio(1, 3):.2f}x peak RSS "
      f"(medians of {len(rows)} rounds' ratios)")
PY
