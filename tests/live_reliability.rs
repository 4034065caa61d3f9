//! `live` against what goes wrong outside the tool (issue 22): an API server that accepts and never answers or
//! trickles a byte a second, input that is not an audit log, a `--record` folder that cannot be written, a
//! duration that overflows, a FIFO or a device as the audit log. Each runs the binary against small servers
//! and files the test makes itself; the child gets a deadline so that a hang fails the test instead of
//! hanging it.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kubectl-ctrlaudit"));
    // No ctrlaudit.toml from the repository, no KUBECONFIG from the environment.
    c.current_dir(std::env::temp_dir()).env_remove("KUBECONFIG");
    c
}

/// Runs `cmd` and waits for it at most `limit`: a child still running then is killed and the test fails. A
/// bound on a hang, not a measurement: it is far above what the run needs.
fn run_within(mut cmd: Command, limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: stdout {}\nstderr {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = started.elapsed();
    (child.wait_with_output().unwrap(), elapsed)
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A kubeconfig for `server` that skips TLS verification (the test servers have no certificate).
fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    \
             insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n    \
             namespace: shop\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n"
        ),
    )
    .unwrap();
    path
}

/// A server that accepts every connection and then does `with` on it (on its own thread), for as long as the
/// test process lives.
fn server(with: fn(TcpStream)) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || with(conn));
        }
    });
    port
}

/// Holds the connection open and never sends a byte: the TLS handshake never completes.
fn never_answer(conn: TcpStream) {
    let _held = conn;
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// The start of a TLS record (handshake, 16 KiB long), then one byte a second: every read gets something, so
/// no idle timer fires, and the handshake never completes.
fn trickle(mut conn: TcpStream) {
    if conn.write_all(&[0x16, 0x03, 0x03, 0x40, 0x00]).is_err() {
        return;
    }
    loop {
        std::thread::sleep(Duration::from_secs(1));
        if conn.write_all(&[0]).is_err() {
            return;
        }
    }
}

/// `live --duration 2s` against a server that never answers ends with exit 3 and a note that names the server
/// and the request, well before the old 50 s (TLS) or never (a trickle).
fn ends_with_exit_3_naming_the_server(with: fn(TcpStream), label: &str) {
    let port = server(with);
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &format!("https://127.0.0.1:{port}"));
    let mut cmd = bin();
    cmd.args(["live", "--duration", "2s", "--no-progress", "--kubeconfig"])
        .arg(&kc);
    // The window, the closing grace (15 s at most) and slack for a loaded machine.
    let (out, took) = run_within(cmd, Duration::from_secs(2 + 15 + 13));
    let all = text(&out);
    eprintln!("{label}: ended in {took:.1?}\n{all}");
    assert_eq!(out.status.code(), Some(3), "{label}: {all}");
    assert!(
        all.contains(&format!("https://127.0.0.1:{port}")) && all.contains("did not answer"),
        "{label}: the note names the server: {all}"
    );
    assert!(
        all.contains("list customresourcedefinitions"),
        "{label}: the note names the request: {all}"
    );
}

#[test]
fn a_server_that_never_answers_ends_the_run_with_exit_3_and_a_note() {
    ends_with_exit_3_naming_the_server(never_answer, "never answers");
}

#[test]
fn a_server_that_trickles_a_byte_a_second_ends_the_run_with_exit_3_and_a_note() {
    ends_with_exit_3_naming_the_server(trickle, "trickles");
}

/// A short `--request-timeout` bounds each request below the window: the note says which limit ran out.
#[test]
fn request_timeout_bounds_each_request() {
    let port = server(never_answer);
    let dir = tempfile::tempdir().unwrap();
    let kc = kubeconfig(dir.path(), &format!("https://127.0.0.1:{port}"));
    let mut cmd = bin();
    cmd.args([
        "live",
        "--duration",
        "20s",
        "--request-timeout",
        "1s",
        "--no-progress",
        "--kubeconfig",
    ])
    .arg(&kc);
    let (out, _) = run_within(cmd, Duration::from_secs(20 + 15 + 13));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(
        all.contains("did not answer list customresourcedefinitions within 1s"),
        "{all}"
    );
}

fn offline(log: &Path) -> Command {
    let mut cmd = bin();
    cmd.args(["live", "--offline", "--no-progress", "--audit-log"])
        .arg(log);
    cmd
}

