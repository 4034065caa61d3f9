#!/usr/bin/env bash
# scan on a generated tree of pathological files next to a real controller: every kind of nesting syn recurses
# through at 10x the depth that used to abort the process, chains of 100,000 calls, CRD YAML nested 200,000 deep,
# 1 GB sparse files, a symlink to /dev/zero, FIFOs named *.rs and Cargo.lock. Prints, per output format, the exit
# code, what was found (CA001 per pathological file, the controller's own finding), wall time and peak RSS, as a
# Markdown table for README's Reliability section. A benchmark, not a test: nothing here is asserted on time.
#
# Usage: benches/scan_pathological.sh [BIN]   (default: builds and uses target/release/kubectl-ctrlaudit)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
	cargo build --release --quiet
	bin=target/release/kubectl-ctrlaudit
fi
command -v /usr/bin/time >/dev/null || {
	echo "needs GNU time (/usr/bin/time; apt-get install time)" >&2
	exit 2
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ctrlaudit-pathological.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src" "$dir/crds"
printf '[package]\nname = "op"\nversion = "0.1.0"\n\n[dependencies]\nkube = "1"\n' >"$dir/Cargo.toml"
cp fixtures/scan/CA202-volatile-value-written-every-reconcile/bad_annotation_timestamp.rs "$dir/src/controller.rs"

# n copies of a string, without a process per copy.
rep() { python3 -c 'import sys; sys.stdout.write(sys.argv[1] * int(sys.argv[2]))' "$1" "$2"; }
# The depths that aborted the process before the depth budget (issue 22): generics ~9,300, closures ~16,000;
# the other kinds at 160,000, beyond any of them.
expr() { printf 'use kube::Api;\nfn f() {\n    let x = %s;\n}\n' "$1"; }
printf 'use kube::Api;\ntype T = %su8%s;\n' "$(rep 'Vec<' 93000)" "$(rep '>' 93000)" >"$dir/src/deep_generics.rs"
expr "$(rep '|a| ' 160000)0" >"$dir/src/deep_closures.rs"
printf 'use kube::Api;\ntype T = %su8;\n' "$(rep '&' 160000)" >"$dir/src/deep_refs.rs"
expr "$(rep '!' 160000)x" >"$dir/src/deep_not.rs"
expr "x$(rep ' as u8' 160000)" >"$dir/src/deep_casts.rs"
expr "x$(rep '.a' 160000)" >"$dir/src/deep_fields.rs"
expr "x$(rep ' + x' 160000)" >"$dir/src/deep_plus.rs"
expr "x$(rep '?' 160000)" >"$dir/src/deep_try.rs"
expr "$(rep '(' 160000)1$(rep ')' 160000)" >"$dir/src/deep_brackets.rs"
for i in 1 2 3; do
	expr "x$(rep '.a()' 100000)" >"$dir/src/chain_$i.rs"
	truncate -s 1G "$dir/src/sparse_$i.rs"
done
printf 'kind: CustomResourceDefinition\nspec: %s1%s\n' "$(rep '[' 200000)" "$(rep ']' 200000)" >"$dir/crds/deep.yaml"
ln -s /dev/zero "$dir/src/zero.rs"
mkfifo "$dir/src/fifo.rs" "$dir/Cargo.lock" "$dir/crds/fifo.yaml"
pathological=$(find "$dir" -mindepth 1 \( -name 'deep_*' -o -name 'chain_*' -o -name 'sparse_*' -o -name 'zero.rs' -o -name 'fifo.*' -o -name Cargo.lock \) | wc -l)
bytes=$(du -sh --apparent-size "$dir" | cut -f1)

echo "| output | exit | CA001 (files) | notes | controller's CA202 | wall | peak RSS |"
echo "|---|---|---|---|---|---|---|"
for output in json full sarif; do
	out="$dir/../$(basename "$dir").$output"
	set +e
	/usr/bin/time -f '%e %M' -o "$dir.time" "$bin" scan "$dir" -o "$output" >"$out" 2>/dev/null
	code=$?
	set -e
	# GNU time puts "Command exited with non-zero status N" first when the exit code is not 0.
	read -r wall rss < <(tail -n 1 "$dir.time")
	if [ "$output" = json ]; then
		summary=$(python3 - "$out" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
ca001 = sorted({f["subject"]["file"].rsplit("/", 1)[-1] for f in v["findings"] if f["code"] == "CA001"})
ca202 = any(f["code"] == "CA202" for f in v["findings"])
print(f"{len(ca001)} | {len(v['notes'])} | {'yes' if ca202 else 'MISSING'}")
PY
)
	else
		ca202=$(grep -c CA202 "$out" || true)
		summary="$(grep -c CA001 "$out" || true) lines | - | $([ "$ca202" -gt 0 ] && echo yes || echo MISSING)"
	fi
	echo "| $output | $code | $summary | ${wall} s | $((rss / 1024)) MB |"
	rm -f "$out" "$dir.time"
done
echo
echo "$pathological pathological entries beside the controller, $bytes apparent size; $(nproc) cores."
