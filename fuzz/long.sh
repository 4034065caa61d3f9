#!/usr/bin/env bash
# The long fuzz runs behind the figures in fuzz/README.md: each target until 1,000,000 executions or MINUTES
# (default 30), whichever comes first, JOBS targets at a time (default 2), at low CPU priority. Prints one
# line per target: executions, seconds, coverage (edges), features, corpus size, crash or not.
#
# Usage: [FUZZ_SANITIZER=none] fuzz/long.sh [MINUTES] [JOBS] [TARGET...]   (see fuzz/run.sh on the sanitizer)
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-30}
jobs=${2:-2}
sanitizer=${FUZZ_SANITIZER:-address}
shift $(($# < 2 ? $# : 2))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scan_file scan_go scan_crate scan_tree scan_nesting baseline audit_log crd_yaml config suppressions prometheus replay)
# Seeds the corpora and builds every target (a 1-second run each).
FUZZ_SANITIZER=$sanitizer fuzz/run.sh 1 >/dev/null 2>&1
# The same -max_len per target as fuzz/run.sh.
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
export -f max_len extra_flags
mkdir -p fuzz/logs
run_one() {
	local t=$1 log=fuzz/logs/$1.log start end
	start=$(date +%s)
	if nice -n 19 cargo +nightly fuzz run -s "$sanitizer" "$t" "fuzz/corpus/$t" -- -runs=1000000 -max_total_time=$((minutes * 60)) -max_len="$(max_len "$t")" $(extra_flags "$t") \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
		result=ok
	else
		result="CRASH (see $log and fuzz/artifacts/$t/)"
	fi
	end=$(date +%s)
	local execs cov ft corp
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	printf '%s\t%s\t%ss\t%s\t%s\t%s\t%s\n' "$t" "${execs:-?}" "$((end - start))" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
}
export -f run_one
export minutes sanitizer
printf 'target\texecutions\ttime\tcoverage\tfeatures\tcorpus\tresult\n'
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'
