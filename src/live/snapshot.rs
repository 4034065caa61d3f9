//! The plain, serializable record of one observation window that `collect` produces and the detectors read.
//!
//! Everything here is data: no clients, no handles. A snapshot saved with `--record` is a fixture, and the
//! detectors give the same findings on it offline (`--replay`).

use crate::report::Note;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Version of the snapshot file format; bumped when a field changes meaning.
pub const FORMAT_VERSION: u32 = 1;

/// Everything one `live` run observed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Snapshot {
    pub format: u32,
    pub window: Window,
    pub scope: Scope,
    /// The custom resource types that were discovered (watched or not).
    pub resources: Vec<ResourceType>,
    /// One record per object seen during the window.
    pub objects: Vec<ObjectRecord>,
    /// The API server's and the controllers' `/metrics`, scraped during the window.
    pub metrics: Vec<MetricSource>,
    /// What an audit log said, if one was read.
    pub audit: Option<AuditSummary>,
    /// What could not be observed, and why.
    pub notes: Vec<Note>,
    /// The tool's own API requests, by kind: the cost of watching.
    pub requests: BTreeMap<String, u64>,
    /// The API server's write ceiling in writes/s, when measured (`--write-ceiling`, from `bench`).
    pub write_ceiling: Option<f64>,
}

impl Snapshot {
    /// Adds an audit log's summary; a snapshot without a window of its own (an offline replay of a log) takes the
    /// span the log covers.
    pub fn attach_audit(&mut self, summary: AuditSummary) {
        if self.window.end_ms <= self.window.start_ms
            && let (Some(a), Some(b)) = (summary.first_ms, summary.last_ms)
        {
            self.window = Window {
                start_ms: a,
                end_ms: b.max(a + 1),
            };
        }
        self.audit = Some(summary);
    }
}

/// The observation window, in milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub start_ms: i64,
    pub end_ms: i64,
}

impl Window {
    /// Length in seconds, never below one millisecond so rates stay finite.
    pub fn secs(&self) -> f64 {
        ((self.end_ms - self.start_ms).max(1)) as f64 / 1000.0
    }
}

/// Which namespaces were watched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scope {
    /// `None` = all namespaces.
    pub namespace: Option<String>,
}

impl Scope {
    pub fn label(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("namespace {ns}"),
            None => "all namespaces".to_string(),
        }
    }
}

/// A resource type: a custom resource, or a built-in kind named by `--resource` or added by `--owned`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// `subresources.status` is set: status written through the main resource is dropped.
    pub status_subresource: bool,
    /// It was watched during the window.
    pub watched: bool,
    /// Times the watch had to list again (after a 410 Gone or a dropped connection).
    pub relists: u32,
    /// How long the first list took, from the start of the window: before it completes nothing can be judged.
    pub listed_after_ms: Option<i64>,
    /// Watched for metadata only (`PartialObjectMetadata`: labels, annotations, generation, managedFields,
    /// ownerReferences): the built-in kinds, whose spec and status no rule reads. A Secret is never read whole.
    pub metadata_only: bool,
    /// Watched because of `--owned`: only its objects with an ownerReference to a type watched for its own sake
    /// are kept.
    pub owned: bool,
    /// The CRD's `ctrlaudit.io/allow` annotation (see [`ALLOW_ANNOTATION`]), for every object of the kind.
    /// Omitted when absent, so recordings made before it existed read the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<String>,
}

/// The annotation that excuses one object (or, on a CRD, every object of its kind) from rules, with a reason:
/// `ctrlaudit.io/allow: "CA202: the vendor's API stamps it"`, one `CODES: reason` per line.
pub const ALLOW_ANNOTATION: &str = "ctrlaudit.io/allow";

