#!/usr/bin/env bash
# The fuzz smoke that CI runs (test.sh calls it with CI=true): every target for SECONDS (default 5) on its corpus
# seeded from the fixtures, so that an input that crashes or hangs a parser fails the run. Installs what it
# needs: the nightly toolchain (minimal profile) and cargo-fuzz.
#
# Usage: fuzz/smoke.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup toolchain list | grep -q '^nightly'; then
	echo "fuzz/smoke.sh: installing the nightly toolchain (cargo-fuzz needs it)" >&2
	rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
	echo "fuzz/smoke.sh: installing cargo-fuzz" >&2
	cargo install --locked cargo-fuzz
fi
start=$(date +%s)
fuzz/run.sh "${1:-5}"
echo "fuzz/smoke.sh: every target ran without a crash ($(($(date +%s) - start))s with the build)" >&2
