#!/usr/bin/env bash
# scan's accuracy on the published operators of corpus/crates.tsv against the labels in corpus/labels.tsv.
# Builds the release binary, fetches the crates (checked against crates.io's index checksums) into
# ${CTRLAUDIT_CORPUS_DIR:-/tmp/ctrlaudit-corpus}, scans them and prints precision and recall per rule.
# Needs network access to static.crates.io and python3. Extra arguments go to corpus/accuracy.py.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec python3 corpus/accuracy.py --bin target/release/kubectl-ctrlaudit "$@"
