//! Everything the harness does to the cluster outside the variants: connect, check permissions, install the
//! CRD, create its namespaces and Widgets, and remove all of it again. It never touches a namespace that
//! does not carry its run label.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, CustomResourceExt};

use super::widget::{Widget, WidgetSpec};

/// Labels on everything the bench creates.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kubectl-ctrlaudit");
pub const RUN_LABEL: &str = "ctrlaudit.io/bench-run";
pub const VARIANT_LABEL: &str = "ctrlaudit.io/bench-variant";
/// On the CRD when a run installed it, so `--cleanup RUN` knows it may remove it.
pub const CRD_CREATED_BY: &str = "ctrlaudit.io/created-by-bench-run";
pub const CRD_NAME: &str = "widgets.bench.ctrlaudit.io";

/// Errors callers tell apart (exit codes, messages).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot reach the API server at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error(
        "forbidden: the bench needs {missing} (as {user}); grant them (e.g. a ClusterRole bound to you) or run as a user who has them"
    )]
    Forbidden { missing: String, user: String },
    #[error(
        "the cluster's CRD {CRD_NAME} differs from the bench's ({differences}); the bench will not change it. \
         Delete it if nothing else uses it (kubectl delete crd {CRD_NAME}) or use another cluster"
    )]
    CrdConflict { differences: String },
}

