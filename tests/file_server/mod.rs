//! A file server on 127.0.0.1 for the download tests (the Action's `release/fetch.sh`, demo's envtest archive):
//! GET of a file under its root, a 302 for `/redirect/<path>` to `/<path>` (as GitHub's release downloads
//! redirect to their storage), 404 for anything else; it records the paths it was asked for.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub struct FileServer {
    pub url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl FileServer {
    /// The request paths so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

pub fn serve(root: PathBuf) -> FileServer {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
            log.lock().unwrap().push(path.clone());
            let file = root.join(path.trim_start_matches('/'));
            let response = match (path.strip_prefix("/redirect/"), std::fs::read(&file)) {
                (Some(to), _) => format!(
                    "HTTP/1.1 302 Found\r\nLocation: /{to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                .into_bytes(),
                (None, Ok(body)) if !path.contains("..") => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend(body);
                    r
                }
                _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&response);
        }
    });
    FileServer {
        url: format!("http://{addr}"),
        requests,
    }
}