impl ResourceType {
    /// `widgets.bench.ctrlaudit.io`.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// The digest of one object at the end of the window plus what happened to it during the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ObjectRecord {
    // Shared, not owned: every object of a type carries the same three, and at 100,000 objects three owned
    // strings each would be a third of the snapshot.
    pub group: Arc<str>,
    pub kind: Arc<str>,
    pub plural: Arc<str>,
    pub namespace: Option<Arc<str>>,
    pub name: String,
    pub created_ms: Option<i64>,
    /// When the watch first saw it (the window start for objects that existed before).
    pub first_seen_ms: i64,
    /// Deleted during the window.
    pub deleted: bool,
    pub generation: i64,
    pub observed_generation: Option<i64>,
    /// `status` is present and not empty.
    pub has_status: bool,
    /// The `Ready` condition, if the object has one.
    pub ready: Option<ReadyCondition>,
    /// When `metadata.generation` last changed, as far as known (a watched change, else the spec owner's
    /// managedFields time, else creation).
    pub generation_changed_ms: Option<i64>,
    /// The `metadata.managedFields` entries at the end of the window.
    pub managers: Vec<ManagerEntry>,
    /// Writes seen during the window (resourceVersion changes), by what they changed.
    pub writes: WriteCounts,
    /// Fields (annotation keys, status leaves) that changed during the window, with generation unchanged.
    pub churn: Vec<FieldChurn>,
    /// Writers of the main resource and of `/status` seen during the window, with their write counts.
    pub writers: Vec<WriterCount>,
    /// Fields whose owner (managedFields) changed during the window. Omitted when empty, so recordings made
    /// before it existed read the same.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handovers: Vec<FieldHandover>,
    /// The last few writes, newest last (bounded).
    pub history: Vec<WriteEvent>,
    /// Its `ctrlaudit.io/allow` annotation at the end of the window (see [`ALLOW_ANNOTATION`]). Omitted when
    /// absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<String>,
}

/// The `Ready` condition's status and since when it has had it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadyCondition {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub since_ms: Option<i64>,
}

/// One `metadata.managedFields` entry, reduced to what the detectors need.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ManagerEntry {
    pub manager: Arc<str>,
    /// `Update` or `Apply`.
    pub operation: Arc<str>,
    /// `""` (main resource) or `status`.
    pub subresource: Arc<str>,
    pub time_ms: Option<i64>,
    pub owns_spec: bool,
    pub owns_status: bool,
    /// Annotation keys this entry owns.
    pub annotations: Vec<String>,
}

/// Writes by what they changed. A write may change several parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriteCounts {
    pub total: u32,
    /// `metadata.generation` changed.
    pub spec: u32,
    pub status: u32,
    pub annotations: u32,
    pub labels: u32,
    /// Writes that left generation unchanged.
    pub no_spec_change: u32,
    /// Writes that changed the main resource (spec, labels or annotations), as opposed to status only.
    pub main: u32,
}

/// A field that kept changing while generation did not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FieldChurn {
    /// `metadata.annotations[example.com/last-seen]` or `status.lastUpdated`.
    pub field: String,
    pub changes: u32,
    /// Changes whose new value looked like a timestamp or a nonce.
    pub volatile_changes: u32,
    /// The field manager that owns the field (managedFields), if known.
    pub manager: Option<String>,
}

/// A field that passed from one field manager to another during the window (managedFields), e.g.
/// `spec.replicas` between an operator and an autoscaler.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FieldHandover {
    /// `spec.count`, `metadata.labels[tier]`, `metadata.annotations[example.com/x]`.
    pub field: String,
    /// The managers that owned it, in the order they first did.
    pub owners: Vec<String>,
    /// Times it changed owner.
    pub handovers: u32,
    /// Handovers after which the field held a value that its new owner had already set before: the field is
    /// being flipped back, not handed on.
    pub reverts: u32,
    /// Reverts over a different value (A sets x, B sets y, A sets x again): a fight. Co-owners that all apply the
    /// same value revert without flipping. `None` in recordings made before it existed (then reverts stand in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flips: Option<u32>,
}

/// Writes attributed to one manager, by main resource or `/status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriterCount {
    pub manager: String,
    pub subresource: String,
    pub writes: u32,
}

/// One observed write.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WriteEvent {
    pub t_ms: i64,
    pub spec: bool,
    pub status: bool,
    pub annotations: bool,
    pub labels: bool,
    pub manager: Option<String>,
}

/// Which kind of `/metrics` endpoint a source is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    #[default]
    Apiserver,
    Controller,
}

