//! The kube clients the bench uses: one per variant, each with a tower layer that counts its requests the
//! way client-go does (`rest_client_requests_total{code,method}`), by verb and subresource, and the watch
//! connections it holds open.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll};

use anyhow::{Context as _, Result};
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use kube::client::{Body, ClientBuilder, DynBody};
use kube::{Client, Config};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tower::{BoxError, Layer, Service};

/// client-go's labels for `rest_client_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RestLabels {
    code: String,
    method: String,
    host: String,
}

/// The same requests by Kubernetes verb, resource and subresource (what the comparison table needs).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbLabels {
    verb: String,
    resource: String,
    subresource: String,
    code: String,
}

/// A variant client's request counters; cheap to clone (the families are shared).
#[derive(Debug, Clone, Default)]
pub struct RestMetrics {
    requests: Family<RestLabels, Counter>,
    by_verb: Family<VerbLabels, Counter>,
    watches_open: Gauge,
    /// Kept outside the gauge so that a body dropped on another thread never races a refresh.
    open: Arc<AtomicI64>,
}

impl RestMetrics {
    /// Adds the counters to a variant's registry.
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            self.requests.clone(),
        );
        r.register(
            "ctrlaudit_rest_client_requests",
            "HTTP requests by Kubernetes verb, resource, subresource and status code",
            self.by_verb.clone(),
        );
        r.register(
            "ctrlaudit_watch_connections_open",
            "Watch responses whose body is still streaming",
            self.watches_open.clone(),
        );
    }

    /// Copies the open-watch count into its gauge (called before each encode).
    pub fn refresh(&self) {
        self.watches_open.set(self.open.load(Ordering::Relaxed));
    }

    /// Watch connections open right now.
    pub fn open_watches(&self) -> i64 {
        self.open.load(Ordering::Relaxed)
    }
}

/// What one request is, in Kubernetes terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestClass {
    pub verb: &'static str,
    pub resource: String,
    pub subresource: String,
}

/// Classifies a request by method, path and query, like the API server's request info resolver (simplified:
/// `/api/v1/...` and `/apis/{group}/{version}/...`, namespaced or not).
pub fn classify(method: &http::Method, path: &str, query: Option<&str>) -> RequestClass {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest: &[&str] = match segs.as_slice() {
        ["api", _v, rest @ ..] => rest,
        ["apis", _g, _v, rest @ ..] => rest,
        _ => &[],
    };
    // `namespaces/{ns}/{resource}/...` is a namespaced resource; `namespaces/{ns}` alone is a Namespace.
    let rest = match rest {
        ["namespaces", _ns, r, ..]
            if !r.is_empty() && rest.len() >= 3 && *r != "finalize" && *r != "status" =>
        {
            &rest[2..]
        }
        _ => rest,
    };
    let resource = rest.first().map(|s| s.to_string()).unwrap_or_default();
    let named = rest.len() >= 2;
    let subresource = rest.get(2).map(|s| s.to_string()).unwrap_or_default();
    let watch = query.is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if named || resource.is_empty() => "get",
        http::Method::GET => "list",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if named => "delete",
        http::Method::DELETE => "deletecollection",
        _ => "other",
    };
    RequestClass {
        verb,
        resource,
        subresource,
    }
}

/// The tower layer that counts; see [`RestMetrics`].
#[derive(Debug, Clone)]
pub struct CountingLayer {
    metrics: RestMetrics,
}

impl<S> Layer<S> for CountingLayer {
    type Service = Counting<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Counting {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service [`CountingLayer`] wraps around kube's stack.
#[derive(Debug, Clone)]
pub struct Counting<S> {
    inner: S,
    metrics: RestMetrics,
}

impl<S> Service<Request<Body>> for Counting<S>
where
    S: Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<CountedBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let class = classify(req.method(), req.uri().path(), req.uri().query());
        let method = req.method().as_str().to_string();
        let host = req.uri().host().unwrap_or_default().to_string();
        let metrics = self.metrics.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let res = fut.await;
            let code = match &res {
                Ok(r) => r.status().as_u16().to_string(),
                // client-go's label for a request that got no response.
                Err(_) => "<error>".to_string(),
            };
            metrics
                .requests
                .get_or_create(&RestLabels {
                    code: code.clone(),
                    method,
                    host,
                })
                .inc();
            metrics
                .by_verb
                .get_or_create(&VerbLabels {
                    verb: class.verb.to_string(),
                    resource: class.resource.clone(),
                    subresource: class.subresource.clone(),
                    code: code.clone(),
                })
                .inc();
            let resp = res?;
            let guard = (class.verb == "watch" && resp.status().is_success()).then(|| {
                metrics.open.fetch_add(1, Ordering::Relaxed);
                WatchGuard(metrics.open.clone())
            });
            Ok(resp.map(|inner| CountedBody {
                inner,
                _guard: guard,
            }))
        })
    }
}

