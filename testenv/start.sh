#!/usr/bin/env bash
# Starts a throwaway control plane for the tests: etcd (data on tmpfs, no fsync) and kube-apiserver (client
# certificate auth, RBAC) on free loopback ports, with an admin and a read-only identity.
#
# Usage: testenv/start.sh [--audit] [--apiserver-flag FLAG]... [--state-dir DIR]
#                         [--port N] [--etcd-port N] [--timeout SECONDS]
#   --audit               enable the audit log (RequestResponse for custom resources, Metadata otherwise)
#   --apiserver-flag FLAG extra kube-apiserver flag, repeatable, e.g. --feature-gates=ConcurrentWatchObjectDecode=true
#   --state-dir DIR       where pids, PKI, kubeconfigs and logs go (default: a new dir under ${TMPDIR:-/tmp})
#   --port N, --etcd-port N  fixed ports instead of free ones (fails if taken)
#   --timeout SECONDS     how long to wait for each component to become ready (default 90)
#
# On success the last lines on stdout are shell `export` lines (also in DIR/env): eval them or source DIR/env.
# Binaries come from testenv/build.sh (the cache); this script never builds.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=testenv/versions.sh
. "$here/versions.sh"

audit=0
extra_flags=()
state_dir=
api_port=
etcd_port=
timeout=${CTRLAUDIT_TESTENV_TIMEOUT:-90}

die() {
	echo "start.sh: $*" >&2
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--audit) audit=1 ;;
	--apiserver-flag)
		[ $# -ge 2 ] || die "--apiserver-flag needs a value"
		extra_flags+=("$2")
		shift
		;;
	--apiserver-flag=*) extra_flags+=("${1#--apiserver-flag=}") ;;
	--state-dir)
		[ $# -ge 2 ] || die "--state-dir needs a value"
		state_dir=$2
		shift
		;;
	--port)
		[ $# -ge 2 ] || die "--port needs a value"
		api_port=$2
		shift
		;;
	--etcd-port)
		[ $# -ge 2 ] || die "--etcd-port needs a value"
		etcd_port=$2
		shift
		;;
	--timeout)
		[ $# -ge 2 ] || die "--timeout needs a value"
		timeout=$2
		shift
		;;
	-h | --help)
		sed -n '2,15p' "$0"
		exit 0
		;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
	shift
done

for b in "$ETCD_BIN" "$KUBE_APISERVER_BIN"; do
	[ -x "$b" ] || die "binary missing: $b (run testenv/build.sh first)"
done
for t in openssl curl base64; do
	command -v "$t" >/dev/null 2>&1 || die "'$t' is not on PATH; install it (e.g. apt-get install $t)"
done

start_ts=$(date +%s)

port_in_use() {
	if command -v ss >/dev/null 2>&1; then
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
	fi
}

used_ports=" "
# Sets $picked (not echoed: a $(subshell) would lose used_ports and could not stop the script).
pick_port() {
	local p tries=0
	while :; do
		# Below the Linux ephemeral range, so outgoing connections do not take it between pick and bind.
		p=$((20000 + RANDOM % 12000))
		tries=$((tries + 1))
		[ $tries -lt 200 ] || die "could not find a free loopback port"
		case $used_ports in *" $p "*) continue ;; esac
		port_in_use "$p" && continue
		used_ports="$used_ports$p "
		picked=$p
		return 0
	done
}

check_port() {
	if port_in_use "$1"; then
		local who=
		command -v ss >/dev/null 2>&1 && who=$(ss -Hltnp "sport = :$1" 2>/dev/null | head -n 1)
		die "port $1 on 127.0.0.1 is already taken${who:+ ($who)}"
	fi
	used_ports="$used_ports$1 "
}

# Ports are checked before anything is created, so a taken port leaves nothing behind.
if [ -n "$etcd_port" ]; then check_port "$etcd_port"; else pick_port && etcd_port=$picked; fi
if [ -n "$api_port" ]; then check_port "$api_port"; else pick_port && api_port=$picked; fi
pick_port && etcd_peer_port=$picked