/// One `/metrics` endpoint and its scrapes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricSource {
    /// `apiserver`, a URL, or `pod NS/NAME:PORT`.
    pub name: String,
    pub kind: SourceKind,
    /// The first and the last scrape (see [`MetricSource::push`]); recordings made before that kept every one,
    /// and read the same.
    pub scrapes: Vec<Scrape>,
    /// Per series, the largest value a gauge took in the scrapes between the first and the last, which are not
    /// kept. Omitted when empty, so recordings made before it existed read the same.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub peaks: Vec<MetricSample>,
    /// Scrapes taken, kept or not (0 in recordings made before it existed: then `scrapes` are all of them).
    #[serde(skip_serializing_if = "is_zero")]
    pub scraped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A sample of a counter or a histogram's parts: its largest value is its last (or, after a restart, no
/// larger than what `delta` counts), so only gauges need their peaks kept.
fn is_counter(name: &str) -> bool {
    ["_total", "_sum", "_count", "_bucket"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// Folds `more` into `peaks`, both sorted by (name, labels) (a scrape's samples are): per series the larger
/// value. Linear, so that a scrape of many series costs no more than reading it.
fn merge_max(
    peaks: Vec<MetricSample>,
    more: impl Iterator<Item = MetricSample>,
) -> Vec<MetricSample> {
    let mut out = Vec::with_capacity(peaks.len());
    let mut a = peaks.into_iter().peekable();
    let mut b = more.peekable();
    loop {
        let order = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => (&x.name, &x.labels).cmp(&(&y.name, &y.labels)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => break,
        };
        match order {
            std::cmp::Ordering::Less => out.extend(a.next()),
            std::cmp::Ordering::Greater => out.extend(b.next()),
            std::cmp::Ordering::Equal => {
                if let (Some(mut x), Some(y)) = (a.next(), b.next()) {
                    x.value = x.value.max(y.value);
                    out.push(x);
                }
            }
        }
    }
    out
}

/// One scrape: the samples of the families the detectors read, and a cardinality summary of every family.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scrape {
    pub t_ms: i64,
    pub samples: Vec<MetricSample>,
    /// Series per family (controllers only: the API server's own families are not the subject of CA402).
    pub families: Vec<FamilyCardinality>,
}

/// A metric sample: name (with `_sum`/`_count` suffixes for histograms), labels, value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MetricSample {
    pub name: String,
    pub labels: Labels,
    pub value: f64,
}

impl MetricSample {
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).unwrap_or("")
    }
}

/// A sample's labels, sorted by name: a map in recordings, and in memory a short sorted list of shared strings
/// (the names, and values such as a controller's name, repeat in every sample of a scrape: a controller with a
/// label per object has tens of thousands of samples, and a map of owned strings each cost 900 bytes a sample).
/// Ordered as a `BTreeMap` of the same pairs would be.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Labels(Vec<(Arc<str>, Arc<str>)>);

impl Labels {
    /// The value of label `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(name))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// The pairs as the shared strings they are (cloning one is a reference count).
    pub fn shared(&self) -> impl Iterator<Item = &(Arc<str>, Arc<str>)> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Takes each string from `pool` where an equal one is there, so that equal strings are stored once.
    pub fn share_with(&mut self, pool: &std::collections::HashSet<Arc<str>>) {
        for (k, v) in &mut self.0 {
            for s in [k, v] {
                if let Some(a) = pool.get(&**s) {
                    *s = a.clone();
                }
            }
        }
    }

    /// Keeps the labels `keep` says yes to.
    pub fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.0.retain(|(k, _)| keep(k));
    }

    /// From pairs in any order (a later duplicate name wins, as in a map), with each string taken from
    /// `interned` when an equal one is there, and added to it when not.
    pub fn interned<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
        interned: &mut std::collections::HashSet<Arc<str>>,
    ) -> Self {
        let mut share = |s: &str| -> Arc<str> {
            if let Some(a) = interned.get(s) {
                return a.clone();
            }
            let a: Arc<str> = Arc::from(s);
            interned.insert(a.clone());
            a
        };
        let mut v: Vec<(Arc<str>, Arc<str>)> = pairs
            .into_iter()
            .map(|(k, v)| (share(k), share(v)))
            .collect();
        Self::sorted(&mut v);
        Self(v)
    }

    fn sorted(v: &mut Vec<(Arc<str>, Arc<str>)>) {
        // Stable, then the last of equal names kept: what inserting into a map one by one gives.
        v.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Arc<str>, Arc<str>)> = Vec::with_capacity(v.len());
        for p in v.drain(..) {
            match out.last_mut() {
                Some(last) if last.0 == p.0 => *last = p,
                _ => out.push(p),
            }
        }
        *v = out;
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Labels {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut v: Vec<(Arc<str>, Arc<str>)> = iter
            .into_iter()
            .map(|(k, v)| (Arc::from(k.as_ref()), Arc::from(v.as_ref())))
            .collect();
        Self::sorted(&mut v);
        Self(v)
    }
}

