//! The demo's own control plane: testenv's scripts and Go module files are compiled into the binary, written to
//! the cache on first use and run from there, so that an installed `kubectl ctrlaudit demo` starts the same
//! kind of kube-apiserver and etcd as the tests, and stops them again. The binaries are the tests' Go-built
//! ones when the cache has them, else controller-tools' envtest archive (`envtest`, no Go needed), else a
//! build from the Go module proxy.

use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::envtest;

/// testenv's files, by path under `testenv/`: what `build.sh` and `start.sh` need and nothing else.
pub const FILES: &[(&str, &str)] = &[
    ("versions.sh", include_str!("../../testenv/versions.sh")),
    ("build.sh", include_str!("../../testenv/build.sh")),
    ("start.sh", include_str!("../../testenv/start.sh")),
    ("stop.sh", include_str!("../../testenv/stop.sh")),
    (
        "kube-apiserver/go.mod",
        include_str!("../../testenv/kube-apiserver/go.mod"),
    ),
    (
        "kube-apiserver/go.sum",
        include_str!("../../testenv/kube-apiserver/go.sum"),
    ),
    ("etcd/go.mod", include_str!("../../testenv/etcd/go.mod")),
    ("etcd/go.sum", include_str!("../../testenv/etcd/go.sum")),
];

/// A running kube-apiserver + etcd on loopback ports; stopped by [`ControlPlane::stop`] or, failing that, on drop.
#[derive(Debug)]
pub struct ControlPlane {
    scripts: PathBuf,
    state_dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub audit_log: Option<PathBuf>,
    pub url: String,
    stopped: bool,
}

/// Where testenv caches its binaries (the same place as `testenv/versions.sh` computes).
fn cache_root() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("CTRLAUDIT_TESTENV_CACHE") {
        return Ok(PathBuf::from(p));
    }
    let base = match std::env::var_os("XDG_CACHE_HOME") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?).join(".cache"),
    };
    Ok(base.join("kubectl-ctrlaudit").join("testenv"))
}

/// Writes the embedded scripts into `cache/scripts-<hash of their contents>/`, once: a new binary with changed
/// scripts gets a directory of its own, and an interrupted write is never used (written aside, then renamed).
pub fn unpack(cache: &Path) -> Result<PathBuf> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (path, text) in FILES {
        h.update(path.as_bytes());
        h.update([0]);
        h.update(text.as_bytes());
    }
    let hash = envtest::hex(&h.finalize()[..6]);
    let dir = cache.join(format!("scripts-{hash}"));
    if dir.join("stop.sh").is_file() {
        return Ok(dir);
    }
    let tmp = cache.join(format!("scripts-{hash}.tmp.{}", std::process::id()));
    for (path, text) in FILES {
        let p = tmp.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => Ok(dir),
        // Another demo unpacked the same scripts first.
        Err(_) if dir.join("stop.sh").is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(dir)
        }
        Err(e) => Err(e).with_context(|| format!("moving {} to {}", tmp.display(), dir.display())),
    }
}

/// `export KEY='value'` lines of start.sh's env file.
fn parse_env(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| {
            let v = v.trim();
            let v = v
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .unwrap_or(v);
            (k.to_string(), v.to_string())
        })
        .collect()
}

impl ControlPlane {
    /// Builds the binaries when the cache lacks them (progress on stderr), then starts etcd and kube-apiserver
    /// with the audit log on.
    pub fn start() -> Result<Self> {
        let cache = cache_root()?;
        std::fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
        let scripts = unpack(&cache)?;
        let binaries = obtain(&cache, &scripts)?;
        let state_dir = tempdir()?;
        eprintln!("demo: starting kube-apiserver and etcd on loopback ports…");
        let mut start = Command::new("bash");
        if let Some(b) = &binaries {
            start
                .env(APISERVER_BIN_ENV, &b.kube_apiserver)
                .env(ETCD_BIN_ENV, &b.etcd);
        }
        let out = start
            .arg(scripts.join("start.sh"))
            .args(["--audit", "--state-dir"])
            .arg(&state_dir)
            .stdin(Stdio::null())
            .output()
            .context("running bash (start.sh)")?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&state_dir);
            bail!(
                "the control plane did not start:\n{}",
                String::from_utf8_lossy(&out.stderr).trim_end()
            );
        }
        let env_file = state_dir.join("env");
        let env = parse_env(
            &std::fs::read_to_string(&env_file)
                .with_context(|| format!("reading {}", env_file.display()))?,
        );
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        let mut plane = ControlPlane {
            scripts,
            state_dir: state_dir.clone(),
            kubeconfig: state_dir.join("kubeconfig"),
            audit_log: get("CTRLAUDIT_TESTENV_AUDIT_LOG").map(PathBuf::from),
            url: get("CTRLAUDIT_TESTENV_APISERVER").unwrap_or_default(),
            stopped: false,
        };
        if !plane.kubeconfig.is_file() {
            // The missing kubeconfig is the error to report; a failed stop says its own piece on stderr.
            if let Err(e) = plane.stop_now() {
                eprintln!("demo: {e:#}");
            }
            bail!("start.sh wrote no kubeconfig in {}", state_dir.display());
        }
        Ok(plane)
    }

    /// Stops both processes and removes the state dir; an error names what is left and how to stop it.
    pub fn stop(mut self) -> Result<()> {
        self.stop_now()
    }

    fn stop_now(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let out = Command::new("bash")
            .arg(self.scripts.join("stop.sh"))
            .arg(&self.state_dir)
            .stdin(Stdio::null())
            .output()
            .context("running bash (stop.sh)")?;
        if !out.status.success() {
            bail!(
                "stopping the control plane failed ({}); run: bash {} {}",
                String::from_utf8_lossy(&out.stderr).trim_end(),
                self.scripts.join("stop.sh").display(),
                self.state_dir.display()
            );
        }
        Ok(())
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if let Err(e) = self.stop_now() {
            eprintln!("demo: {e:#}");
        }
    }
}

