//! Shared access to the testenv control plane for integration tests (`mod common;`).
//!
//! One control plane serves the whole test run: `testenv/start.sh` starts it and exports
//! `CTRLAUDIT_TESTENV_DIR` (test.sh does this). Each test calls [`testenv`] and gets an admin client, a read-only
//! client and a namespace of its own, which is deleted when the returned [`TestEnv`] drops.
//!
//! Every cluster test is `#[ignore = "needs testenv …"]`, so a plain `cargo test` lists it as ignored instead of
//! passing it without a cluster; test.sh starts testenv and adds `--include-ignored`. A cluster test that runs
//! without a usable testenv fails with the command that starts one.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses a different subset of these helpers

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use tokio::sync::OnceCell;

pub mod live;
pub mod plane;

/// The Widget CRD that every cluster test may rely on (kept equal to `Widget::crd()` by a unit test).
pub const WIDGET_CRD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/crds/widget.yaml");
pub const WIDGET_CRD_NAME: &str = "widgets.bench.ctrlaudit.io";
/// The users of the two client certificates that `testenv/start.sh` issues.
pub const ADMIN_USER: &str = "ctrlaudit-admin";
pub const READONLY_USER: &str = "ctrlaudit-readonly";
/// Label on every namespace the helper creates, so leftovers are recognisable.
pub const NAMESPACE_LABEL: &str = "ctrlaudit.io/testenv";

/// A test's view of the shared control plane.
pub struct TestEnv {
    /// Admin (`system:masters`) client, sending `user_agent`.
    pub client: Client,
    /// Client for user `ctrlaudit-readonly`: get/list/watch on everything and GET /metrics, nothing else.
    pub readonly: Client,
    /// A namespace created for this test alone.
    pub namespace: String,
    /// The User-Agent header both clients send, so audit entries can be attributed to the test.
    pub user_agent: String,
    /// The testenv state dir (kubeconfigs, logs).
    pub dir: PathBuf,
    /// The API server's audit log, when testenv was started with `--audit`.
    pub audit_log: Option<PathBuf>,
}

impl std::fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestEnv")
            .field("namespace", &self.namespace)
            .field("user_agent", &self.user_agent)
            .field("dir", &self.dir)
            .field("audit_log", &self.audit_log)
            .finish_non_exhaustive()
    }
}

/// Where the running testenv keeps its state, if one is running.
///
/// Only a dir that start.sh marked is accepted: a `KUBECONFIG` pointing at a real cluster is never used.
pub fn testenv_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CTRLAUDIT_TESTENV_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let kubeconfig = PathBuf::from(std::env::var_os("KUBECONFIG")?);
    let dir = kubeconfig.parent()?;
    dir.join(".ctrlaudit-testenv")
        .exists()
        .then(|| dir.to_path_buf())
}

/// The admin client, a read-only client and a fresh namespace for the test `name`, with the Widget CRD
/// installed. Panics when no testenv runs or the one configured is not usable.
pub async fn testenv(name: &str) -> TestEnv {
    let Some(dir) = testenv_dir() else {
        panic!(
            "{name} needs testenv and CTRLAUDIT_TESTENV_DIR is not set: run ./test.sh, or testenv/build.sh && \
             eval \"$(testenv/start.sh --audit)\" before cargo test -- --include-ignored"
        );
    };
    match connect(&dir, name).await {
        Ok(env) => env,
        Err(e) => panic!(
            "testenv at {} is configured but not usable: {e:#}",
            dir.display()
        ),
    }
}

/// Like [`testenv`], but also needs the audit log (test.sh starts testenv with `--audit`).
pub async fn testenv_with_audit(name: &str) -> TestEnv {
    let env = testenv(name).await;
    assert!(
        env.audit_log.is_some(),
        "{name}: testenv was started without --audit (test.sh starts it with --audit)"
    );
    env
}

/// A kube client from a kubeconfig file, sending `user_agent`.
pub async fn client_from(kubeconfig: &Path, user_agent: &str) -> Result<Client> {
    let mut config = ctrlaudit::connect::config(Some(kubeconfig), None).await?;
    // kube-rs sends no User-Agent of its own; controllers that want attribution in audit logs set one.
    config.headers.push((
        "user-agent".try_into().context("header name")?,
        user_agent
            .try_into()
            .context("user agent is not a valid header value")?,
    ));
    Client::try_from(config).context("building the kube client")
}

async fn connect(dir: &Path, name: &str) -> Result<TestEnv> {
    let user_agent = format!("ctrlaudit-tests/{name}");
    let client = client_from(&dir.join("kubeconfig"), &user_agent).await?;
    let readonly = client_from(&dir.join("readonly.kubeconfig"), &user_agent).await?;
    let audit_log = std::fs::read_to_string(dir.join("audit-log-path"))
        .ok()
        .map(|p| PathBuf::from(p.trim()));

    install_widget_crd(&client).await?;
    let namespace = create_namespace(&client, name).await?;
    Ok(TestEnv {
        client,
        readonly,
        namespace,
        user_agent,
        dir: dir.to_path_buf(),
        audit_log,
    })
}

/// Installs the Widget CRD on the shared testenv once per test binary (tests run concurrently).
async fn install_widget_crd(client: &Client) -> Result<()> {
    static INSTALLED: OnceCell<()> = OnceCell::const_new();
    INSTALLED
        .get_or_try_init(|| apply_widget_crd(client))
        .await?;
    Ok(())
}

