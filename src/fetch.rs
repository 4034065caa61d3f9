//! A bounded plain-HTTP GET — a size cap and a deadline — for `/metrics` endpoints: live's `--metrics-url` and
//! the bench's scrapes of its variants. Endpoints reached through the API server go through the kube client.

use std::time::Duration;

use http_body_util::BodyExt;

/// Why a GET gave no text.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{0}")]
    Request(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the body is larger than {} MiB: skipped", .0 >> 20)]
    TooLarge(u64),
    #[error("the body is not UTF-8 text")]
    NotText,
    #[error("HTTP {0}")]
    Status(u16),
}

/// What to send and how much to take.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    /// The largest body accepted, in bytes.
    pub max_bytes: u64,
    /// The deadline for the whole exchange, connect to last byte.
    pub timeout: Duration,
    pub user_agent: &'a str,
    pub accept: &'a str,
}

/// GETs a plain `http://` URL within `limits`.
pub async fn get(url: &str, limits: Limits<'_>) -> Result<String, FetchError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| FetchError::Request(format!("not a URL: {e}")))?;
    if uri.scheme_str() != Some("http") {
        return Err(FetchError::Request(
            "only http:// URLs are scraped directly; reach an https endpoint with --controller-pod through the API \
             server's pod proxy"
                .into(),
        ));
    }
    let host = uri
        .host()
        .ok_or_else(|| FetchError::Request("the URL has no host".into()))?
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let fetch = async {
        let stream = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| FetchError::Request(format!("unreachable: {e}")))?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| FetchError::Request(format!("HTTP handshake: {e}")))?;
        // The connection task ends when the response is read or dropped.
        let conn = tokio::spawn(conn);
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
        let req = http::Request::get(path)
            .header(http::header::HOST, format!("{host}:{port}"))
            .header(http::header::USER_AGENT, limits.user_agent)
            .header(http::header::ACCEPT, limits.accept)
            .body(http_body_util::Empty::<hyper::body::Bytes>::new())
            .map_err(|e| FetchError::Request(e.to_string()))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| FetchError::Request(format!("request failed: {e}")))?;
        if !resp.status().is_success() {
            conn.abort();
            return Err(FetchError::Status(resp.status().as_u16()));
        }
        let mut body = resp.into_body();
        let mut buf: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| FetchError::Request(format!("reading the body: {e}")))?;
            if let Ok(data) = frame.into_data() {
                buf.extend_from_slice(&data);
                if buf.len() as u64 > limits.max_bytes {
                    conn.abort();
                    return Err(FetchError::TooLarge(limits.max_bytes));
                }
            }
        }
        String::from_utf8(buf).map_err(|_| FetchError::NotText)
    };
    tokio::time::timeout(limits.timeout, fetch)
        .await
        .map_err(|_| FetchError::Timeout(limits.timeout))?
}
