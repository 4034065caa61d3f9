//! A control plane of a test's own (`testenv/start.sh` into a fresh state dir), for the fault tests that kill or
//! restart the API server: the shared testenv must keep serving the other tests. Stopped on drop.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use kube::Client;

fn testenv_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testenv")
        .join(name)
}

/// A running private kube-apiserver + etcd.
pub struct Plane {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub client: Client,
    /// A kube-apiserver this process restarted: stop.sh stops it, drop reaps it.
    restarted: std::sync::Mutex<Option<std::process::Child>>,
}

impl Plane {
    /// Starts one (the binaries come from the testenv cache, which test.sh fills) and installs the Widget CRD.
    pub async fn start(name: &str) -> Plane {
        Self::start_with_flags(name, &[]).await
    }

    /// [`Self::start`] with extra kube-apiserver flags (`--feature-gates=…`).
    pub async fn start_with_flags(name: &str, apiserver_flags: &[&str]) -> Plane {
        let plane = Self::boot(name, apiserver_flags).await;
        // Waits until the type is served, not only Established.
        super::apply_widget_crd(&plane.client)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
        plane
    }

    /// Starts one with no custom resource type installed.
    pub async fn start_without_crd(name: &str) -> Plane {
        Self::boot(name, &[]).await
    }

    async fn boot(name: &str, apiserver_flags: &[&str]) -> Plane {
        let dir =
            std::env::temp_dir().join(format!("ctrlaudit-plane-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let out = Command::new("bash")
            .arg(testenv_script("start.sh"))
            .arg("--state-dir")
            .arg(&dir)
            .args(apiserver_flags.iter().flat_map(|f| ["--apiserver-flag", f]))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: a private control plane did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let kubeconfig = dir.join("kubeconfig");
        let client = super::client_from(&kubeconfig, &format!("ctrlaudit-tests/{name}"))
            .await
            .unwrap();
        Plane {
            dir,
            kubeconfig,
            client,
            restarted: std::sync::Mutex::new(None),
        }
    }

    fn apiserver_pid(&self) -> String {
        std::fs::read_to_string(self.dir.join("kube-apiserver.pid"))
            .unwrap()
            .trim()
            .to_string()
    }

    /// SIGKILLs kube-apiserver (as a crash or an OOM kill would) and waits until it is gone.
    pub fn kill_apiserver(&self) {
        let pid = self.apiserver_pid();
        Command::new("kill").args(["-9", &pid]).status().unwrap();
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while proc.exists() && std::time::Instant::now() < deadline {
            // A zombie until its parent (start.sh's subshell, gone) is reaped by init: check its state.
            let state = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
            if state.split_whitespace().nth(2) == Some("Z") {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Writes a key of its own to etcd and compacts at that revision (through etcd's JSON gateway), so that a
    /// watch that resumes from any resourceVersion it saw gets 410 Gone and must re-list. Returns the revision.
    pub fn compact_etcd(&self) -> u64 {
        let args = std::fs::read_to_string(self.dir.join("kube-apiserver.args")).unwrap();
        let etcd = args
            .lines()
            .find_map(|l| l.strip_prefix("--etcd-servers="))
            .unwrap()
            .to_string();
        let post = |path: &str, body: &str| {
            let out = Command::new("curl")
                .args(["-fsS", "-X", "POST", &format!("{etcd}{path}"), "-d", body])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        };
        // A write of its own first: otherwise, when the last revision before the compaction is the last one a
        // watch saw (nothing else was written since), the watch resumes from a revision that still exists and
        // gets no 410. ("Y3RybGF1ZGl0LWJ1bXA=" is `ctrlaudit-bump`, "eA==" is `x`.)
        let head = post(
            "/v3/kv/put",
            r#"{"key":"Y3RybGF1ZGl0LWJ1bXA=","value":"eA=="}"#,
        );
        let revision: u64 = head["header"]["revision"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        post(
            "/v3/kv/compaction",
            &format!(r#"{{"revision":"{revision}","physical":true}}"#),
        );
        revision
    }

    /// Starts kube-apiserver again with the arguments start.sh recorded (same port, same etcd), records its
    /// pid for stop.sh, and waits until it answers.
    pub async fn restart_apiserver(&self) {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                ". {} && printf %s \"$KUBE_APISERVER_BIN\"",
                testenv_script("versions.sh").display()
            ))
            .output()
            .unwrap();
        let bin = String::from_utf8(out.stdout).unwrap();
        let args: Vec<String> = std::fs::read_to_string(self.dir.join("kube-apiserver.args"))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("logs").join("kube-apiserver.log"))
            .unwrap();
        let child = Command::new(bin)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        std::fs::write(self.dir.join("kube-apiserver.pid"), child.id().to_string()).unwrap();
        *self.restarted.lock().unwrap() = Some(child);
        // Bounded: a loaded machine takes a few seconds to bring kube-apiserver up.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(Ok(_)) =
                tokio::time::timeout(Duration::from_secs(2), self.client.apiserver_version()).await
            {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "kube-apiserver did not come back"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Plane {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(testenv_script("stop.sh"))
            .arg(&self.dir)
            .status();
        if let Some(mut child) = self.restarted.lock().ok().and_then(|mut c| c.take()) {
            let _ = child.wait();
        }
    }
}
