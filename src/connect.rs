//! Cluster access, the one leaf that live, bench and the tests share: from `--kubeconfig` / `--context` (or
//! the usual inference: KUBECONFIG, ~/.kube/config, in-cluster) to a `kube::Config`.

use std::path::Path;

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};

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
