//! Cluster access, the one leaf that live, bench and the tests share: the kubectl-style flags
//! ([`ClusterArgs`]) and from `--kubeconfig` / `--context` (or the usual inference: KUBECONFIG,
//! ~/.kube/config, in-cluster) to a `kube::Config`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// How long one request may wait for its answer unless `--request-timeout` says otherwise. kubectl waits
/// forever by default; a tool that CI runs must end.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How much longer kube's own connect and write timeouts are than `--request-timeout`.
const CONNECT_MARGIN: Duration = Duration::from_secs(1);

/// The kubectl-style flags of every command that talks to a cluster, accepted before or after the command.
#[derive(Debug, Clone, clap::Args)]
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
    /// How long to wait for the answer to one request (connect, TLS handshake, and for a list, get or discovery
    /// the whole answer); 0 = no limit per request. Watches are long-lived and end with the window instead.
    #[arg(long = "request-timeout", global = true, value_name = "DURATION", default_value = "30s",
          value_parser = crate::duration::parse_arg)]
    pub request_timeout: Duration,
}

impl Default for ClusterArgs {
    fn default() -> Self {
        Self {
            namespace: None,
            context: None,
            kubeconfig: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

impl ClusterArgs {
    /// The client configuration these flags select (see [`config`]).
    pub async fn config(&self) -> Result<kube::Config> {
        config(self.kubeconfig.as_deref(), self.context.as_deref()).await
    }

    /// A client that announces itself with `user_agent`, and the context's default namespace.
    pub async fn client(&self, user_agent: &'static str) -> Result<(kube::Client, String)> {
        let mut config = self.config().await?;
        self.bound(&mut config);
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_static(user_agent),
        ));
        let namespace = config.default_namespace.clone();
        let client = kube::Client::try_from(config).context("building the kube client")?;
        Ok((client, namespace))
    }
}

impl ClusterArgs {
    /// `--request-timeout` as a limit: `None` for 0 (kubectl's "no timeout").
    pub fn request_timeout(&self) -> Option<Duration> {
        (!self.request_timeout.is_zero()).then_some(self.request_timeout)
    }

    /// Bounds connecting (TCP and the TLS handshake: kube's connect timeout wraps the TLS connector) and sending
    /// by `--request-timeout`. The read timeout stays unset: it is an idle timer on the connection, and a quiet
    /// watch gets no byte for minutes (kube-rs bounds watches by its own idle timeout, `live` by its window).
    /// Whole answers of lists, gets and discovery are bounded where they are awaited.
    fn bound(&self, config: &mut kube::Config) {
        if let Some(t) = self.request_timeout() {
            // A second more than the caller's own bound on the request, which names the request when it fires;
            // this one still bounds what the caller does not (a watch's connect).
            let t = t.saturating_add(CONNECT_MARGIN);
            config.connect_timeout = Some(t);
            config.write_timeout = Some(t);
        }
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
