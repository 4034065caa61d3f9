//! Scrapes `/metrics`: the API server's (through the client), a controller's by URL (plain HTTP) or through
//! the API server's pod proxy. Every fetch is bounded in time and size; a failure is a note, never an abort.

use super::discover::explain;
use super::{Limits, MetricsTarget};
use crate::config::Config;
use crate::fetch::FetchError;
use crate::live::metrics;
use crate::live::snapshot::{MetricSource, Scrape, SourceKind};
use crate::report::Note;
use futures::{AsyncBufReadExt, AsyncReadExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, ListParams};
use std::collections::BTreeMap;
use std::time::Duration;

/// The API server's `/metrics` can be a few MB on a busy server.
pub const APISERVER_MAX_BYTES: u64 = 64 << 20;
pub const APISERVER_TIMEOUT: Duration = Duration::from_secs(20);
/// A controller's `/metrics` beyond this is itself a cardinality problem (and reported as such).
pub const CONTROLLER_MAX_BYTES: u64 = 16 << 20;
pub const CONTROLLER_TIMEOUT: Duration = Duration::from_secs(5);
/// The most sample lines read of one controller scrape: CA402 fires far below it, and each series kept costs
/// (a 20,000-series scrape kept was 17 MB).
pub const CONTROLLER_MAX_SERIES: usize = 50_000;

/// Why a scrape did not give samples: the GET failed (through the API server or directly, the same kinds of
/// failure), or the body was not Prometheus text.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("{0}")]
    Parse(#[from] metrics::ParseError),
}

/// One scrape of the API server's `/metrics`, given at most [`APISERVER_TIMEOUT`], the request timeout and what
/// is left until `until`.
pub async fn apiserver(
    client: &Client,
    cfg: &Config,
    limits: &Limits,
    until: tokio::time::Instant,
) -> Result<Scrape, ScrapeError> {
    let timeout = limits.budget(Some(APISERVER_TIMEOUT), until);
    if timeout.is_zero() {
        return Err(ScrapeError::Fetch(FetchError::Request(
            "not scraped: the window had ended (waiting for earlier requests)".into(),
        )));
    }
    let request = kube::core::Request::new("")
        .get("metrics", &Default::default())
        .map_err(|e| FetchError::Request(e.to_string()))?;
    let text = bounded_text(
        client,
        request,
        APISERVER_MAX_BYTES,
        timeout,
        "get on nonResourceURL /metrics",
        &metrics::apiserver_line_wanted,
    )
    .await?;
    Ok(metrics::parse(
        &text,
        super::now_ms(),
        SourceKind::Apiserver,
        &cfg.metrics,
    )?)
}

/// The first bytes of a body are kept whole, whatever `keep` says, so that a body that is not metrics at all is
/// still recognised as such.
const HEAD_BYTES: usize = 64 << 10;

/// GET through the client, reading at most `max` bytes within `timeout`, keeping the head and the lines `keep`
/// wants: the API server's metrics are megabytes of which a few families are read.
async fn bounded_text(
    client: &Client,
    request: http::Request<Vec<u8>>,
    max: u64,
    timeout: Duration,
    needs: &str,
    keep: &(dyn Fn(&str) -> bool + Sync),
) -> Result<String, FetchError> {
    let fetch = async {
        let body = client
            .request_stream(request)
            .await
            .map_err(|e| FetchError::Request(explain(&e, needs)))?;
        futures::pin_mut!(body);
        let mut reader = body.take(max + 1);
        let (mut out, mut line, mut total) = (String::new(), String::new(), 0usize);
        loop {
            line.clear();
            let n = reader.read_line(&mut line).await.map_err(|e| {
                if e.kind() == std::io::ErrorKind::InvalidData {
                    FetchError::NotText
                } else {
                    FetchError::Request(format!("reading the body: {e}"))
                }
            })?;
            if n == 0 {
                break;
            }
            total += n;
            if total as u64 > max {
                return Err(FetchError::TooLarge(max));
            }
            if total <= HEAD_BYTES || keep(&line) {
                out.push_str(&line);
            }
        }
        Ok(out)
    };
    tokio::time::timeout(timeout, fetch)
        .await
        .map_err(|_| FetchError::Timeout(timeout))?
}

/// GET a plain `http://` URL with a body cap and a deadline.
pub async fn http_get(url: &str, max: u64, timeout: Duration) -> Result<String, FetchError> {
    let limits = crate::fetch::Limits {
        max_bytes: max,
        timeout,
        user_agent: super::super::USER_AGENT,
        accept: "text/plain",
    };
    crate::fetch::get(url, limits).await
}

