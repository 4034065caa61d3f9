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

# 1. The corpus: every dependency of this crate and of published controllers, vendored.
if [ ! -f "$work/vendor.done" ]; then
	rm -rf "$work/vendor"
	echo "building the corpus in $work/vendor (cargo vendor)…" >&2
	mkdir -p "$work/corpus/src"
	cat >"$work/corpus/Cargo.toml" <<TOML
[package]
name = "ctrlaudit-corpus"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
kubectl-ctrlaudit = { path = "$root" }
# Published crates with kube-rs controllers and watchers, old and new kube versions.
kubert = { version = "0.25", features = ["runtime", "lease", "index", "requeue", "prometheus-client", "rustls-tls"] }
kube-lease-manager = "0.6"
kube-leader-election = "0.44"
kube-coordinate = "=2.0.0-rc.0"
krator = "0.6"
kuberator = "0.5"
k8s-insider = "0.4"
TOML
	echo 'fn main() {}' >"$work/corpus/src/main.rs"
	(cd "$work/corpus" && cargo vendor --quiet --versioned-dirs "$work/vendor" >/dev/null)
	touch "$work/vendor.done"
fi

# 2. The tools.
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin kubectl-ctrlaudit
ours="${CARGO_TARGET_DIR:-$root/target}/release/kubectl-ctrlaudit"
sg=$(command -v ast-grep || true)
if [ -z "$sg" ]; then
	if [ ! -x "$work/venv/bin/ast-grep" ]; then
		python3 -m venv "$work/venv"
		"$work/venv/bin/pip" install --quiet ast-grep-cli
	fi
	sg="$work/venv/bin/ast-grep"
fi

files=$(find "$work/vendor" -name '*.rs' | wc -l)
lines=$(find "$work/vendor" -name '*.rs' -print0 | xargs -0 cat | wc -l)

# Three patterns of the kind the rules look for.
rules='id: requeue
language: rust
rule: { pattern: "Action::requeue($D)" }
---
id: patch
language: rust
rule: { pattern: "$API.patch($$$ARGS)" }
---
id: controller
language: rust
rule: { pattern: "Controller::new($$$ARGS)" }'

# Runs a command `runs` times after one warm-up; prints "median_seconds max_rss_kb".
measure() {
	local t=() rss=0
	"$@" >/dev/null 2>&1 || true
	for _ in $(seq "$runs"); do
		/usr/bin/time -f '%e %M' -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || true
		read -r s kb <"$work/time.txt"
		t+=("$s")
		[ "$kb" -gt "$rss" ] && rss=$kb
	done
	printf '%s\n' "${t[@]}" | sort -n | awk -v r="$rss" '{a[NR]=$1} END {print a[int((NR+1)/2)], r}'
}

read -r ours_s ours_kb < <(measure "$ours" scan "$work/vendor" -o json --fail-on never)
read -r sg_s sg_kb < <(measure "$sg" scan --inline-rules "$rules" --json=compact "$work/vendor")
"$ours" scan "$work/vendor" --fail-on never -o json >"$work/findings.json" || true

awk -v f="$files" -v l="$lines" -v os="$ours_s" -v ok="$ours_kb" -v ss="$sg_s" -v sk="$sg_kb" -v n="$(nproc)" 'BEGIN {
	printf "corpus: %d Rust files, %d lines (cargo vendor), %d cores\n", f, l, n
	printf "%-34s %9s %14s %12s\n", "tool", "wall (s)", "lines/s", "peak RSS (MB)"
	printf "%-34s %9.2f %14.0f %12.1f\n", "kubectl-ctrlaudit scan (all rules)", os, l / (os > 0 ? os : 0.001), ok / 1024
	printf "%-34s %9.2f %14.0f %12.1f\n", "ast-grep scan (3 patterns)", ss, l / (ss > 0 ? ss : 0.001), sk / 1024
	printf "speed-up: %.1fx; findings in %s\n", ss / (os > 0 ? os : 0.001), "'"$work/findings.json"'"
}'