if [ -z "$state_dir" ]; then
	state_dir=$(mktemp -d "${TMPDIR:-/tmp}/ctrlaudit-testenv.XXXXXX")
else
	mkdir -p "$state_dir"
	[ ! -e "$state_dir/kube-apiserver.pid" ] || die "$state_dir already holds a testenv (run testenv/stop.sh $state_dir first)"
fi
state_dir=$(cd "$state_dir" && pwd)
pki=$state_dir/pki
logs=$state_dir/logs
mkdir -p "$pki" "$logs"
# The marker lets stop.sh tell a state dir from any other dir before it removes anything.
echo "ctrlaudit testenv state dir, created by $0" >"$state_dir/.ctrlaudit-testenv"
# etcd's data is throwaway: tmpfs makes the bench's write rate depend on the API server, not the disk.
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=${TMPDIR:-/tmp}
etcd_data=$(mktemp -d "$shm/ctrlaudit-testenv-etcd.XXXXXX")
echo "$etcd_data" >"$state_dir/etcd-data-dir"
echo "$ETCD_BIN" >"$state_dir/etcd.bin"
echo "$KUBE_APISERVER_BIN" >"$state_dir/kube-apiserver.bin"

# Anything that fails from here on tears down what was started, so a failed start leaves nothing running.
started_ok=0
cleanup_on_failure() {
	if [ "$started_ok" = 0 ]; then
		echo "start.sh: start failed; stopping what was started (logs kept in $logs)" >&2
		"$here/stop.sh" --keep "$state_dir" >&2 || true
	fi
}
trap cleanup_on_failure EXIT


# ---------- PKI ----------
cat >"$pki/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, IP:10.0.0.1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
EOF

ossl() {
	openssl "$@" >>"$logs/openssl.log" 2>&1 || die "openssl $1 failed; see $logs/openssl.log"
}

ossl req -x509 -new -nodes -newkey rsa:2048 -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 3650 \
	-config "$pki/openssl.cnf" -extensions ca -subj "/CN=ctrlaudit-testenv-ca"

# issue NAME SUBJECT EXTENSIONS
issue() {
	ossl req -new -nodes -newkey rsa:2048 -keyout "$pki/$1.key" -out "$pki/$1.csr" -config "$pki/openssl.cnf" -subj "$2"
	ossl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -out "$pki/$1.crt" \
		-days 3650 -extfile "$pki/openssl.cnf" -extensions "$3"
}
issue apiserver "/CN=kube-apiserver" server
issue admin "/O=system:masters/CN=ctrlaudit-admin" client
issue readonly "/CN=ctrlaudit-readonly" client
ossl genrsa -out "$pki/sa.key" 2048
ossl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"

# ---------- etcd ----------
tail_log() {
	echo "--- last lines of $1 ---" >&2
	tail -n "${2:-25}" "$1" >&2 || true
	echo "--- (full log: $1) ---" >&2
}

# why_dead NAME LOG: the reason a process exited early, as far as its log says.
why_dead() {
	if grep -qi 'address already in use' "$2" 2>/dev/null; then
		echo "$1 exited: a port it needs is already taken"
	else
		echo "$1 exited before becoming ready"
	fi
}

etcd_url=http://127.0.0.1:$etcd_port
"$ETCD_BIN" \
	--name=ctrlaudit-testenv \
	--data-dir="$etcd_data" \
	--listen-client-urls="$etcd_url" \
	--advertise-client-urls="$etcd_url" \
	--listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
	--initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
	--initial-cluster="ctrlaudit-testenv=http://127.0.0.1:$etcd_peer_port" \
	--unsafe-no-fsync=true \
	--quota-backend-bytes=$((4 * 1024 * 1024 * 1024)) \
	--log-level=warn \
	</dev/null >"$logs/etcd.log" 2>&1 &
echo $! >"$state_dir/etcd.pid"
etcd_pid=$!

