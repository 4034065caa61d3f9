#!/usr/bin/env bash
# What the scan benchmarks share (sourced by benches/scan_speed.sh, scan_floor.sh and scan_go_floor.sh): the
# vendored corpus, ast-grep from PyPI, its three patterns, the median-of-runs measurement and one timed run.

# The vendored corpus in $1/vendor: every dependency of this project ($2) and of published kube-rs controllers.
vendored_tree() {
	local work=$1 root=$2
	[ -f "$work/vendor.done" ] && return 0
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
}

# Prints the path of an ast-grep binary, installed from PyPI into $1/venv when none is on PATH.
ast_grep() {
	local work=$1 sg
	sg=$(command -v ast-grep || true)
	if [ -z "$sg" ]; then
		if [ ! -x "$work/venv/bin/ast-grep" ]; then
			python3 -m venv "$work/venv"
			"$work/venv/bin/pip" install --quiet ast-grep-cli
		fi
		sg="$work/venv/bin/ast-grep"
	fi
	echo "$sg"
}

# Three patterns of the kind the rules look for.
SG_RULES='id: requeue
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
export SG_RULES

# measure WORK RUNS CMD...: runs CMD RUNS times after one warm-up; prints "median_seconds max_rss_kb".
measure() {
	local work=$1 runs=$2 t=() rss=0 s kb
	shift 2
	"$@" >/dev/null 2>&1 || true
	for _ in $(seq "$runs"); do
		/usr/bin/time -f '%e %M' -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || true
		read -r s kb <"$work/time.txt"
		t+=("$s")
		[ "$kb" -gt "$rss" ] && rss=$kb
	done
	printf '%s\n' "${t[@]}" | sort -n | awk -v r="$rss" '{a[NR]=$1} END {print a[int((NR+1)/2)], r}'
}

# timed CMD...: (uses $work, the caller's corpus directory) "milliseconds peak_rss_kb" of one run of CMD (its output thrown away).
timed() {
	local t0 t1 kb
	t0=$(date +%s%N)
	/usr/bin/time -f '%M' -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || true
	t1=$(date +%s%N)
	read -r kb <"$work/time.txt"
	echo "$(((t1 - t0) / 1000000)) $kb"
}
