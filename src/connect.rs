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
    /// Act as this user (impersonation, as kubectl's --as: the API server checks that you may).
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// Act as this group (repeatable), with --as.
    #[arg(
        long = "as-group",
        global = true,
        value_name = "GROUP",
        requires = "as_user"
    )]
    pub as_groups: Vec<String>,
    /// Log level, as kubectl's -v: 6 or more prints each request to the API server (method, URL, status,
    /// time) on stderr.
    #[arg(
        short = 'v',
        long = "v",
        global = true,
        value_name = "LEVEL",
        default_value_t = 0
    )]
    pub verbosity: u8,
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
            as_user: None,
            as_groups: Vec::new(),
            verbosity: 0,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

impl ClusterArgs {
    /// The client configuration these flags select (see [`config`]).
    pub async fn config(&self) -> Result<kube::Config, ConfigError> {
        let mut config = config(self.kubeconfig.as_deref(), self.context.as_deref()).await?;
        impersonate(&mut config, self.as_user.as_deref(), &self.as_groups)?;
        Ok(config)
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
        let server: std::sync::Arc<str> =
            config.cluster_url.to_string().trim_end_matches('/').into();
        let builder =
            kube::client::ClientBuilder::try_from(config).context("building the kube client")?;
        let client = if self.verbosity >= REQUEST_LOG_LEVEL {
            builder.with_layer(&RequestLog { server }).build()
        } else {
            builder.build()
        };
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

/// Why no client configuration could be loaded: input errors (exit 2), each said once in words a user acts on
/// (kube's own errors repeat their cause at every level of the chain).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("kubeconfig {}: no such file", .0.display())]
    Missing(PathBuf),
    #[error("kubeconfig {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("context {context:?} is not in the kubeconfig{}", known_contexts(.known))]
    UnknownContext { context: String, known: Vec<String> },
    #[error(
        "no kubeconfig: none at KUBECONFIG or ~/.kube/config, and not running in a cluster (pass --kubeconfig, \
         or --offline to read only --audit-log)"
    )]
    NotFound,
    #[error("kubeconfig: {0}")]
    Invalid(String),
}

fn known_contexts(known: &[String]) -> String {
    if known.is_empty() {
        " (it has none)".into()
    } else {
        format!(" (it has {})", known.join(", "))
    }
}

/// Loads the client configuration the way kubectl does: `--kubeconfig`, else `KUBECONFIG` (merged) or
/// `~/.kube/config`, else the pod's service account in a cluster; `--context` must name a context of it.
pub async fn config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Config, ConfigError> {
    let file = match kubeconfig {
        Some(p) => {
            if !p.exists() {
                return Err(ConfigError::Missing(p.to_path_buf()));
            }
            Some(
                Kubeconfig::read_from(p).map_err(|e| ConfigError::Unreadable {
                    path: p.display().to_string(),
                    reason: top_level(&e),
                })?,
            )
        }
        None => match Kubeconfig::read() {
            Ok(kc) => Some(kc),
            // No kubeconfig at all: in a pod, the service account (only when no context was asked for).
            Err(_)
                if context.is_none() && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() =>
            {
                None
            }
            Err(kube::config::KubeconfigError::ReadConfig(e, path))
                if e.kind() == std::io::ErrorKind::NotFound =>
            {
                return Err(if std::env::var_os("KUBECONFIG").is_some() {
                    ConfigError::Missing(path)
                } else {
                    ConfigError::NotFound
                });
            }
            Err(kube::config::KubeconfigError::FindPath) => return Err(ConfigError::NotFound),
            Err(e) => {
                return Err(ConfigError::Unreadable {
                    path: std::env::var("KUBECONFIG").unwrap_or_else(|_| "~/.kube/config".into()),
                    reason: top_level(&e),
                });
            }
        },
    };
    let Some(file) = file else {
        return kube::Config::incluster().map_err(|e| ConfigError::Invalid(top_level(&e)));
    };
    if let Some(c) = context
        && !file.contexts.iter().any(|n| n.name == c)
    {
        return Err(ConfigError::UnknownContext {
            context: c.to_string(),
            known: file.contexts.iter().map(|n| n.name.clone()).collect(),
        });
    }
    let options = KubeConfigOptions {
        context: context.map(str::to_string),
        ..KubeConfigOptions::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(file, &options)
        .await
        .map_err(|e| ConfigError::Invalid(top_level(&e)))?;
    config.apply_debug_overrides();
    Ok(config)
}

/// kubectl's level for one line per request (`-v=6`).
pub const REQUEST_LOG_LEVEL: u8 = 6;

/// `-v=6`: each request to the API server on stderr, when its answer's head arrives (a watch's, when it starts
/// streaming), as kubectl prints them: `GET https://…/apis/…?watch=true 200 OK in 12 ms`.
#[derive(Debug, Clone)]
pub struct RequestLog {
    /// The cluster's URL: requests reach this layer with their path only.
    pub server: std::sync::Arc<str>,
}

impl<S> tower::Layer<S> for RequestLog {
    type Service = Logged<S>;
    fn layer(&self, inner: S) -> Logged<S> {
        Logged {
            inner,
            server: self.server.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Logged<S> {
    inner: S,
    server: std::sync::Arc<str>,
}

impl<S, B> tower::Service<http::Request<kube::client::Body>> for Logged<S>
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<B>>,
    S::Error: std::fmt::Display,
    S::Future: Send + 'static,
    B: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        let uri = req.uri();
        let line = if uri.scheme().is_some() {
            format!("{} {uri}", req.method())
        } else {
            format!("{} {}{uri}", req.method(), self.server)
        };
        let started = std::time::Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await;
            let ms = started.elapsed().as_millis();
            match &res {
                Ok(r) => eprintln!("{line} {} in {ms} ms", r.status()),
                Err(e) => eprintln!("{line} failed in {ms} ms: {e}"),
            }
            res
        })
    }
}

