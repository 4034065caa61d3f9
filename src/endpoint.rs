//! A `/metrics` endpoint: plain HTTP/1.1 serving exposition text rendered per request, and `/healthz`. Each bench
//! variant has one on 127.0.0.1 (a random free port); `live --serve` has one on the address it is given.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Renders the exposition text on each request.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Serves `render` at `http://127.0.0.1:<port>/metrics` until the returned task is aborted.
pub async fn serve(render: Render) -> Result<(SocketAddr, JoinHandle<()>)> {
    serve_on(SocketAddr::from(([127, 0, 0, 1], 0)), render).await
}

/// Serves `render` at `http://<addr>/metrics` until the returned task is aborted; port 0 picks a free one.
pub async fn serve_on(addr: SocketAddr, render: Render) -> Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the metrics address {addr}"))?;
    let addr = listener.local_addr().context("reading the metrics port")?;
    let task = tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((s, _)) => s,
                Err(_) => {
                    // Out of file descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let render = render.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let render = render.clone();
                    async move { Ok::<_, Infallible>(respond(req.uri().path(), &render)) }
                });
                // A scraper that hangs up mid-response is not our problem.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok((addr, task))
}

fn respond(path: &str, render: &Render) -> http::Response<Full<Bytes>> {
    if path == "/metrics" {
        let mut r = http::Response::new(Full::new(Bytes::from(render())));
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ),
        );
        r
    } else if path == "/healthz" {
        http::Response::new(Full::new(Bytes::from_static(b"ok\n")))
    } else {
        let mut r =
            http::Response::new(Full::new(Bytes::from_static(b"not found; try /metrics\n")));
        *r.status_mut() = http::StatusCode::NOT_FOUND;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn serves_and_scrapes() {
        let (addr, task) = serve(Arc::new(|| "workqueue_depth 3\n".to_string()))
            .await
            .expect("serves");
        let limits = crate::fetch::Limits {
            max_bytes: 1 << 20,
            timeout: Duration::from_secs(5),
            user_agent: "test",
            accept: "text/plain",
        };
        let text = crate::fetch::get(&format!("http://{addr}/metrics"), limits)
            .await
            .expect("scrapes");
        assert_eq!(text, "workqueue_depth 3\n");
        let health = crate::fetch::get(&format!("http://{addr}/healthz"), limits).await;
        assert_eq!(health.expect("healthy"), "ok\n");
        let missing = crate::fetch::get(&format!("http://{addr}/nope"), limits).await;
        assert!(matches!(
            missing,
            Err(crate::fetch::FetchError::Status(404))
        ));
        task.abort();
    }
}
