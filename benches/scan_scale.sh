#!/usr/bin/env bash
# scan at scale: a generated tree of FILES Rust files (default 100,000: 100 crates of 1,000 files, copies of the
# scan fixtures and the bench variants, so that the prefilter passes and every file is parsed and judged) plus
# three pathological files (a 10 MB generated file, brackets nested 10,000 deep, a 1 MB line). Prints the time,
# the peak RSS, the files seen and parsed, and the note given for each pathological file. A measurement, not a
# test: the figures go to README ("Reliability").
#
# Usage: benches/scan_scale.sh [FILES]     (needs a release build: cargo build --release)
# Env:   CTRLAUDIT_SCALE_DIR  where the tree goes (default $TMPDIR/ctrlaudit-scale; rebuilt when FILES changes)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
files=${1:-100000}
work=${CTRLAUDIT_SCALE_DIR:-${TMPDIR:-/tmp}/ctrlaudit-scale}
bin=$root/target/release/kubectl-ctrlaudit
[ -x "$bin" ] || { echo "scan_scale.sh: build it first: cargo build --release" >&2; exit 1; }

if [ "$(cat "$work/files" 2>/dev/null)" != "$files" ]; then
	rm -rf "$work"
	mkdir -p "$work/tree"
	echo "scan_scale.sh: generating $files files in $work/tree…" >&2
	python3 - "$root" "$work/tree" "$files" <<'PY'
import pathlib, sys
root, tree, n = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
seeds = sorted(root.glob("fixtures/scan/**/*.rs")) + sorted(root.glob("src/bench/variants/*.rs"))
texts = [p.read_text() for p in seeds]
per_crate = 1000
for c in range((n + per_crate - 1) // per_crate):
    crate = tree / f"crate{c:03}"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(f'[package]\nname = "crate{c:03}"\nversion = "0.1.0"\n')
    for i in range(min(per_crate, n - c * per_crate)):
        (crate / "src" / f"m{i:04}.rs").write_text(texts[(c * per_crate + i) % len(texts)])
patho = tree / "pathological" / "src"
patho.mkdir(parents=True)
(tree / "pathological" / "Cargo.toml").write_text('[package]\nname = "pathological"\nversion = "0.1.0"\n')
head = "use kube::{Api, runtime::Controller};\n"
lines, i = [head], 0
while sum(map(len, lines)) < 10 * 1024 * 1024:
    lines.append(f"pub fn f{i}(api: &Api<Widget>) -> u64 {{ let y = {i}u64.wrapping_mul(31); y ^ (y >> 3) }}\n")
    i += 1
(patho / "generated.rs").write_text("".join(lines))
(patho / "deep.rs").write_text(head + "fn f() { let x = " + "(" * 10000 + "1" + ")" * 10000 + "; }\n")
(patho / "long_line.rs").write_text(head + 'fn f() { let s = "' + "a" * (1 << 20) + '"; }\n')
PY
	echo "$files" >"$work/files"
fi

echo "scan_scale.sh: scanning $(find "$work/tree" -name '*.rs' | wc -l) files ($(du -sh "$work/tree" | cut -f1))…" >&2
/usr/bin/time -f '%e %M' -o "$work/time" "$bin" scan "$work/tree" -o json --fail-on never >"$work/out.json"
read -r secs rss_kb <"$work/time"
python3 - "$work/out.json" "$secs" "$rss_kb" <<'PY'
import json, sys
out, secs, rss = json.load(open(sys.argv[1])), float(sys.argv[2]), int(sys.argv[3])
stats = out.get("stats", {})
print(f"time {secs:.1f} s, peak RSS {rss / 1024:.0f} MiB; {stats}")
for f in out["findings"]:
    if "/pathological/" in f["subject"].get("file", ""):
        print(f"  {f['code']} {f['subject']['file'].split('/tree/')[-1]}: {f['message']}")
codes = {}
for f in out["findings"]:
    codes[f["code"]] = codes.get(f["code"], 0) + 1
print(f"findings: {len(out['findings'])} {dict(sorted(codes.items()))} (CA001 includes the unparsable fixtures copied in)")
PY
