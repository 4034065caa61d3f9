//! Cluster access, the one leaf that live, bench and the tests share: the kubectl-style flags
//! ([`ClusterArgs`]) and from `--kubeconfig` / `--context` (or the usual inference: KUBECONFIG,
//! ~/.kube/config, in-cluster) to a `kube::Config`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// The kubectl-style flags of every command that talks to a cluster, accepted before or after the command.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClusterArgs {
    /// Namespace (for commands that talk to a cluster).
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Path to the kubeconfig file.
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
}

impl ClusterArgs {
    /// The client configuration these flags select (see [`config`]).
    pub async fn config(&self) -> Result<kube::Config> {
        config(self.kubeconfig.as_deref(), self.context.as_deref()).await
    }

    /// A client that announces itself with `user_agent`, and the context's default namespace.
    pub async fn client(&self, user_agent: &'static str) -> Result<(kube::Client, String)> {
        let mut config = self.config().await?;
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_static(user_agent),
        ));
        let namespace = config.default_namespace.clone();
        let client = kube::Client::try_from(config).context("building the kube client")?;
        Ok((client, namespace))
    }
}

/// Loads the client configuration. With neither a file nor a context, it infers one the way kubectl does;
/// a context without a file is looked up in the default kubeconfig.
pub async fn config(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<kube::Config> {
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    match kubeconfig {
        Some(p) => {
            let kc = Kubeconfig::read_from(p)
                .with_context(|| format!("reading kubeconfig {}", p.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .with_context(|| format!("loading kubeconfig {}", p.display()))
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .context("loading the kubeconfig"),
        None => kube::Config::infer().await.context(
            "no kubeconfig found (set KUBECONFIG or pass --kubeconfig) and not in a cluster",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_or_broken_file_names_the_file() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let missing = dir.path().join("nope");
        let e = format!(
            "{:#}",
            config(Some(&missing), None).await.expect_err("missing")
        );
        assert!(
            e.contains("reading kubeconfig") && e.contains("nope"),
            "{e}"
        );
        let broken = dir.path().join("broken");
        std::fs::write(&broken, "apiVersion: v1\nclusters: [").expect("write");
        let e = format!(
            "{:#}",
            config(Some(&broken), None).await.expect_err("broken")
        );
        assert!(e.contains("broken"), "{e}");
    }
}