impl Serialize for Labels {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, String>::deserialize(d)?;
        Ok(map.into_iter().collect())
    }
}

/// How many series a family has, and how many distinct values each of its labels takes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FamilyCardinality {
    pub family: String,
    pub series: u64,
    pub labels: Vec<LabelCardinality>,
}

/// One label of a family.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelCardinality {
    pub name: String,
    pub distinct: u64,
    /// Up to [`MAX_LABEL_VALUES`] of its values, sorted, so that they can be matched against object names.
    pub values: Vec<String>,
}

/// How many values of one label a snapshot keeps.
pub const MAX_LABEL_VALUES: usize = 200;

/// What an audit log said, aggregated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditSummary {
    pub source: String,
    pub lines: u64,
    /// Events at stage `ResponseComplete` (one per request).
    pub requests: u64,
    /// Lines that were not JSON audit events: counted and skipped.
    pub malformed: u64,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    /// Request counts by identity, verb, resource, subresource, namespace and response code.
    pub groups: Vec<AuditGroup>,
    /// Writes per identity and object.
    pub objects: Vec<AuditObject>,
    /// Per client (user and user agent): when it was active and whether it watched, for the actor model
    /// (`live::actor`). Omitted when empty, so recordings made before it existed read the same.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<AuditClient>,
}

/// The shape of one client's traffic in an audit log: a controller holds watches and comes back again and again,
/// a person or a deploy job sends a burst and is gone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditClient {
    /// User and user agent (no field manager).
    pub identity: Identity,
    /// Completed requests (a watch counts when it ends).
    pub requests: u64,
    /// It opened at least one watch (seen when the watch started, or ended, within the window).
    pub watched: bool,
    pub first_ms: i64,
    pub last_ms: i64,
    /// Distinct [`AuditClient::SLOT_MS`] slots in which it sent requests, counted up to
    /// [`AuditClient::MAX_SLOTS`].
    pub active_slots: u32,
}

impl AuditClient {
    pub const SLOT_MS: i64 = 10_000;
    pub const MAX_SLOTS: u32 = 10_000;

    /// Seconds from its first request to its last.
    pub fn span_secs(&self) -> f64 {
        (self.last_ms - self.first_ms).max(0) as f64 / 1000.0
    }
}

impl AuditSummary {
    /// The span the log covers, in seconds (at least one).
    pub fn secs(&self) -> f64 {
        match (self.first_ms, self.last_ms) {
            (Some(a), Some(b)) if b > a => ((b - a) as f64 / 1000.0).max(1.0),
            _ => 1.0,
        }
    }
}

/// Who sent a request, as the audit log records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Identity {
    pub user: String,
    pub user_agent: String,
    /// The `fieldManager` query parameter of its writes, if any.
    pub manager: Option<String>,
}

impl Identity {
    /// The client alone (user and user agent): reads and rejected writes carry no field manager, so requests are
    /// grouped by who sent them.
    pub fn client(&self) -> Identity {
        Identity {
            manager: None,
            ..self.clone()
        }
    }
}

/// Requests of one kind from one identity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditGroup {
    pub identity: Identity,
    /// The audit verb: get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: Option<String>,
    pub code: u16,
    pub count: u64,
    /// Writes to the main resource whose request body the log holds (a `RequestResponse` or `Request` policy).
    /// Omitted when zero, so recordings made before it existed read the same.
    #[serde(skip_serializing_if = "is_zero")]
    pub with_body: u64,
    /// Writes to the main resource whose request body carried a non-empty `status`.
    pub status_in_body: u64,
    /// ... and whose response came back without it: the API server dropped it.
    pub status_dropped: u64,
    /// Distinct objects named.
    pub objects: u64,
}

/// Writes of one identity to one object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuditObject {
    pub identity: Identity,
    pub group: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: String,
    /// Successful writes to the main resource / to `/status`.
    pub main_writes: u32,
    pub status_writes: u32,
    /// Successful main-resource writes after which generation was unchanged.
    pub no_spec_change: u32,
    /// Annotation keys set to a new value, with how many of those values looked volatile.
    pub churn: Vec<FieldChurn>,
    pub first_ms: i64,
    pub last_ms: i64,
}