/// The API server's version (`major.minor`, git version), or [`ClusterError::Unreachable`].
pub async fn version(client: &Client, url: &str) -> Result<String> {
    let info = tokio::time::timeout(Duration::from_secs(10), client.apiserver_version())
        .await
        .map_err(|_| ClusterError::Unreachable {
            url: url.to_string(),
            reason: "no answer within 10s".into(),
        })?
        .map_err(|e| ClusterError::Unreachable {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
    Ok(info.git_version)
}

/// One permission the bench needs.
#[derive(Debug, Clone, Copy)]
struct Need {
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
}

const fn need(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
) -> Need {
    Need {
        verb,
        group,
        resource,
        subresource,
    }
}

const NEEDS: &[Need] = &[
    need("create", "", "namespaces", ""),
    need("get", "", "namespaces", ""),
    need("delete", "", "namespaces", ""),
    need(
        "get",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "",
    ),
    need("create", "bench.ctrlaudit.io", "widgets", ""),
    need("get", "bench.ctrlaudit.io", "widgets", ""),
    need("list", "bench.ctrlaudit.io", "widgets", ""),
    need("watch", "bench.ctrlaudit.io", "widgets", ""),
    need("patch", "bench.ctrlaudit.io", "widgets", ""),
    need("deletecollection", "bench.ctrlaudit.io", "widgets", ""),
    need("patch", "bench.ctrlaudit.io", "widgets", "status"),
    need("update", "bench.ctrlaudit.io", "widgets", "status"),
];

/// Asks the API server (SelfSubjectAccessReview) whether the user may do everything the run needs; the
/// error names each missing verb on each resource.
pub async fn check_permissions(client: &Client, install_crd: bool, finalize: bool) -> Result<()> {
    let mut needs: Vec<Need> = NEEDS.to_vec();
    if install_crd {
        needs.push(need(
            "create",
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "",
        ));
    }
    if finalize {
        needs.push(need("update", "", "namespaces", "finalize"));
    }
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answers = futures::stream::iter(needs.iter().map(|n| {
        let api = api.clone();
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(n.verb.into()),
                    group: Some(n.group.into()),
                    resource: Some(n.resource.into()),
                    subresource: (!n.subresource.is_empty()).then(|| n.subresource.into()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        async move { api.create(&PostParams::default(), &review).await }
    }))
    .buffered(8)
    .collect::<Vec<_>>()
    .await;
    let mut missing = Vec::new();
    for (n, a) in needs.iter().zip(answers) {
        match a {
            Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => {}
            Ok(_) => missing.push(describe(n)),
            // Cannot even ask (very old server, or SSAR disabled): the calls themselves will say.
            Err(_) => return Ok(()),
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let user = whoami(client)
        .await
        .unwrap_or_else(|| "the current user".into());
    Err(ClusterError::Forbidden {
        missing: missing.join(", "),
        user,
    }
    .into())
}

fn describe(n: &Need) -> String {
    let group = if n.group.is_empty() {
        String::new()
    } else {
        format!(".{}", n.group)
    };
    let sub = if n.subresource.is_empty() {
        String::new()
    } else {
        format!("/{}", n.subresource)
    };
    let scope = if n.resource == "namespaces" || n.resource == "customresourcedefinitions" {
        ""
    } else {
        " (in the namespaces it creates)"
    };
    format!("`{}` on {}{group}{sub}{scope}", n.verb, n.resource)
}

async fn whoami(client: &Client) -> Option<String> {
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    let r = api
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .ok()?;
    r.status?.user_info?.username
}

/// Turns a 403 from an API call into a message naming the verb and resource.
pub fn explain(e: kube::Error, verb: &str, what: &str) -> anyhow::Error {
    match &e {
        kube::Error::Api(s) if s.is_forbidden() => {
            anyhow::anyhow!("forbidden: `{verb}` on {what} was denied: {}", s.message)
        }
        _ => anyhow::Error::new(e).context(format!("{verb} {what}")),
    }
}

/// Whether the CRD was there before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrdOrigin {
    PreExisting,
    InstalledByRun,
}

/// Does the CRD exist? (For the permission check, before [`ensure_crd`].)
pub async fn crd_exists(client: &Client) -> Result<bool> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    Ok(api
        .get_opt(CRD_NAME)
        .await
        .map_err(|e| explain(e, "get", "customresourcedefinitions"))?
        .is_some())
}

/// What differs between the cluster's CRD and the bench's in what the bench relies on.
pub fn crd_differences(
    existing: &CustomResourceDefinition,
    ours: &CustomResourceDefinition,
) -> Vec<String> {
    let mut d = Vec::new();
    let (e, o) = (&existing.spec, &ours.spec);
    if e.group != o.group {
        d.push(format!("group {} vs {}", e.group, o.group));
    }
    if e.scope != o.scope {
        d.push(format!("scope {} vs {}", e.scope, o.scope));
    }
    if e.names.kind != o.names.kind || e.names.plural != o.names.plural {
        d.push(format!(
            "names {}/{} vs {}/{}",
            e.names.kind, e.names.plural, o.names.kind, o.names.plural
        ));
    }
    for ov in &o.versions {
        let Some(ev) = e.versions.iter().find(|v| v.name == ov.name) else {
            d.push(format!("version {} is missing", ov.name));
            continue;
        };
        if !ev.served {
            d.push(format!("version {} is not served", ov.name));
        }
        if ev.storage != ov.storage {
            d.push(format!("version {} storage flag", ov.name));
        }
        let status = |v: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion| {
            v.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some()
        };
        if status(ev) != status(ov) {
            d.push(format!("version {} status subresource", ov.name));
        }
        let schema = |v: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion| {
            serde_json::to_value(&v.schema).unwrap_or_default()
        };
        if schema(ev) != schema(ov) {
            d.push(format!("version {} schema", ov.name));
        }
    }
    d
}

/// Installs the Widget CRD if absent (and waits until it is served); accepts an identical one; refuses to
/// touch one that differs.
pub async fn ensure_crd(client: &Client, run_id: &str) -> Result<CrdOrigin> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let ours = Widget::crd();
    let origin = match api
        .get_opt(CRD_NAME)
        .await
        .map_err(|e| explain(e, "get", "customresourcedefinitions"))?
    {
        Some(existing) => {
            let diffs = crd_differences(&existing, &ours);
            if !diffs.is_empty() {
                return Err(ClusterError::CrdConflict {
                    differences: diffs.join("; "),
                }
                .into());
            }
            CrdOrigin::PreExisting
        }
        None => {
            let mut crd = ours.clone();
            crd.metadata.labels = Some([(MANAGED_BY.0.into(), MANAGED_BY.1.into())].into());
            crd.metadata.annotations = Some([(CRD_CREATED_BY.into(), run_id.into())].into());
            match api.create(&PostParams::default(), &crd).await {
                Ok(_) => CrdOrigin::InstalledByRun,
                // Someone installed it at the same moment: judge theirs like any existing one.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    return Box::pin(ensure_crd(client, run_id)).await;
                }
                Err(e) => return Err(explain(e, "create", "customresourcedefinitions")),
            }
        }
    };
    let established = await_condition(api, CRD_NAME, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .context("the Widget CRD did not become Established within 30s")?
        .context("watching the Widget CRD")?;
    Ok(origin)
}

/// Creates a namespace labelled as the bench's, for `variant` of run `run_id`.
pub async fn create_namespace(
    client: &Client,
    name: &str,
    run_id: &str,
    variant: &str,
) -> Result<()> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(
                [
                    (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
                    (RUN_LABEL.to_string(), run_id.to_string()),
                    (VARIANT_LABEL.to_string(), variant.to_string()),
                ]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let api: Api<Namespace> = Api::all(client.clone());
    api.create(&PostParams::default(), &ns)
        .await
        .map_err(|e| explain(e, "create", &format!("namespace {name}")))?;
    Ok(())
}

/// The Widget the harness creates as object `i` of `variant`.
pub fn widget(i: u64, run_id: &str, variant: &str) -> Widget {
    let mut w = Widget::new(
        &format!("w-{i:05}"),
        WidgetSpec {
            count: i64::try_from(i).unwrap_or(i64::MAX),
            message: String::new(),
        },
    );
    w.metadata.labels = Some(
        [
            (MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string()),
            (RUN_LABEL.to_string(), run_id.to_string()),
            (VARIANT_LABEL.to_string(), variant.to_string()),
        ]
        .into(),
    );
    w
}

/// Where to create how many Widgets.
#[derive(Debug, Clone)]
pub struct Target {
    pub namespace: String,
    pub variant: String,
    pub count: u64,
}

/// How a bulk creation went.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Creation {
    pub objects: u64,
    pub seconds: f64,
    pub per_second: f64,
    pub parallelism: usize,
}

/// Creates every target's Widgets with at most `parallelism` requests in flight.
pub async fn create_widgets(
    client: &Client,
    targets: &[Target],
    run_id: &str,
    parallelism: usize,
    mut progress: impl FnMut(u64),
) -> Result<Creation> {
    let start = Instant::now();
    let jobs = targets.iter().flat_map(|t| {
        let api: Api<Widget> = Api::namespaced(client.clone(), &t.namespace);
        (0..t.count).map(move |i| {
            (
                api.clone(),
                widget(i, run_id, &t.variant),
                t.namespace.clone(),
            )
        })
    });
    let mut results = futures::stream::iter(jobs)
        .map(|(api, w, ns)| async move {
            match api.create(&PostParams::default(), &w).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                Err(e) => Err(explain(e, "create", &format!("widgets in namespace {ns}"))),
            }
        })
        .buffer_unordered(parallelism.max(1));
    let mut done = 0;
    while let Some(r) = results.try_next().await? {
        let () = r;
        done += 1;
        progress(done);
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(Creation {
        objects: done,
        seconds,
        per_second: done as f64 / seconds.max(1e-9),
        parallelism,
    })
}

/// What cleanup did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CleanupReport {
    pub namespaces_deleted: Vec<String>,
    /// Deleted but still Terminating when cleanup stopped waiting (no namespace controller, or slow).
    pub terminating: Vec<String>,
    /// Finalized directly (`--finalize-namespaces`).
    pub finalized: Vec<String>,
    pub crd_deleted: bool,
    pub errors: Vec<String>,
}

impl CleanupReport {
    /// True when nothing the run created is left (Terminating namespaces count as left).
    pub fn complete(&self) -> bool {
        self.errors.is_empty() && self.terminating.is_empty()
    }
}

/// Ready and total Widgets per namespace of run `run_id`, from a LIST: what `kubectl get widgets` shows at this
/// moment. The harness takes the end-of-run Ready count from here, after the variants stopped, rather than
/// from its watch, which may still be catching up on a loaded machine.
pub async fn ready_by_namespace(
    client: &Client,
    run_id: &str,
) -> Result<BTreeMap<String, (u64, u64)>> {
    let api: Api<Widget> = Api::all(client.clone());
    let mut lp = ListParams::default()
        .labels(&format!("{RUN_LABEL}={run_id}"))
        .limit(500);
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    loop {
        let page = api
            .list(&lp)
            .await
            .map_err(|e| explain(e, "list", "widgets.bench.ctrlaudit.io"))?;
        for w in &page.items {
            let e = out
                .entry(w.metadata.namespace.clone().unwrap_or_default())
                .or_default();
            e.0 += u64::from(super::book::is_ready(w));
            e.1 += 1;
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => return Ok(out),
        }
    }
}

/// The exact commands that remove what run `run_id` left behind.
pub fn cleanup_commands(run_id: &str) -> String {
    format!(
        "kubectl ctrlaudit bench --cleanup {run_id}\n  (or: kubectl delete widgets.bench.ctrlaudit.io -A -l {RUN_LABEL}={run_id} && \
         kubectl delete namespace -l {RUN_LABEL}={run_id})"
    )
}

/// Deletes the run's Widgets and namespaces (only those labelled with `run_id`), waits up to `wait` for the
/// namespaces to go, finalizes the stragglers if asked, and removes the CRD if the run installed it and no
/// Widget is left anywhere.
pub async fn cleanup(
    client: &Client,
    namespaces: &[String],
    run_id: &str,
    crd: Option<CrdOrigin>,
    finalize: bool,
    wait: Duration,
) -> CleanupReport {
    let mut report = CleanupReport::default();
    let ns_api: Api<Namespace> = Api::all(client.clone());
    let selector = format!("{RUN_LABEL}={run_id}");
    // Only namespaces that carry this run's label: a name clash must never delete someone else's namespace.
    let mut ours = Vec::new();
    for ns in namespaces {
        match ns_api.get_opt(ns).await {
            Ok(Some(n)) => {
                let labelled = n
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(RUN_LABEL))
                    .is_some_and(|v| v == run_id);
                if labelled {
                    ours.push(ns.clone());
                } else {
                    report
                        .errors
                        .push(format!("namespace {ns} lacks {selector}; left alone"));
                }
            }
            Ok(None) => {}
            Err(e) => report.errors.push(format!("reading namespace {ns}: {e}")),
        }
    }
    // Objects first: without a namespace controller nothing else would delete them.
    let deletions = futures::stream::iter(ours.iter().map(|ns| {
        let api: Api<Widget> = Api::namespaced(client.clone(), ns);
        let lp = ListParams::default().labels(&selector);
        async move {
            api.delete_collection(&DeleteParams::default(), &lp)
                .await
                .map(|_| ())
                .map_err(|e| format!("deleting the widgets in {ns}: {e}"))
        }
    }))
    .buffer_unordered(8)
    .collect::<Vec<_>>()
    .await;
    report
        .errors
        .extend(deletions.into_iter().filter_map(Result::err));
    let deleted = futures::stream::iter(ours.iter().map(|ns| {
        let api = ns_api.clone();
        async move { (ns, api.delete(ns, &DeleteParams::default()).await) }
    }))
    .buffer_unordered(8)
    .collect::<Vec<_>>()
    .await;
    for (ns, r) in deleted {
        match r {
            Ok(_) => report.namespaces_deleted.push(ns.clone()),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => report.errors.push(format!("deleting namespace {ns}: {e}")),
        }
    }
    let deadline = Instant::now() + wait;
    let mut left = remaining(&ns_api, &ours).await;
    while !left.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        left = remaining(&ns_api, &ours).await;
    }
    if finalize {
        for ns in &left {
            if finalize_namespace(&ns_api, ns).await.is_ok() {
                report.finalized.push(ns.clone());
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        left = remaining(&ns_api, &ours).await;
        while !left.is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            left = remaining(&ns_api, &ours).await;
        }
    }
    report.terminating = left;
    if crd == Some(CrdOrigin::InstalledByRun) {
        report.crd_deleted = delete_crd_if_unused(client, &mut report.errors).await;
    }
    report
}