/// Impersonation, as kubectl does it: `--as`/`--as-group`, else the kubeconfig user's `as:`/`as-groups:`, sent
/// as `Impersonate-User` and `Impersonate-Group` headers on every request (kube's client reads those kubeconfig
/// fields but does not send them).
fn impersonate(
    config: &mut kube::Config,
    user: Option<&str>,
    groups: &[String],
) -> Result<(), ConfigError> {
    let (user, groups) = match user {
        Some(u) => (Some(u.to_string()), groups.to_vec()),
        None => (
            config.auth_info.impersonate.clone(),
            config
                .auth_info
                .impersonate_groups
                .clone()
                .unwrap_or_default(),
        ),
    };
    let Some(user) = user else {
        return Ok(());
    };
    let header = |name: &'static str, value: &str| {
        http::HeaderValue::from_str(value)
            .map(|v| (http::HeaderName::from_static(name), v))
            .map_err(|_| ConfigError::Invalid(format!("{value:?} cannot be sent as {name}")))
    };
    config.headers.push(header("impersonate-user", &user)?);
    for g in &groups {
        config.headers.push(header("impersonate-group", g)?);
    }
    Ok(())
}

/// An error's own message, on one line: kube's messages already include their sources (printing the chain
/// says the cause again), and its YAML errors add a source excerpt and a second "error:" after the line and
/// column the first line names.
fn top_level(e: &dyn std::error::Error) -> String {
    let s = e.to_string();
    s.lines()
        .next()
        .unwrap_or_default()
        .replace(": error: ", ": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_input_error_is_said_once() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let missing = dir.path().join("nope");
        let e = config(Some(&missing), None).await.expect_err("missing");
        assert_eq!(
            e.to_string(),
            format!("kubeconfig {}: no such file", missing.display())
        );
        let broken = dir.path().join("broken");
        std::fs::write(&broken, "apiVersion: v1\nclusters: [").expect("write");
        let e = config(Some(&broken), None).await.expect_err("broken");
        assert!(matches!(e, ConfigError::Unreadable { .. }), "{e}");
        let said = e.to_string();
        assert!(
            said.starts_with(&format!("kubeconfig {}: ", broken.display())),
            "{said}"
        );
        let good = dir.path().join("good");
        std::fs::write(
            &good,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n\
             users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: here\n  context: {cluster: c, user: u}\n\
             current-context: here\n",
        )
        .expect("write");
        let e = config(Some(&good), Some("nope"))
            .await
            .expect_err("unknown context");
        assert_eq!(
            e.to_string(),
            "context \"nope\" is not in the kubeconfig (it has here)"
        );
        let c = config(Some(&good), Some("here"))
            .await
            .expect("known context");
        assert_eq!(c.cluster_url.to_string(), "https://127.0.0.1:1/");
    }
}