/// A target ready to scrape.
#[derive(Debug, Clone)]
pub enum Resolved {
    Url(String),
    Pod {
        namespace: String,
        name: String,
        port: u16,
    },
}

impl Resolved {
    pub fn name(&self) -> String {
        match self {
            Resolved::Url(u) => u.clone(),
            Resolved::Pod {
                namespace,
                name,
                port,
            } => format!("pod {namespace}/{name}:{port}"),
        }
    }
}

/// The port of a pod's metrics: a container port named like metrics, else the first one, else 8080.
fn metrics_port(pod: &Pod) -> u16 {
    let ports: Vec<_> = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .collect();
    ports
        .iter()
        .find(|p| {
            p.name
                .as_deref()
                .is_some_and(|n| n.contains("metrics") || n == "prometheus")
        })
        .or(ports.first())
        .and_then(|p| u16::try_from(p.container_port).ok())
        .unwrap_or(8080)
}

/// Resolves pods and selectors to concrete targets (one get or list each).
pub async fn resolve_targets(
    client: &Client,
    targets: &[MetricsTarget],
    requests: &mut BTreeMap<String, u64>,
    limits: &Limits,
) -> (Vec<Resolved>, Vec<Note>) {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for t in targets {
        match t {
            MetricsTarget::Url(u) => out.push(Resolved::Url(u.clone())),
            MetricsTarget::Pod {
                namespace,
                name,
                port,
            } => {
                let port = match port {
                    Some(p) => *p,
                    None => {
                        *requests.entry("get pods".into()).or_default() += 1;
                        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
                        let got = limits
                            .setup(&format!("get pods/{name}"), pods.get(name))
                            .await;
                        match got {
                            Ok(Ok(p)) => metrics_port(&p),
                            Err(e) => {
                                notes.push(Note {
                                    subject: format!("pod {namespace}/{name}"),
                                    message: e.to_string(),
                                });
                                continue;
                            }
                            Ok(Err(e)) => {
                                notes.push(Note {
                                    subject: format!("pod {namespace}/{name}"),
                                    message: format!(
                                        "{}; pass --metrics-port to skip the lookup",
                                        explain(&e, "get on pods")
                                    ),
                                });
                                continue;
                            }
                        }
                    }
                };
                out.push(Resolved::Pod {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    port,
                });
            }
            MetricsTarget::Selector {
                namespace,
                selector,
                port,
            } => {
                *requests.entry("list pods".into()).or_default() += 1;
                let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
                let params = ListParams::default().labels(selector);
                let listed = limits
                    .setup(&format!("list pods -l {selector}"), pods.list(&params))
                    .await;
                let listed = match listed {
                    Ok(l) => l,
                    Err(e) => {
                        notes.push(Note {
                            subject: format!("-l {selector}"),
                            message: e.to_string(),
                        });
                        continue;
                    }
                };
                match listed {
                    Ok(list) if list.items.is_empty() => notes.push(Note {
                        subject: format!("-l {selector}"),
                        message: format!("no pods match in namespace {namespace}"),
                    }),
                    Ok(list) => {
                        for p in &list.items {
                            let Some(name) = p.metadata.name.clone() else {
                                continue;
                            };
                            out.push(Resolved::Pod {
                                namespace: namespace.clone(),
                                name,
                                port: port.unwrap_or_else(|| metrics_port(p)),
                            });
                        }
                    }
                    Err(e) => notes.push(Note {
                        subject: format!("-l {selector}"),
                        message: explain(&e, "list on pods"),
                    }),
                }
            }
        }
    }
    (out, notes)
}

/// What scraping one target produced.
#[derive(Debug)]
pub struct TargetOutcome {
    pub source: MetricSource,
    pub attempts: u64,
    pub notes: Vec<Note>,
}