/// Decrements the open-watch count when the watch's body is dropped (stream ended or abandoned).
#[derive(Debug)]
struct WatchGuard(Arc<AtomicI64>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body that carries a [`WatchGuard`] for watches.
pub struct CountedBody {
    inner: Box<DynBody>,
    _guard: Option<WatchGuard>,
}

impl std::fmt::Debug for CountedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountedBody").finish_non_exhaustive()
    }
}

impl HttpBody for CountedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        // Both fields are Unpin (a Box and an Option of an Arc), so the projection is plain.
        Pin::new(&mut *self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A variant's user agent, `<variant>/kubectl-ctrlaudit-bench`: the API server names a write's field manager after
/// the user agent up to its first `/`, so each variant is a field manager of its own, as separate controllers
/// are, and live can tell them apart.
pub fn variant_user_agent(variant: &str) -> String {
    format!("{variant}/kubectl-ctrlaudit-bench")
}

/// A client for `config` that sends `user_agent` (so audit logs and `live` can attribute its requests) and
/// counts its requests into `metrics`.
pub fn build(config: &Config, user_agent: &str, metrics: &RestMetrics) -> Result<Client> {
    let mut config = config.clone();
    config
        .headers
        .retain(|(k, _)| k != http::header::USER_AGENT);
    config.headers.push((
        http::header::USER_AGENT,
        user_agent
            .try_into()
            .with_context(|| format!("user agent {user_agent:?} is not a valid header value"))?,
    ));
    let builder = ClientBuilder::try_from(config).context("building the kube client")?;
    Ok(builder
        .with_layer(&CountingLayer {
            metrics: metrics.clone(),
        })
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn c(m: Method, p: &str, q: Option<&str>) -> (String, String, String) {
        let r = classify(&m, p, q);
        (r.verb.to_string(), r.resource, r.subresource)
    }

    fn t(v: &str, r: &str, s: &str) -> (String, String, String) {
        (v.into(), r.into(), s.into())
    }

    #[test]
    fn classifies_like_the_api_server() {
        let ns = "/apis/bench.ctrlaudit.io/v1alpha1/namespaces/a";
        assert_eq!(
            c(Method::GET, &format!("{ns}/widgets"), None),
            t("list", "widgets", "")
        );
        assert_eq!(
            c(
                Method::GET,
                &format!("{ns}/widgets"),
                Some("watch=true&resourceVersion=1")
            ),
            t("watch", "widgets", "")
        );
        assert_eq!(
            c(Method::GET, &format!("{ns}/widgets/w1"), None),
            t("get", "widgets", "")
        );
        assert_eq!(
            c(Method::PATCH, &format!("{ns}/widgets/w1/status"), None),
            t("patch", "widgets", "status")
        );
        assert_eq!(
            c(Method::PUT, &format!("{ns}/widgets/w1/status"), None),
            t("update", "widgets", "status")
        );
        assert_eq!(
            c(Method::POST, &format!("{ns}/widgets"), None),
            t("create", "widgets", "")
        );
        assert_eq!(
            c(Method::DELETE, &format!("{ns}/widgets"), None),
            t("deletecollection", "widgets", "")
        );
        assert_eq!(
            c(Method::DELETE, "/api/v1/namespaces/a", None),
            t("delete", "namespaces", "")
        );
        assert_eq!(
            c(Method::PUT, "/api/v1/namespaces/a/finalize", None),
            t("update", "namespaces", "finalize")
        );
        assert_eq!(c(Method::GET, "/version", None), t("get", "", ""));
        assert_eq!(
            c(
                Method::GET,
                "/apis/bench.ctrlaudit.io/v1alpha1/widgets",
                Some("watch=1")
            ),
            t("watch", "widgets", "")
        );
    }
}