deadline=$(($(date +%s) + timeout))
until curl -fsS --max-time 2 "$etcd_url/health" 2>/dev/null | grep -q '"health":"true"'; do
	if ! kill -0 "$etcd_pid" 2>/dev/null; then
		tail_log "$logs/etcd.log"
		die "$(why_dead etcd "$logs/etcd.log") (port $etcd_port, peer port $etcd_peer_port)"
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		tail_log "$logs/etcd.log"
		die "etcd not healthy at $etcd_url/health within ${timeout}s"
	fi
	sleep 0.2
done

# ---------- kube-apiserver ----------
api_url=https://127.0.0.1:$api_port
apiserver_args=(
	--etcd-servers="$etcd_url"
	--cert-dir="$pki"
	--tls-cert-file="$pki/apiserver.crt"
	--tls-private-key-file="$pki/apiserver.key"
	--secure-port="$api_port"
	--bind-address=127.0.0.1
	--advertise-address=127.0.0.1
	--endpoint-reconciler-type=none
	--service-cluster-ip-range=10.0.0.0/24
	--authorization-mode=RBAC
	--client-ca-file="$pki/ca.crt"
	--service-account-issuer="$api_url"
	--service-account-key-file="$pki/sa.pub"
	--service-account-signing-key-file="$pki/sa.key"
	--disable-admission-plugins=ServiceAccount
	--allow-privileged=true
)

if [ "$audit" = 1 ]; then
	audit_log=$logs/audit.log
	# Audit rules match on listed groups only; there is no "group is not built in" selector. So the built-in
	# groups get Metadata and the final catch-all (RequestResponse) is what custom resources fall into.
	cat >"$state_dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*"]
  - level: Metadata
    nonResourceURLs: ["*"]
  - level: Metadata
    resources:
      - group: ""
      - group: admissionregistration.k8s.io
      - group: apiextensions.k8s.io
      - group: apiregistration.k8s.io
      - group: apps
      - group: authentication.k8s.io
      - group: authorization.k8s.io
      - group: autoscaling
      - group: batch
      - group: certificates.k8s.io
      - group: coordination.k8s.io
      - group: discovery.k8s.io
      - group: events.k8s.io
      - group: flowcontrol.apiserver.k8s.io
      - group: internal.apiserver.k8s.io
      - group: networking.k8s.io
      - group: node.k8s.io
      - group: policy
      - group: rbac.authorization.k8s.io
      - group: resource.k8s.io
      - group: scheduling.k8s.io
      - group: storage.k8s.io
      - group: storagemigration.k8s.io
  - level: RequestResponse
EOF
	apiserver_args+=(
		--audit-policy-file="$state_dir/audit-policy.yaml"
		--audit-log-path="$audit_log"
		--audit-log-format=json
		# blocking: the event is written before the response returns, so a test can read it right away.
		--audit-log-mode=blocking
		# 0 does not mean "never rotate": the log library then rotates at 100 MB, which the bench tests
		# reach, and a live test reading the file would lose what went to the rotated one.
		--audit-log-maxsize=1000000
	)
	echo "$audit_log" >"$state_dir/audit-log-path"
fi
apiserver_args+=("${extra_flags[@]+"${extra_flags[@]}"}")
printf '%s\n' "${apiserver_args[@]}" >"$state_dir/kube-apiserver.args"

"$KUBE_APISERVER_BIN" "${apiserver_args[@]}" </dev/null >"$logs/kube-apiserver.log" 2>&1 &
echo $! >"$state_dir/kube-apiserver.pid"
api_pid=$!

admin_curl() {
	curl -sS --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"
}

