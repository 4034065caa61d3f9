// Command kubectl is kubectl itself, built from the published k8s.io/kubectl module at the testenv's Kubernetes
// version: the person and the deploy job of the live accuracy corpus (tests/live_corpus.rs) apply, label and
// annotate with the real thing, so their requests, user agent and field managers are kubectl's own. The same
// few lines as k8s.io/kubernetes/cmd/kubectl, without the cloud auth plugins.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