impl Snapshot {
    /// The resource type an object or finding belongs to.
    pub fn resource(&self, group: &str, plural_or_kind: &str) -> Option<&ResourceType> {
        self.resources.iter().find(|r| {
            r.group == group
                && (r.plural == plural_or_kind || r.kind.eq_ignore_ascii_case(plural_or_kind))
        })
    }

    /// True when any evidence at all was gathered: objects watched, metrics scraped, or an audit log with at
    /// least one audit event in it (a log of which no line is one, such as a gzip file, shows nothing).
    pub fn has_evidence(&self) -> bool {
        self.resources.iter().any(|r| r.watched)
            || self.metrics.iter().any(|m| !m.scrapes.is_empty())
            || self
                .audit
                .as_ref()
                .is_some_and(|a| a.requests > 0 || a.lines > a.malformed)
    }

    /// The metric sources of one kind that were scraped at least twice (rates need two points).
    pub fn sources(&self, kind: SourceKind) -> impl Iterator<Item = &MetricSource> {
        self.metrics
            .iter()
            .filter(move |m| m.kind == kind && m.scrapes.len() >= 2)
    }
}

impl MetricSource {
    /// Adds a scrape, keeping what the detectors read and no more: the first scrape, the last, and the gauges'
    /// per-series peaks of the ones between. Memory stays that of three scrapes however long the window and
    /// however short the interval (every scrape kept once cost 17 MB each at 20,000 series).
    pub fn push(&mut self, mut scrape: Scrape) {
        self.scraped += 1;
        // The series of one source are mostly the same from scrape to scrape: the label strings of the new one
        // are taken from the first, which stays, so that they are stored once.
        if let Some(first) = self.scrapes.first() {
            let pool: std::collections::HashSet<Arc<str>> = first
                .samples
                .iter()
                .flat_map(|s| s.labels.shared())
                .flat_map(|(k, v)| [k.clone(), v.clone()])
                .collect();
            for s in &mut scrape.samples {
                s.labels.share_with(&pool);
            }
        }
        if self.scrapes.len() < 2 {
            self.scrapes.push(scrape);
            return;
        }
        let Some(last) = self.scrapes.last_mut() else {
            return;
        };
        let previous = std::mem::replace(last, scrape);
        let gauges = previous
            .samples
            .into_iter()
            .filter(|s| !is_counter(&s.name));
        self.peaks = merge_max(std::mem::take(&mut self.peaks), gauges);
    }

    /// Scrapes taken (kept or not).
    pub fn scrape_count(&self) -> u64 {
        self.scraped.max(self.scrapes.len() as u64)
    }

    /// The increase of the counters named `name` whose labels match `filter`, first scrape to last, summed
    /// over series. A series that went down (a restart) counts from zero.
    pub fn delta(&self, name: &str, filter: impl Fn(&MetricSample) -> bool) -> f64 {
        let (Some(first), Some(last)) = (self.scrapes.first(), self.scrapes.last()) else {
            return 0.0;
        };
        let before: BTreeMap<&Labels, f64> = first
            .samples
            .iter()
            .filter(|s| s.name == name && filter(s))
            .map(|s| (&s.labels, s.value))
            .collect();
        last.samples
            .iter()
            .filter(|s| s.name == name && filter(s))
            .map(|s| {
                let b = before.get(&s.labels).copied().unwrap_or(0.0);
                if s.value >= b { s.value - b } else { s.value }
            })
            .sum()
    }

    /// The largest value of gauge `name` (matching `filter`, summed over series per scrape) over all scrapes. For
    /// the scrapes between the first and the last, the per-series peaks stand in: exact for one series (what the
    /// detectors filter down to), an upper bound for a sum of several.
    pub fn gauge_max(&self, name: &str, filter: impl Fn(&MetricSample) -> bool) -> Option<f64> {
        let sum = |samples: &[MetricSample]| {
            let mut seen = false;
            let v: f64 = samples
                .iter()
                .filter(|x| x.name == name && filter(x))
                .inspect(|_| seen = true)
                .map(|x| x.value)
                .sum();
            seen.then_some(v)
        };
        self.scrapes
            .iter()
            .filter_map(|s| sum(&s.samples))
            .chain(sum(&self.peaks))
            .reduce(f64::max)
    }

