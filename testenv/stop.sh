#!/usr/bin/env bash
# Stops a control plane started by start.sh: only the processes it recorded (and only while the recorded pid
# still runs that binary with that state dir), then removes its temp dirs. Safe to run twice and after a crash.
#
# Usage: testenv/stop.sh [--keep] [STATE_DIR]
#   STATE_DIR  defaults to $CTRLAUDIT_TESTENV_DIR
#   --keep     keep the state dir (logs, audit log, PKI); the etcd data dir is removed regardless
set -eu

keep=0
dir=
for a in "$@"; do
	case $a in
	--keep) keep=1 ;;
	-h | --help)
		sed -n '2,7p' "$0"
		exit 0
		;;
	-*)
		echo "stop.sh: unknown argument: $a" >&2
		exit 2
		;;
	*) dir=$a ;;
	esac
done
dir=${dir:-${CTRLAUDIT_TESTENV_DIR:-}}
if [ -z "$dir" ]; then
	echo "stop.sh: no state dir given and CTRLAUDIT_TESTENV_DIR is not set; nothing to stop" >&2
	exit 0
fi
if [ ! -d "$dir" ]; then
	echo "stop.sh: $dir does not exist; nothing to stop" >&2
	exit 0
fi
# A state dir is recognised by the files start.sh writes; refuse to rm -rf anything else.
if [ ! -e "$dir/.ctrlaudit-testenv" ]; then
	echo "stop.sh: $dir is not a testenv state dir; leaving it alone" >&2
	exit 1
fi
dir=$(cd "$dir" && pwd)

# is_ours PID NAME: the pid still runs the binary start.sh launched for this state dir (pids get reused).
is_ours() {
	local pid=$1 name=$2 args
	kill -0 "$pid" 2>/dev/null || return 1
	args=$(ps -o args= -p "$pid" 2>/dev/null) || return 1
	case $args in
	*"$name"*) ;;
	*) return 1 ;;
	esac
	case $args in
	*"$dir"* | *"$(cat "$dir/etcd-data-dir" 2>/dev/null || echo "$dir")"*) return 0 ;;
	*) return 1 ;;
	esac
}

stop_one() {
	local name=$1 pidfile=$dir/$1.pid pid
	[ -f "$pidfile" ] || return 0
	pid=$(cat "$pidfile")
	case $pid in '' | *[!0-9]*)
		rm -f "$pidfile"
		return 0
		;;
	esac
	if ! is_ours "$pid" "$name"; then
		rm -f "$pidfile"
		return 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 100); do
		is_ours "$pid" "$name" || break
		sleep 0.1
	done
	if is_ours "$pid" "$name"; then
		echo "stop.sh: $name (pid $pid) ignored SIGTERM for 10s; sending SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.2
	fi
	rm -f "$pidfile"
	echo "stop.sh: stopped $name (pid $pid)" >&2
}

# The API server first, so it does not log a storm of etcd connection errors on the way down.
stop_one kube-apiserver
stop_one etcd

if [ -f "$dir/etcd-data-dir" ]; then
	data=$(cat "$dir/etcd-data-dir")
	case $data in
	*/ctrlaudit-testenv-etcd.*) rm -rf -- "$data" ;;
	esac
	rm -f "$dir/etcd-data-dir"
fi

if [ "$keep" = 0 ]; then
	case $dir in
	/ | "$HOME") echo "stop.sh: refusing to remove $dir" >&2 ;;
	*) rm -rf -- "$dir" ;;
	esac
else
	echo "stop.sh: kept $dir" >&2
fi