async fn remaining(api: &Api<Namespace>, names: &[String]) -> Vec<String> {
    let mut left = Vec::new();
    for n in names {
        // An error reading it counts as still there: better to report than to claim it is gone.
        if !matches!(api.get_opt(n).await, Ok(None)) {
            left.push(n.clone());
        }
    }
    left
}

async fn finalize_namespace(api: &Api<Namespace>, name: &str) -> Result<()> {
    let mut ns = api.get(name).await?;
    if let Some(spec) = ns.spec.as_mut() {
        spec.finalizers = Some(Vec::new());
    }
    api.replace_subresource("finalize", name, &PostParams::default(), &ns)
        .await?;
    Ok(())
}

async fn delete_crd_if_unused(client: &Client, errors: &mut Vec<String>) -> bool {
    let widgets: Api<Widget> = Api::all(client.clone());
    match widgets.list(&ListParams::default().limit(1)).await {
        Ok(l) if l.items.is_empty() => {}
        Ok(_) => {
            errors.push(format!(
                "kept the CRD {CRD_NAME} this run installed: Widgets outside the bench's namespaces use it"
            ));
            return false;
        }
        Err(e) => {
            errors.push(format!("listing widgets before deleting the CRD: {e}"));
            return false;
        }
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.delete(CRD_NAME, &DeleteParams::default()).await {
        Ok(_) => true,
        Err(e) => {
            errors.push(format!("deleting the CRD {CRD_NAME}: {e}"));
            false
        }
    }
}

/// `--cleanup RUN_ID`: finds the run's namespaces by label and removes them like the end of a run would.
pub async fn cleanup_run(client: &Client, run_id: &str, finalize: bool) -> Result<CleanupReport> {
    let ns_api: Api<Namespace> = Api::all(client.clone());
    let lp = ListParams::default().labels(&format!(
        "{RUN_LABEL}={run_id},{}={}",
        MANAGED_BY.0, MANAGED_BY.1
    ));
    let names: Vec<String> = ns_api
        .list(&lp)
        .await
        .map_err(|e| explain(e, "list", "namespaces"))?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crd_api
        .get_opt(CRD_NAME)
        .await
        .ok()
        .flatten()
        .filter(|c| {
            c.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CRD_CREATED_BY))
                .is_some_and(|r| r == run_id)
        })
        .map(|_| CrdOrigin::InstalledByRun);
    Ok(cleanup(
        client,
        &names,
        run_id,
        crd,
        finalize,
        Duration::from_secs(15),
    )
    .await)
}