    /// Seconds between the first and the last scrape.
    pub fn span_secs(&self) -> f64 {
        match (self.scrapes.first(), self.scrapes.last()) {
            (Some(a), Some(b)) if b.t_ms > a.t_ms => (b.t_ms - a.t_ms) as f64 / 1000.0,
            _ => 0.0,
        }
    }

    /// The distinct values of `label` across the last scrape's samples of `name`.
    pub fn label_values(&self, name: &str, label: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .scrapes
            .last()
            .map(|s| {
                s.samples
                    .iter()
                    .filter(|x| x.name == name)
                    .filter_map(|x| x.labels.get(label).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample(name: &str, object: &str, value: f64) -> MetricSample {
        MetricSample {
            name: name.into(),
            labels: [("controller".to_string(), "w".to_string())]
                .into_iter()
                .chain((!object.is_empty()).then(|| ("name".to_string(), object.to_string())))
                .collect(),
            value,
        }
    }

    /// A scrape of `series` counter series (one per object) and one gauge, as `metrics::parse` sorts them.
    fn scrape(t_ms: i64, series: usize, count: f64, workers: f64) -> Scrape {
        let mut samples: Vec<MetricSample> = (0..series)
            .map(|i| sample("reconcile_total", &format!("obj-{i:05}"), count))
            .chain([sample("active_workers", "", workers)])
            .collect();
        samples.sort_by(|a, b| (&a.name, &a.labels).cmp(&(&b.name, &b.labels)));
        Scrape {
            t_ms,
            samples,
            families: Vec::new(),
        }
    }

    #[test]
    fn a_long_window_keeps_the_first_and_last_scrape_and_the_gauges_peaks() {
        let series = 20_000;
        let mut every = MetricSource::default();
        let mut bounded = MetricSource::default();
        for n in 0..30 {
            // The gauge peaks once in the middle, where no kept scrape sees it.
            let workers = if n == 13 { 9.0 } else { 1.0 };
            let s = scrape(n * 1000, series, n as f64 * 2.0, workers);
            every.scrapes.push(s.clone());
            bounded.push(s);
            assert!(bounded.scrapes.len() <= 2);
            assert!(bounded.peaks.len() <= 1, "only gauges have peaks kept");
        }
        let kept: usize = bounded
            .scrapes
            .iter()
            .map(|s| s.samples.len())
            .sum::<usize>()
            + bounded.peaks.len();
        assert_eq!(kept, 2 * (series + 1) + 1, "does not grow with the scrapes");
        assert_eq!(bounded.scrape_count(), 30);
        // What the detectors read is what every scrape kept would give.
        let all = |_: &MetricSample| true;
        assert_eq!(
            bounded.delta("reconcile_total", all),
            every.delta("reconcile_total", all)
        );
        assert_eq!(bounded.delta("reconcile_total", all), 58.0 * series as f64);
        assert_eq!(bounded.gauge_max("active_workers", all), Some(9.0));
        assert_eq!(
            bounded.gauge_max("active_workers", all),
            every.gauge_max("active_workers", all)
        );
        assert_eq!(bounded.span_secs(), every.span_secs());
        // A recording with only the kept scrapes reads back the same, and one without the new fields too.
        let text = serde_json::to_string(&bounded).unwrap();
        assert_eq!(
            serde_json::from_str::<MetricSource>(&text).unwrap(),
            bounded
        );
        let old: MetricSource =
            serde_json::from_str(r#"{"name":"x","kind":"controller","scrapes":[]}"#).unwrap();
        assert_eq!((old.peaks.len(), old.scrape_count()), (0, 0));
    }

    #[test]
    fn peaks_merge_by_series() {
        let a = vec![sample("g", "a", 1.0), sample("g", "c", 5.0)];
        let b = vec![
            sample("g", "a", 3.0),
            sample("g", "b", 2.0),
            sample("g", "c", 4.0),
        ];
        let m = merge_max(a, b.into_iter());
        let got: Vec<(String, f64)> = m
            .iter()
            .map(|s| (s.label("name").to_string(), s.value))
            .collect();
        assert_eq!(
            got,
            [("a".into(), 3.0), ("b".into(), 2.0), ("c".into(), 5.0)]
        );
    }
}