deadline=$(($(date +%s) + timeout))
last=
while :; do
	last=$(admin_curl -o /dev/null -w '%{http_code}' "$api_url/readyz" 2>&1 || true)
	[ "$last" = 200 ] && break
	if ! kill -0 "$api_pid" 2>/dev/null; then
		tail_log "$logs/kube-apiserver.log"
		die "$(why_dead kube-apiserver "$logs/kube-apiserver.log") (port $api_port)"
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		tail_log "$logs/kube-apiserver.log"
		echo "--- $api_url/readyz?verbose ---" >&2
		admin_curl "$api_url/readyz?verbose" 2>&1 | grep -v '^\[+\]' | tail -n 20 >&2 || true
		die "kube-apiserver not ready at $api_url/readyz within ${timeout}s (last answer: ${last:-none})"
	fi
	sleep 0.25
done

# /readyz alone does not prove storage and auth work end to end: read a real object as the admin.
code=$(admin_curl -o "$logs/probe.json" -w '%{http_code}' "$api_url/api/v1/namespaces/default" || true)
if [ "$code" != 200 ]; then
	tail_log "$logs/kube-apiserver.log"
	die "kube-apiserver is ready but GET /api/v1/namespaces/default answered ${code:-nothing} (body in $logs/probe.json)"
fi

# ---------- read-only identity ----------
# Only get/list/watch on everything (and /metrics): what `live` is allowed to do in a real cluster.
post() {
	local path=$1 body=$2 code
	code=$(admin_curl -o "$logs/rbac.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data "$body" "$api_url$path" || true)
	case $code in
	201 | 409) ;;
	*) die "POST $path answered ${code:-nothing}: $(cat "$logs/rbac.json" 2>/dev/null)" ;;
	esac
}
post /apis/rbac.authorization.k8s.io/v1/clusterroles '{
  "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
  "metadata": {"name": "ctrlaudit-readonly"},
  "rules": [
    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
    {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}
  ]}'
post /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{
  "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
  "metadata": {"name": "ctrlaudit-readonly"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ctrlaudit-readonly"},
  "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ctrlaudit-readonly"}]}'

# ---------- kubeconfigs ----------
b64() { base64 <"$1" | tr -d '\n'; }
# write_kubeconfig FILE USER CERT KEY
write_kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: ctrlaudit-testenv
    cluster:
      server: $api_url
      certificate-authority-data: $(b64 "$pki/ca.crt")
users:
  - name: $2
    user:
      client-certificate-data: $(b64 "$3")
      client-key-data: $(b64 "$4")
contexts:
  - name: $2@ctrlaudit-testenv
    context:
      cluster: ctrlaudit-testenv
      user: $2
      namespace: default
current-context: $2@ctrlaudit-testenv
EOF
	chmod 600 "$1"
}
write_kubeconfig "$state_dir/kubeconfig" ctrlaudit-admin "$pki/admin.crt" "$pki/admin.key"
write_kubeconfig "$state_dir/readonly.kubeconfig" ctrlaudit-readonly "$pki/readonly.crt" "$pki/readonly.key"

{
	echo "export KUBECONFIG='$state_dir/kubeconfig'"
	echo "export CTRLAUDIT_TESTENV_DIR='$state_dir'"
	echo "export CTRLAUDIT_TESTENV_READONLY_KUBECONFIG='$state_dir/readonly.kubeconfig'"
	echo "export CTRLAUDIT_TESTENV_APISERVER='$api_url'"
	if [ -x "$KUBECTL_BIN" ]; then echo "export CTRLAUDIT_TESTENV_KUBECTL='$KUBECTL_BIN'"; fi
	if [ "$audit" = 1 ]; then echo "export CTRLAUDIT_TESTENV_AUDIT_LOG='$audit_log'"; fi
} >"$state_dir/env"

started_ok=1
trap - EXIT
ready=$(($(date +%s) - start_ts))
{
	echo "start.sh: kube-apiserver $KUBE_VERSION ready at $api_url (etcd $ETCD_VERSION at $etcd_url) in ${ready}s"
	echo "start.sh: state and logs in $state_dir${audit_log:+; audit log: $audit_log}"
	echo "start.sh: stop with: $here/stop.sh $state_dir"
} >&2
cat "$state_dir/env"
