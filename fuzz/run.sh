#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60) on a corpus seeded from the fixtures; exits non-zero on the first
# target that finds a crash. Needs the nightly toolchain and cargo-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
# FUZZ_SANITIZER=none builds without AddressSanitizer (2-3x the executions per second). The workspace forbids
# unsafe code, so for the scan and live targets ASan only watches dependencies; crd_yaml's YAML parser
# (unsafe-libyaml, a C translation) is the one to keep under ASan. Stack overflows, timeouts and the RSS limit are
# caught by libFuzzer either way.
sanitizer=${FUZZ_SANITIZER:-address}
targets=(scan_file scan_go scan_crate scan_tree scan_nesting crd_yaml config baseline suppressions audit_log prometheus replay)
# libFuzzer's default -max_len (4,096 bytes) never reaches deep nesting, long chains or a 400 KB YAML: the text
# targets take inputs up to 1 MiB. scan_nesting and scan_tree build depth and size from short inputs.
max_len() {
	case $1 in
	scan_file | scan_go | scan_crate | crd_yaml | audit_log | prometheus | replay) echo 1048576 ;;
	*) echo 65536 ;;
	esac
}
# scan_tree builds a scan's thread pool per input; a dropped rayon pool ends its threads after the input returns,
# which LeakSanitizer's per-input check takes for a leak (the threads free everything as they exit).
extra_flags() {
	case $1 in
	scan_tree) echo -detect_leaks=0 ;;
	esac
}

seed() { # target, files...
	local dir="fuzz/corpus/$1"
	shift
	mkdir -p "$dir"
	for f in "$@"; do
		[ -f "$f" ] && cp "$f" "$dir/$(echo "$f" | tr '/' '_')"
	done
	return 0
}
shopt -s globstar nullglob
seed scan_file fixtures/scan/**/*.rs src/bench/variants/*.rs
seed scan_crate fixtures/scan/**/*.rs
seed scan_go fixtures/scan/**/*.go
# Go nested past the front end's depth bound (CA001), and just under it.
for n in 300 3000; do
	printf 'package x\nimport ctrl "sigs.k8s.io/controller-runtime"\nvar x = %s1%s\nvar _ = ctrl.Result{}\n' \
		"$(printf '(%.0s' $(seq $n))" "$(printf ')%.0s' $(seq $n))" >"fuzz/corpus/scan_go/deep_$n.go"
done
# Deep shapes as seeds of the text targets, so that mutation starts where the recursion is.
mkdir -p fuzz/corpus/scan_file
for n in 3000 20000; do
	printf 'use kube::Api;\ntype T = %s;\nfn f() { let x = %s0; let y = x%s; }\n' \
		"$(printf 'Vec<%.0s' $(seq $n))u8$(printf '>%.0s' $(seq $n))" "$(printf '|a| %.0s' $(seq $n))" \
		"$(printf '.a()%.0s' $(seq $n))" >"fuzz/corpus/scan_file/deep_$n.rs"
done
seed crd_yaml fixtures/crds/*.yaml fixtures/scan/**/*.yaml
seed config fixtures/**/ctrlaudit.toml
seed baseline fixtures/**/*baseline*.json
seed suppressions fixtures/scan/CA002-unused-suppression/*.rs
seed audit_log fixtures/live/**/audit*.jsonl
# The recordings keep metrics parsed; the exposition text seed is written here.
mkdir -p fuzz/corpus/prometheus
cat >fuzz/corpus/prometheus/seed.prom <<'PROM'
# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="409",component="apiserver",group="bench.ctrlaudit.io",resource="widgets",verb="PUT",version="v1alpha1"} 12
apiserver_request_total{code="200",group="bench.ctrlaudit.io",resource="widgets",subresource="status",verb="PATCH"} 3.5e+03
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="widget",result="success"} 42
workqueue_depth{name="widget"} 0
rest_client_requests_total{code="200",host="10.0.0.1:443",method="GET"} 7
PROM
seed replay fixtures/live/**/snapshot.json fixtures/live/**/expected.json

for t in "${targets[@]}"; do
	echo "fuzz/run.sh: $t for ${secs}s" >&2
	mkdir -p "fuzz/corpus/$t"
	# shellcheck disable=SC2046  # the extra flags are words
	cargo +nightly fuzz run -s "$sanitizer" "$t" "fuzz/corpus/$t" -- -max_total_time="$secs" -max_len="$(max_len "$t")" \
		-rss_limit_mb=2048 -timeout=10 $(extra_flags "$t")
done
