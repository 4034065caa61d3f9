# shellcheck shell=sh disable=SC2034  # the variables are for the scripts that source this file
# Pinned control-plane versions, sourced by the testenv scripts.
# The Kubernetes minor matches the k8s-openapi feature in Cargo.toml (v1_34); etcd is the version that
# Kubernetes release pins in its go.mod (go.etcd.io/etcd/server/v3). Change them with update-modules.sh.
KUBE_VERSION=v1.34.12
ETCD_VERSION=v3.6.4
# The workflow linter tests/integrations.rs runs on action.yml and .github/workflows (testenv/actionlint/go.mod).
ACTIONLINT_VERSION=v1.7.12

# Where built binaries live: outside the checkout, keyed by component and version.
TESTENV_CACHE=${CTRLAUDIT_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-ctrlaudit/testenv}
# `kubectl ctrlaudit demo` points start.sh at controller-tools' envtest binaries instead, when it downloaded them.
KUBE_APISERVER_BIN=${CTRLAUDIT_KUBE_APISERVER_BIN:-$TESTENV_CACHE/kube-apiserver-$KUBE_VERSION/kube-apiserver}
ETCD_BIN=${CTRLAUDIT_ETCD_BIN:-$TESTENV_CACHE/etcd-$ETCD_VERSION/etcd}
# The live accuracy corpus's kubectl (testenv/kubectl), built at the same Kubernetes version.
KUBECTL_BIN=$TESTENV_CACHE/kubectl-$KUBE_VERSION/kubectl
ACTIONLINT_BIN=$TESTENV_CACHE/actionlint-$ACTIONLINT_VERSION/actionlint