/// One scrape, and how many sample lines past [`CONTROLLER_MAX_SERIES`] it left out.
pub async fn scrape_once(
    client: &Client,
    target: &Resolved,
    cfg: &Config,
    timeout: Duration,
) -> Result<(Scrape, usize), ScrapeError> {
    let text = match target {
        Resolved::Url(u) => http_get(u, CONTROLLER_MAX_BYTES, timeout).await?,
        Resolved::Pod {
            namespace,
            name,
            port,
        } => {
            let path = format!("/api/v1/namespaces/{namespace}/pods/{name}:{port}/proxy/metrics");
            let request = http::Request::get(path)
                .body(Vec::new())
                .map_err(|e| FetchError::Request(e.to_string()))?;
            bounded_text(
                client,
                request,
                CONTROLLER_MAX_BYTES,
                timeout,
                "get on pods/proxy",
                &|_| true,
            )
            .await?
        }
    };
    let (text, left_out) = metrics::cap_series(&text, CONTROLLER_MAX_SERIES);
    let scrape = metrics::parse(text, super::now_ms(), SourceKind::Controller, &cfg.metrics)?;
    Ok((scrape, left_out))
}

/// Scrapes `target` now, every `interval`, and once more at the window's end; no scrape runs past the closing
/// grace.
pub async fn scrape_target(
    client: Client,
    target: Resolved,
    cfg: &Config,
    interval: Duration,
    limits: &Limits,
) -> TargetOutcome {
    let deadline = limits.deadline;
    let mut source = MetricSource {
        name: target.name(),
        kind: SourceKind::Controller,
        ..MetricSource::default()
    };
    let mut most_left_out = 0usize;
    let mut attempts = 0u64;
    let mut failures: BTreeMap<String, u32> = BTreeMap::new();
    loop {
        let timeout = limits.budget(Some(CONTROLLER_TIMEOUT), limits.closing);
        if timeout.is_zero() {
            break;
        }
        attempts += 1;
        match scrape_once(&client, &target, cfg, timeout).await {
            Ok((s, left_out)) => {
                most_left_out = most_left_out.max(left_out);
                source.push(s);
            }
            Err(e) => *failures.entry(e.to_string()).or_default() += 1,
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            break;
        }
        tokio::time::sleep(interval.min(deadline - now)).await;
    }
    let subject = format!("controller /metrics at {}", target.name());
    let mut notes: Vec<Note> = failures
        .into_iter()
        .map(|(why, n)| Note {
            subject: subject.clone(),
            message: format!("{n} of {attempts} scrapes failed: {why}"),
        })
        .collect();
    if most_left_out > 0 {
        notes.push(Note {
            subject,
            message: format!(
                "more than {CONTROLLER_MAX_SERIES} series ({most_left_out} more): only the first \
                 {CONTROLLER_MAX_SERIES} were read"
            ),
        });
    }
    TargetOutcome {
        source,
        attempts,
        notes,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A plain-HTTP `/metrics` endpoint of `series` reconcile counters (one per object), served by the test.
    async fn endpoint(series: usize) -> String {
        let mut body = String::from("# TYPE controller_runtime_reconcile_total counter\n");
        for i in 0..series {
            body.push_str(&format!(
                "controller_runtime_reconcile_total{{controller=\"w\",name=\"obj-{i:05}\",result=\"success\"}} {i}\n"
            ));
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let body = body.clone();
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = conn.write_all(head.as_bytes()).await;
                    let _ = conn.write_all(body.as_bytes()).await;
                });
            }
        });
        url
    }

    fn client() -> Client {
        Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn scrapes_of_a_large_endpoint_are_kept_in_bounded_form() {
        let target = Resolved::Url(endpoint(20_000).await);
        let (client, cfg) = (client(), Config::default());
        let mut source = MetricSource::default();
        let mut kept = Vec::new();
        for _ in 0..5 {
            let (s, left_out) = scrape_once(&client, &target, &cfg, Duration::from_secs(60))
                .await
                .unwrap();
            assert_eq!((s.samples.len(), left_out), (20_000, 0));
            source.push(s);
            kept.push(
                source
                    .scrapes
                    .iter()
                    .map(|s| s.samples.len())
                    .sum::<usize>(),
            );
        }
        assert_eq!(source.scrape_count(), 5);
        assert_eq!(source.scrapes.len(), 2);
        assert_eq!(
            kept,
            [20_000, 40_000, 40_000, 40_000, 40_000],
            "kept series"
        );
        assert!(source.peaks.is_empty(), "counters need no peaks");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn an_endpoint_of_too_many_series_is_read_up_to_the_cap() {
        let target = Resolved::Url(endpoint(CONTROLLER_MAX_SERIES + 1_000).await);
        let (s, left_out) = scrape_once(
            &client(),
            &target,
            &Config::default(),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        assert_eq!((s.samples.len(), left_out), (CONTROLLER_MAX_SERIES, 1_000));
    }
}