/// A fresh state dir under the temp dir.
fn tempdir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    for i in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!(
            "ctrlaudit-demo.{}.{nanos:x}{i}",
            std::process::id()
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    bail!("could not create a state dir under {}", base.display())
}

/// What `testenv/versions.sh` reads instead of the Go-built binaries' paths.
const APISERVER_BIN_ENV: &str = "CTRLAUDIT_KUBE_APISERVER_BIN";
const ETCD_BIN_ENV: &str = "CTRLAUDIT_ETCD_BIN";

/// A `NAME=value` assignment of the embedded `versions.sh`, so that the paths below follow its pins.
fn pinned(name: &str) -> Option<&'static str> {
    let (_, text) = FILES.iter().find(|(p, _)| *p == "versions.sh")?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
        .map(str::trim)
}

/// Whether the cache holds Go-built binaries at versions.sh's pins (build.sh then only checks them).
fn built_in(cache: &Path) -> bool {
    let (Some(kube), Some(etcd)) = (pinned("KUBE_VERSION"), pinned("ETCD_VERSION")) else {
        return false;
    };
    cache
        .join(format!("kube-apiserver-{kube}/kube-apiserver"))
        .is_file()
        && cache.join(format!("etcd-{etcd}/etcd")).is_file()
}

fn go_on_path() -> bool {
    Command::new("go")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The binaries to start: the Go-built ones already cached (`None`: start.sh's defaults), an earlier or new
/// envtest download, or — when the download fails and Go is there — a build.
fn obtain(cache: &Path, scripts: &Path) -> Result<Option<envtest::Binaries>> {
    if built_in(cache) {
        build(scripts)?;
        return Ok(None);
    }
    if let Some(b) = envtest::cached(cache) {
        return Ok(Some(b));
    }
    match envtest::fetch(cache) {
        Ok(b) => Ok(Some(b)),
        Err(e) if go_on_path() => {
            eprintln!("demo: {e:#}\ndemo: building the control plane from the Go module proxy instead");
            build(scripts)?;
            Ok(None)
        }
        Err(e) => Err(e.context(
            "the control plane's binaries could not be downloaded, and building them from source needs Go >= 1.25, \
             which is not on PATH (or run the demo against your own cluster with --use-current-context)",
        )),
    }
}

/// Runs build.sh: instant when the cache holds the pinned binaries; else a cold build of several minutes,
/// shown as a spinner with its latest line on a terminal and as plain lines elsewhere.
fn build(scripts: &Path) -> Result<()> {
    let mut child = Command::new("sh")
        .arg(scripts.join("build.sh"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("running sh (build.sh)")?;
    let stderr = child.stderr.take().context("build.sh's stderr")?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    });
    let mut lines = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.context("reading build.sh's output")?;
        let shown = line.trim_start_matches("build.sh: ").to_string();
        match &bar {
            Some(b) => b.set_message(format!("control plane: {shown}")),
            None => eprintln!("demo: control plane: {shown}"),
        }
        lines.push(line);
    }
    let status = child.wait().context("waiting for build.sh")?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if !status.success() {
        bail!(
            "building the control plane failed:\n{}\n\
             (the demo builds kube-apiserver and etcd from the Go module proxy on first use and needs Go >= 1.25; \
             or run it against your own cluster with --use-current-context)",
            lines.join("\n")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn env_lines_are_read_like_the_shell_would() {
        let env = parse_env(
            "export KUBECONFIG='/tmp/x/kubeconfig'\nexport CTRLAUDIT_TESTENV_APISERVER='https://127.0.0.1:1'\n",
        );
        assert_eq!(
            env,
            [
                ("KUBECONFIG".to_string(), "/tmp/x/kubeconfig".to_string()),
                (
                    "CTRLAUDIT_TESTENV_APISERVER".to_string(),
                    "https://127.0.0.1:1".to_string()
                )
            ]
        );
    }

    #[test]
    fn the_scripts_are_unpacked_once_and_whole() {
        let cache = std::env::temp_dir().join(format!("ctrlaudit-unpack-{}", std::process::id()));
        let a = unpack(&cache).unwrap();
        let b = unpack(&cache).unwrap();
        assert_eq!(a, b);
        for (path, text) in FILES {
            assert_eq!(std::fs::read_to_string(a.join(path)).unwrap(), *text);
        }
        std::fs::remove_dir_all(&cache).unwrap();
    }
}