#[test]
fn input_that_is_not_an_audit_log_is_no_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let mut utf16 = vec![0xff, 0xfe];
    for u in "{\"kind\":\"Event\",\"stage\":\"ResponseComplete\"}\n".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    let inputs: [(&str, Vec<u8>); 5] = [
        (
            "text",
            b"Dec  1 07:00:00 node kubelet[7]: started\nand more\n".to_vec(),
        ),
        // The gzip magic, a header, deflate bytes: what `audit.log.gz` starts with.
        (
            "gzip",
            vec![
                0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd, 0xc9,
                0xc9, 0x07, 0x00, 0x86, 0xa6, 0x10, 0x36, 0x05, 0x00, 0x00, 0x00,
            ],
        ),
        ("utf16", utf16),
        ("binary", (0..=255u8).cycle().take(4096).collect()),
        (
            "truncated",
            b"{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"stage\":\"Respon".to_vec(),
        ),
    ];
    for (name, bytes) in inputs {
        let log = dir.path().join(format!("{name}.log"));
        std::fs::write(&log, bytes).unwrap();
        let (out, _) = run_within(offline(&log), Duration::from_secs(60));
        let all = text(&out);
        assert_eq!(out.status.code(), Some(3), "{name}: {all}");
        assert!(all.contains("is an audit event"), "{name}: {all}");

        // The same bytes as a recording's audit.jsonl.
        let rec = dir.path().join(format!("rec-{name}"));
        std::fs::create_dir(&rec).unwrap();
        std::fs::copy(&log, rec.join("audit.jsonl")).unwrap();
        let mut cmd = bin();
        cmd.args(["live", "--no-progress", "--replay"]).arg(&rec);
        let (out, _) = run_within(cmd, Duration::from_secs(60));
        let all = text(&out);
        assert_eq!(out.status.code(), Some(3), "replay {name}: {all}");
        assert!(all.contains("is an audit event"), "replay {name}: {all}");
    }
}

#[test]
fn an_unwritable_record_folder_fails_before_the_window() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the folder would be: neither root nor anyone else can create a directory there.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "x").unwrap();
    let log = dir.path().join("audit.log");
    std::fs::write(&log, "").unwrap();
    let port = server(never_answer);
    let kc = kubeconfig(dir.path(), &format!("https://127.0.0.1:{port}"));
    let mut cmd = bin();
    // A long window against a server that never answers: only a check before it ends this run quickly.
    cmd.args(["live", "--duration", "10m", "--no-progress", "--record"])
        .arg(blocker.join("rec"))
        .arg("--kubeconfig")
        .arg(&kc);
    let (out, _) = run_within(cmd, Duration::from_secs(60));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("--record") && all.contains("cannot create"),
        "{all}"
    );
}

#[test]
fn an_overflowing_duration_is_a_usage_error() {
    for d in ["1e19", "10000000000000000000s", "9999999h"] {
        let mut cmd = bin();
        cmd.args([
            "live",
            "--duration",
            d,
            "--offline",
            "--audit-log",
            "/dev/null",
        ]);
        let (out, _) = run_within(cmd, Duration::from_secs(60));
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{d}: {all}");
        assert!(all.contains("longer than the maximum"), "{d}: {all}");
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_or_a_device_as_the_audit_log_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for log in [fifo.as_path(), Path::new("/dev/zero")] {
        let (out, _) = run_within(offline(log), Duration::from_secs(60));
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {all}", log.display());
        assert!(all.contains("is not a regular file"), "{all}");
    }
}

#[test]
fn a_scrape_interval_under_a_second_is_a_usage_error() {
    for i in ["0", "500ms", "0.2"] {
        let mut cmd = bin();
        cmd.args([
            "live",
            "--scrape-interval",
            i,
            "--offline",
            "--audit-log",
            "/dev/null",
        ]);
        let (out, _) = run_within(cmd, Duration::from_secs(60));
        let all = text(&out);
        assert_eq!(out.status.code(), Some(2), "{i}: {all}");
        assert!(all.contains("shorter than 1s"), "{i}: {all}");
    }
}

/// A kubeconfig that is missing or broken, a context it lacks, no kubeconfig at all, or an audit log that is
/// not there: the user's input, so exit 2 at once with one line saying what, not a window watched for nothing.
#[test]
fn kubeconfig_context_and_audit_log_mistakes_are_input_errors_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let good = kubeconfig(dir.path(), "https://127.0.0.1:1");
    let broken = dir.path().join("broken");
    std::fs::write(&broken, "apiVersion: v1\nclusters: [\n").unwrap();
    let missing = dir.path().join("missing");
    let home = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<std::ffi::OsString>, String)> = vec![
        (
            vec!["--kubeconfig".into(), missing.clone().into()],
            format!("error: kubeconfig {}: no such file", missing.display()),
        ),
        (
            vec!["--kubeconfig".into(), broken.clone().into()],
            format!("error: kubeconfig {}: ", broken.display()),
        ),
        (
            vec![
                "--kubeconfig".into(),
                good.clone().into(),
                "--context".into(),
                "prod".into(),
            ],
            "error: context \"prod\" is not in the kubeconfig (it has c)".into(),
        ),
        (
            vec![
                "--audit-log".into(),
                missing.clone().into(),
                "--offline".into(),
            ],
            format!("error: audit log {}: no such file", missing.display()),
        ),
        (vec![], "error: no kubeconfig: ".into()),
    ];
    for (args, said) in cases {
        let mut cmd = bin();
        cmd.arg("live")
            .args(["--duration", "30s", "--no-progress"])
            .args(&args)
            .env("HOME", home.path())
            .env_remove("KUBERNETES_SERVICE_HOST");
        let (out, _) = run_within(cmd, Duration::from_secs(20));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(stderr.starts_with(&said), "{args:?}: {stderr}");
        assert_eq!(
            stderr.matches("error").count(),
            1,
            "{args:?}: the cause once: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: no report: {}", text(&out));
    }
}