/// The API server's feature gates, from `kubernetes_feature_enabled` in its `/metrics` (empty when that is
/// not readable).
pub async fn feature_gates(client: &Client) -> BTreeMap<String, bool> {
    let Ok(req) = kube::core::Request::new("").get("metrics", &Default::default()) else {
        return BTreeMap::new();
    };
    let Ok(text) = client.request_text(req).await else {
        return BTreeMap::new();
    };
    feature_gates_in(&text)
}

/// `kubernetes_feature_enabled{name=…}` samples of an API server's `/metrics` text.
fn feature_gates_in(text: &str) -> BTreeMap<String, bool> {
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let Ok(scrape) = prometheus_parse::Scrape::parse(lines) else {
        return BTreeMap::new();
    };
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == "kubernetes_feature_enabled")
        .filter_map(|s| {
            let on = match s.value {
                prometheus_parse::Value::Gauge(x) | prometheus_parse::Value::Untyped(x) => x == 1.0,
                _ => return None,
            };
            Some((s.labels.get("name")?.to_string(), on))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_crd_matches_itself_and_a_changed_one_does_not() {
        let ours = Widget::crd();
        assert!(crd_differences(&ours, &ours).is_empty());
        let mut other = ours.clone();
        other.spec.versions[0].subresources = None;
        other.spec.scope = "Cluster".into();
        let d = crd_differences(&other, &ours);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().any(|x| x.contains("status subresource")));
    }

    #[test]
    fn feature_gates_from_metrics_text() {
        let text = "# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.\n# TYPE kubernetes_feature_enabled gauge\nkubernetes_feature_enabled{name=\"WatchList\",stage=\"BETA\"} 1\nkubernetes_feature_enabled{name=\"ConcurrentWatchObjectDecode\",stage=\"BETA\"} 0\nkubernetes_feature_enabled_other{name=\"X\"} 1\n";
        let gates = feature_gates_in(text);
        assert_eq!(gates.len(), 2, "{gates:?}");
        assert_eq!(gates.get("WatchList"), Some(&true));
        assert_eq!(gates.get("ConcurrentWatchObjectDecode"), Some(&false));
        assert!(feature_gates_in("not metrics {{{").is_empty());
    }

    #[test]
    fn widgets_carry_the_run_labels() {
        let w = widget(7, "abc123", "good");
        assert_eq!(w.metadata.name.as_deref(), Some("w-00007"));
        assert_eq!(w.spec.count, 7);
        let labels = w.metadata.labels.unwrap_or_default();
        assert_eq!(labels.get(RUN_LABEL).map(String::as_str), Some("abc123"));
        assert_eq!(labels.get(VARIANT_LABEL).map(String::as_str), Some("good"));
    }

    #[test]
    fn cleanup_commands_name_the_run() {
        let c = cleanup_commands("abc123");
        assert!(c.contains("--cleanup abc123"));
        assert!(c.contains("ctrlaudit.io/bench-run=abc123"));
    }
}