/// Applies the Widget CRD to the cluster of `client` and waits until it is Established (no once-per-process
/// guard: a private control plane needs its own).
pub(crate) async fn apply_widget_crd(client: &Client) -> Result<()> {
    let text =
        std::fs::read_to_string(WIDGET_CRD).with_context(|| format!("reading {WIDGET_CRD}"))?;
    let crd: CustomResourceDefinition =
        yaml_serde::from_str(&text).context("parsing the Widget CRD")?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    // Server-side apply is idempotent, so other test binaries (or a rerun) applying it again is fine.
    crds.patch(
        WIDGET_CRD_NAME,
        &PatchParams::apply("ctrlaudit-testenv").force(),
        &Patch::Apply(&crd),
    )
    .await
    .context("applying the Widget CRD")?;
    let established = await_condition(crds, WIDGET_CRD_NAME, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .context("the Widget CRD did not become Established within 30s")?
        .context("watching the Widget CRD")?;
    // Established is not yet served: a fresh API server answers 404 on the new type for a moment, and the first
    // test to run on a fresh control plane would create its Widgets into that.
    let widgets: Api<ctrlaudit::bench::widget::Widget> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while let Err(e) = widgets.list(&Default::default()).await {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the Widget type is not served 120 s after its CRD was Established: {e}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// A fresh namespace named after `test`, labelled as a test namespace.
pub async fn create_namespace(client: &Client, test: &str) -> Result<String> {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    // Unique across test binaries and reruns against the same control plane; DNS-1123, at most 63 chars.
    let mut slug: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    slug.truncate(40);
    let name = format!(
        "t-{}-{}-{}{}",
        slug.trim_matches('-'),
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() % 1000)
            .unwrap_or_default()
    );
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some([(NAMESPACE_LABEL.to_owned(), "true".to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let api: Api<Namespace> = Api::all(client.clone());
    api.create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(name)
}

/// Best-effort removal of a test namespace and the widgets in it.
///
/// testenv runs no kube-controller-manager, so nothing would ever empty a deleted namespace and drop its
/// `kubernetes` finalizer: the helper deletes the widgets itself and finalizes the namespace directly.
pub async fn delete_namespace(client: &Client, namespace: &str) -> Result<()> {
    use ctrlaudit::bench::widget::Widget;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), namespace);
    widgets
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .context("deleting widgets")?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(namespace, &DeleteParams::default())
        .await
        .context("deleting namespace")?;
    let mut ns = namespaces
        .get(namespace)
        .await
        .context("reading namespace")?;
    if let Some(spec) = ns.spec.as_mut() {
        spec.finalizers = Some(Vec::new());
    }
    namespaces
        .replace_subresource("finalize", namespace, &PostParams::default(), &ns)
        .await
        .context("finalizing namespace")?;
    Ok(())
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // The test's runtime is not usable from drop (and may be unwinding), so the cleanup gets its own
        // thread, runtime and client.
        let kubeconfig = self.dir.join("kubeconfig");
        let namespace = std::mem::take(&mut self.namespace);
        let user_agent = self.user_agent.clone();
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async {
                let client = client_from(&kubeconfig, &user_agent).await?;
                // Tests leave a handful of objects; the live bench at 100,000 Widgets needs minutes to delete them.
                tokio::time::timeout(
                    Duration::from_secs(300),
                    delete_namespace(&client, &namespace),
                )
                .await
                .context("timed out")?
            })
            .with_context(|| format!("cleaning up namespace {namespace}"))
        });
        match cleanup.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("warning: {e:#}"),
            Err(_) => eprintln!("warning: the namespace cleanup thread panicked"),
        }
    }
}

/// Reads the API server's `/metrics` text as `client`.
pub async fn apiserver_metrics(client: &Client) -> Result<String> {
    // kube builds the http::Request, so the tests need no direct `http` dependency: "" + "/" + "metrics".
    let request = kube::core::Request::new("")
        .get("metrics", &Default::default())
        .context("building the /metrics request")?;
    client.request_text(request).await.context("GET /metrics")
}

/// The value of the sample of `metric` whose labels include every `(name, value)` in `labels`, summed over
/// all such samples (other labels may differ); counters, gauges and untyped samples (prometheus-parse).
pub fn metric_sum(text: &str, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .filter_map(|s| match s.value {
            prometheus_parse::Value::Counter(x)
            | prometheus_parse::Value::Gauge(x)
            | prometheus_parse::Value::Untyped(x) => Some(x),
            _ => None,
        })
        .sum()
}

/// Audit events (JSON lines) about `namespace`, read until `done` holds for them or `timeout` passes.
pub async fn audit_events(
    log: &Path,
    namespace: &str,
    timeout: Duration,
    done: impl Fn(&[serde_json::Value]) -> bool,
) -> Result<Vec<serde_json::Value>> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        // Small file, test-only code: a blocking read is fine here.
        let text =
            std::fs::read_to_string(log).with_context(|| format!("reading {}", log.display()))?;
        let events: Vec<serde_json::Value> = text
            .lines()
            .filter(|l| l.contains(namespace))
            .filter_map(|l| serde_json::from_str(l).ok())
            .filter(|e: &serde_json::Value| e["objectRef"]["namespace"] == namespace)
            .collect();
        if done(&events) {
            return Ok(events);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "the audit log {} did not show the expected events for namespace {namespace} within {timeout:?}; \
                 found {} events",
                log.display(),
                events.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
