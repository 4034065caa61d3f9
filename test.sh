#!/usr/bin/env bash
# The one command that runs every check and test: builds (or reuses) the testenv control plane, starts it
# with the audit log on, runs fmt, clippy and all tests against it, and always stops it again, also when a
# test fails or the run is interrupted.
#
# Usage: ./test.sh [extra args for `cargo test --all-targets`...]   e.g. ./test.sh -- --nocapture
# Env:   CI=true  missing Go is an error instead of a skip of the cluster tests; also runs the fuzz smoke
#        CTRLAUDIT_TESTENV_CACHE  where built binaries are cached (see testenv/versions.sh)
# shellcheck disable=SC2317  # the trap handlers are reached through trap
set -eu

cd "$(dirname "$0")"
root=$(pwd)

state_dir=
stop_testenv() {
	if [ -n "$state_dir" ]; then
		"$root/testenv/stop.sh" "$state_dir" || true
		state_dir=
	fi
}
on_signal() {
	trap - INT TERM
	stop_testenv
	echo "test.sh: interrupted" >&2
	exit 130
}
trap stop_testenv EXIT
trap on_signal INT TERM

ci=0
case ${CI:-} in true | 1) ci=1 ;; esac

# testenv makes its PKI with openssl and probes readiness with curl; the Action's SARIF filter is jq (its test
# runs it); the HTML report tests open the page in
# headless Chromium (Debian's chromium package; $CHROMIUM or another Chrome on PATH also does): install them
# where we can.
have_browser() {
	[ -n "${CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
		command -v google-chrome >/dev/null 2>&1
}
for tool in openssl curl jq chromium; do
	if [ "$tool" = chromium ] && have_browser; then
		continue
	fi
	if ! command -v "$tool" >/dev/null 2>&1; then
		if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
			echo "test.sh: installing $tool (apt-get)" >&2
			apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$tool" >/dev/null
		else
			echo "test.sh: '$tool' is not on PATH; install it (e.g. apt-get install $tool)" >&2
			exit 1
		fi
	fi
done

if command -v go >/dev/null 2>&1; then
	testenv/build.sh
	# The workflow linter of tests/integrations.rs, built into the same cache.
	ACTIONLINT_BIN=$(testenv/actionlint.sh)
	export ACTIONLINT_BIN
	# The state dir is known before start.sh returns (--state-dir), so the trap can clean up a start that is
	# interrupted half way.
	state_dir=$(mktemp -d "${TMPDIR:-/tmp}/ctrlaudit-testenv.XXXXXX")
	if ! testenv/start.sh --audit --state-dir "$state_dir" >/dev/null; then
		# start.sh already stopped what it started and printed why; keep its logs for the reader.
		echo "test.sh: testenv did not start; its logs are in $state_dir/logs" >&2
		state_dir=
		exit 1
	fi
	# shellcheck disable=SC1091
	. "$state_dir/env"
else
	msg="test.sh: 'go' is not on PATH. The cluster tests need a kube-apiserver and etcd that testenv/build.sh
  builds from source with Go >= 1.25: install it from https://go.dev/doc/install (or e.g. apt-get install golang-go
  if your distribution ships >= 1.25), then re-run ./test.sh."
	if [ "$ci" = 1 ]; then
		echo "$msg" >&2
		echo "test.sh: CI=true: cluster tests are never skipped; failing." >&2
		exit 1
	fi
	echo "$msg" >&2
	echo "test.sh: continuing without testenv: the cluster tests are listed as ignored, not run." >&2
	unset CTRLAUDIT_TESTENV_DIR
fi

# A clean clone builds once: incremental caches (several GB for this crate) would only cost disk there.
if [ "$ci" = 1 ]; then
	export CARGO_INCREMENTAL=0
fi

cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings

# The cluster tests are #[ignore]d so that a plain `cargo test` lists them as not run; with a testenv up they
# are included. Test-binary arguments go after the caller's own `--`, if any.
args=("$@")
if [ -n "$state_dir" ]; then
	case " $* " in
	*" -- "*) args+=(--include-ignored) ;;
	*) args+=(-- --include-ignored) ;;
	esac
fi

status=0
# --no-fail-fast: one failing target must not hide the results of the others.
cargo test --all-targets --no-fail-fast "${args[@]}" || status=$?
# In CI, a short run of every fuzz target on its seeds (fuzz/README.md): a parser that a known input crashes or
# hangs fails the run. CTRLAUDIT_FUZZ_SMOKE=0 skips it, =1 runs it outside CI.
if [ "${CTRLAUDIT_FUZZ_SMOKE:-$ci}" = 1 ]; then
	fuzz/smoke.sh || status=$?
fi
if [ "$status" != 0 ] && [ -n "$state_dir" ]; then
	# Keep the control plane's logs for the post-mortem; the processes still stop.
	"$root/testenv/stop.sh" --keep "$state_dir" || true
	echo "test.sh: tests failed; testenv logs kept in $state_dir/logs" >&2
	state_dir=
fi
exit "$status"
