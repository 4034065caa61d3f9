//! Per-object digests kept while watching one resource type, and the write events derived from them (no I/O).
//!
//! A watch delivers whole objects; only a small digest of each is kept (hashes, the managedFields entries, a
//! few counters), so memory stays flat however many objects there are. A re-list after a dropped watch or a
//! 410 Gone compares each listed object's resourceVersion with the digest, so a write is counted once.

use crate::live::snapshot::{
    FieldChurn, FieldHandover, ManagerEntry, ObjectRecord, ReadyCondition, WriteCounts, WriteEvent,
    WriterCount,
};
use crate::live::volatile::looks_volatile;
use k8s_openapi::jiff;
use kube::api::DynamicObject;
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// Writes remembered per object (the counters keep counting past it).
const HISTORY: usize = 8;
/// Annotation keys and status leaves hashed per object; more are folded into one hash.
const MAX_FIELDS: usize = 32;
/// Churning fields remembered per object.
const MAX_CHURN: usize = 8;
/// Owned fields followed per written object; one that never changed hands makes room for a new one.
const MAX_OWNED: usize = 16;
/// Leaves read from one managedFields entry: a Deployment's creator owns dozens, a fight is over one or two.
const MAX_LEAVES: usize = 64;
/// Owners remembered per field (with the value each last set).
const MAX_OWNERS: usize = 4;

/// One event of a watch, in kube-rs `watcher::Event` terms but without the runtime types.
#[derive(Debug)]
pub enum WatchEvent<'a> {
    /// A (re-)list starts.
    Init,
    /// An object of the (re-)list.
    InitApply(&'a DynamicObject),
    /// The (re-)list is complete: objects not in it were deleted meanwhile.
    InitDone,
    Apply(&'a DynamicObject),
    Delete(&'a DynamicObject),
}

type Key = (Option<Arc<str>>, Box<str>);

/// Interns the strings that repeat across objects (namespaces, managers, field names).
#[derive(Debug, Default)]
struct Interner(HashSet<Arc<str>>);

impl Interner {
    fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.0.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        self.0.insert(a.clone());
        a
    }
}

#[derive(Debug, Clone)]
struct Manager {
    manager: Arc<str>,
    operation: Arc<str>,
    status: bool,
    time_ms: Option<i64>,
    fields: u64,
    owns_spec: bool,
    owns_status: bool,
    annotations: Box<[Arc<str>]>,
}

#[derive(Debug, Clone)]
struct Churn {
    field: Arc<str>,
    changes: u32,
    volatile: u32,
    manager: Option<Arc<str>>,
}

/// Who owns one field of a written object, and how often it changed hands.
#[derive(Debug, Clone)]
struct Owned {
    field: Arc<str>,
    owner: Arc<str>,
    handovers: u32,
    reverts: u32,
    /// Reverts that changed the field's value: the new owner put back its own value over a different one.
    flips: u32,
    /// Each owner so far and the value (hashed) it last left the field at, in the order they first owned it.
    owners: Vec<(Arc<str>, u64)>,
}

#[derive(Debug, Clone)]
struct Hist {
    t_ms: i64,
    flags: u8,
    manager: Option<Arc<str>>,
}

const F_SPEC: u8 = 1;
const F_STATUS: u8 = 2;
const F_ANN: u8 = 4;
const F_LABELS: u8 = 8;

/// What the window's writes added to one object; only objects written during the window carry it, so an idle
/// object costs nothing here.
#[derive(Debug, Clone, Default)]
struct Activity {
    writes: WriteCounts,
    churn: Vec<Churn>,
    writers: Vec<(Arc<str>, bool, u32)>,
    history: VecDeque<Hist>,
    owned: Vec<Owned>,
}

/// The digest of one object: about 200 bytes in the map plus its managedFields entries; a written object also
/// has an [`Activity`].
#[derive(Debug, Clone)]
struct Tracked {
    /// The resourceVersion, hashed: only compared for equality, and as text it would cost an allocation.
    rv: u64,
    /// The (re-)list that last listed it (see [`TypeTracker::epoch`]).
    epoch: u32,
    created_ms: Option<i64>,
    first_seen_ms: i64,
    deleted: bool,
    generation: i64,
    observed_generation: Option<i64>,
    has_status: bool,
    ready: Option<(Arc<str>, Option<i64>)>,
    generation_changed_ms: Option<i64>,
    spec: u64,
    labels: u64,
    annotations: Box<[(Arc<str>, u64)]>,
    /// The `ctrlaudit.io/allow` annotation's text (interned: objects share one text as a rule).
    allow: Option<Arc<str>>,
    status: Box<[(Arc<str>, u64)]>,
    managers: Box<[Manager]>,
    activity: Option<Box<Activity>>,
}

/// Everything the watch of one resource type has seen.
#[derive(Debug)]
pub struct TypeTracker {
    pub group: String,
    pub kind: String,
    pub plural: String,
    /// Boxed: the map's table is sized in powers of two, so a slot that holds only a pointer wastes little.
    objects: HashMap<Key, Box<Tracked>>,
    strings: Interner,
    /// The first list is complete: later objects are creations, later changes are writes.
    listed: bool,
    /// Numbers the (re-)lists: an object the current one did not list was deleted meanwhile. (A set of the
    /// listed keys would double the memory of a large list while it runs.)
    epoch: u32,
    /// A (re-)list is running.
    relisting: bool,
    /// Lists after the first one.
    pub relists: u32,
    /// Events handled.
    pub events: u64,
    /// Keep only objects with an ownerReference to one of these (group, kind); empty = keep all.
    owners: Vec<(String, String)>,
}

impl TypeTracker {
    pub fn new(group: &str, kind: &str, plural: &str) -> Self {
        Self {
            group: group.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
            objects: HashMap::new(),
            strings: Interner::default(),
            listed: false,
            epoch: 0,
            relisting: false,
            relists: 0,
            events: 0,
            owners: Vec::new(),
        }
    }

    /// Keeps only objects owned (ownerReferences) by an object of one of `owners` (group, kind): the children of
    /// the watched custom resources among all the ConfigMaps of a namespace.
    pub fn owned_by(mut self, owners: Vec<(String, String)>) -> Self {
        self.owners = owners;
        self
    }

    fn keeps(&self, obj: &DynamicObject) -> bool {
        self.owners.is_empty()
            || obj.metadata.owner_references.iter().flatten().any(|r| {
                let group = r.api_version.rsplit_once('/').map_or("", |(g, _)| g);
                self.owners.iter().any(|(g, k)| g == group && *k == r.kind)
            })
    }

    /// Number of objects tracked (deleted ones included).
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Bytes the digests take on the heap (the map, each digest and what it owns, the interned strings once):
    /// the tool's memory per object beyond decoding, by its own accounting.
    pub fn digest_bytes(&self) -> usize {
        use std::mem::size_of;
        let slot = size_of::<Key>() + size_of::<Box<Tracked>>() + 1;
        let mut total = self.objects.capacity() * slot + self.objects.len() * size_of::<Tracked>();
        for ((_, name), o) in &self.objects {
            total += name.len();
            total += o.annotations.len() * size_of::<(Arc<str>, u64)>();
            total += o.status.len() * size_of::<(Arc<str>, u64)>();
            total += o.managers.len() * size_of::<Manager>();
            total += o
                .managers
                .iter()
                .map(|m| m.annotations.len() * size_of::<Arc<str>>())
                .sum::<usize>();
            if let Some(a) = &o.activity {
                total += size_of::<Activity>();
                total += a.churn.capacity() * size_of::<Churn>();
                total += a.writers.capacity() * size_of::<(Arc<str>, bool, u32)>();
                total += a.history.capacity() * size_of::<Hist>();
                total += a.owned.capacity() * size_of::<Owned>();
                total += a
                    .owned
                    .iter()
                    .map(|o| o.owners.capacity() * size_of::<(Arc<str>, u64)>())
                    .sum::<usize>();
            }
        }
        // Interned strings: two counters and the text, once for all objects.
        total += self.strings.0.iter().map(|s| s.len() + 16).sum::<usize>();
        total
    }

    /// Total writes seen so far.
    pub fn writes(&self) -> u64 {
        self.objects
            .values()
            .filter_map(|o| o.activity.as_ref())
            .map(|a| u64::from(a.writes.total))
            .sum()
    }

    /// Takes one watch event observed at `t_ms`.
    pub fn handle(&mut self, t_ms: i64, event: WatchEvent<'_>) {
        self.events += 1;
        match event {
            WatchEvent::Init => {
                if self.listed {
                    self.relists += 1;
                }
                self.epoch += 1;
                self.relisting = true;
            }
            WatchEvent::InitApply(obj) | WatchEvent::Apply(obj) if !self.keeps(obj) => {}
            WatchEvent::InitApply(obj) => {
                let key = self.key(obj);
                self.apply(t_ms, key, obj);
            }
            WatchEvent::InitDone => {
                if self.relisting && self.listed {
                    // Deleted while the watch was down.
                    for o in self.objects.values_mut() {
                        if o.epoch != self.epoch {
                            o.deleted = true;
                        }
                    }
                }
                self.relisting = false;
                self.listed = true;
            }
            WatchEvent::Apply(obj) => {
                let key = self.key(obj);
                self.apply(t_ms, key, obj);
            }
            WatchEvent::Delete(obj) => {
                let key = self.key(obj);
                if let Some(o) = self.objects.get_mut(&key) {
                    o.deleted = true;
                }
            }
        }
    }

    fn key(&mut self, obj: &DynamicObject) -> Key {
        let ns = obj
            .metadata
            .namespace
            .as_deref()
            .map(|n| self.strings.get(n));
        let name: Box<str> = obj.metadata.name.as_deref().unwrap_or("").into();
        (ns, name)
    }

    fn apply(&mut self, t_ms: i64, key: Key, obj: &DynamicObject) {
        let rv = hash_str(obj.metadata.resource_version.as_deref().unwrap_or(""));
        let listed = self.listed;
        let epoch = self.epoch;
        match self.objects.get_mut(&key) {
            None => {
                let digest = digest(&mut self.strings, obj, t_ms, rv, epoch);
                self.objects.insert(key, Box::new(digest));
            }
            Some(old) if old.rv == rv && !old.deleted => old.epoch = epoch,
            Some(old) => {
                let digest = digest(&mut self.strings, obj, t_ms, rv, epoch);
                if listed {
                    record_write(&mut self.strings, old, digest, t_ms, obj);
                } else {
                    **old = digest;
                }
            }
        }
    }

    /// The records of every object, sorted by namespace and name.
    pub fn records(&self) -> Vec<ObjectRecord> {
        let shared = Shared::new(self);
        let mut out: Vec<ObjectRecord> = self
            .objects
            .iter()
            .map(|(key, o)| shared.record(key, o))
            .collect();
        // Keys are unique, so an unstable sort is deterministic, and it needs no scratch copy of the records.
        out.sort_unstable_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        out
    }

    /// [`Self::records`], freeing each digest as its record is made, so that the two are never all in memory at
    /// once (at 100,000 objects that is the difference between the digests plus the records and the larger).
    pub fn into_records(mut self) -> Vec<ObjectRecord> {
        let shared = Shared::new(&self);
        let objects = std::mem::take(&mut self.objects);
        let mut out = Vec::with_capacity(objects.len());
        for (key, o) in objects {
            out.push(shared.record(&key, &o));
        }
        // Keys are unique, so an unstable sort is deterministic, and it needs no scratch copy of the records.
        out.sort_unstable_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        out
    }
}

/// The strings every record of one type shares.
struct Shared {
    group: Arc<str>,
    kind: Arc<str>,
    plural: Arc<str>,
    main: Arc<str>,
    status: Arc<str>,
}

impl Shared {
    fn new(t: &TypeTracker) -> Self {
        Self {
            group: t.group.as_str().into(),
            kind: t.kind.as_str().into(),
            plural: t.plural.as_str().into(),
            main: "".into(),
            status: "status".into(),
        }
    }

    fn subresource(&self, status: bool) -> Arc<str> {
        if status {
            self.status.clone()
        } else {
            self.main.clone()
        }
    }

    fn record(&self, (ns, name): &Key, o: &Tracked) -> ObjectRecord {
        let activity = o.activity.as_deref();
        ObjectRecord {
            group: self.group.clone(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
            namespace: ns.clone(),
            name: name.to_string(),
            created_ms: o.created_ms,
            first_seen_ms: o.first_seen_ms,
            deleted: o.deleted,
            generation: o.generation,
            observed_generation: o.observed_generation,
            has_status: o.has_status,
            ready: o.ready.as_ref().map(|(s, since)| ReadyCondition {
                status: s.to_string(),
                since_ms: *since,
            }),
            generation_changed_ms: o.generation_changed_ms,
            managers: o
                .managers
                .iter()
                .map(|m| ManagerEntry {
                    manager: m.manager.clone(),
                    operation: m.operation.clone(),
                    subresource: self.subresource(m.status),
                    time_ms: m.time_ms,
                    owns_spec: m.owns_spec,
                    owns_status: m.owns_status,
                    annotations: m.annotations.iter().map(|a| a.to_string()).collect(),
                })
                .collect(),
            writes: activity.map(|a| a.writes).unwrap_or_default(),
            churn: activity
                .into_iter()
                .flat_map(|a| &a.churn)
                .map(|c| FieldChurn {
                    field: c.field.to_string(),
                    changes: c.changes,
                    volatile_changes: c.volatile,
                    manager: c.manager.as_deref().map(str::to_string),
                })
                .collect(),
            writers: activity
                .into_iter()
                .flat_map(|a| &a.writers)
                .map(|(m, status, n)| WriterCount {
                    manager: m.to_string(),
                    subresource: if *status {
                        "status".into()
                    } else {
                        String::new()
                    },
                    writes: *n,
                })
                .collect(),
            allow: o.allow.as_deref().map(str::to_string),
            history: activity
                .into_iter()
                .flat_map(|a| &a.history)
                .map(|h| WriteEvent {
                    t_ms: h.t_ms,
                    spec: h.flags & F_SPEC != 0,
                    status: h.flags & F_STATUS != 0,
                    annotations: h.flags & F_ANN != 0,
                    labels: h.flags & F_LABELS != 0,
                    manager: h.manager.as_deref().map(str::to_string),
                })
                .collect(),
            handovers: activity
                .into_iter()
                .flat_map(|a| &a.owned)
                .filter(|o| o.handovers > 0)
                .map(|o| FieldHandover {
                    field: o.field.to_string(),
                    owners: o.owners.iter().map(|(m, _)| m.to_string()).collect(),
                    handovers: o.handovers,
                    reverts: o.reverts,
                    flips: Some(o.flips),
                })
                .collect(),
        }
    }
}

fn hash_value(v: &Value, h: &mut DefaultHasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            a.iter().for_each(|x| hash_value(x, h));
        }
        Value::Object(o) => {
            (5u8, o.len()).hash(h);
            for (k, x) in o {
                k.hash(h);
                hash_value(x, h);
            }
        }
    }
}

fn hash_of(v: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    hash_value(v, &mut h);
    h.finish()
}

fn hash_str(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

fn time_ms(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> i64 {
    t.0.as_millisecond()
}

/// Parses an RFC 3339 time (`2025-01-01T00:00:00Z`) into ms since the epoch.
pub fn parse_time_ms(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// Status leaves `status.a`, `status.a.b`, `status.conditions[Ready].status`, hashed; at most [`MAX_FIELDS`].
fn status_leaves(strings: &mut Interner, status: &Value, out: &mut Vec<(Arc<str>, u64)>) {
    fn walk(prefix: &str, v: &Value, depth: usize, out: &mut Vec<(String, u64)>) {
        if out.len() >= MAX_FIELDS {
            return;
        }
        match v {
            Value::Object(o) if depth < 3 => {
                for (k, x) in o {
                    walk(&format!("{prefix}.{k}"), x, depth + 1, out);
                }
            }
            Value::Array(a)
                if depth < 3
                    && !a.is_empty()
                    && a.iter()
                        .all(|e| e.get("type").and_then(Value::as_str).is_some()) =>
            {
                for e in a {
                    let t = e.get("type").and_then(Value::as_str).unwrap_or("");
                    walk(&format!("{prefix}[{t}]"), e, depth + 1, out);
                }
            }
            other => out.push((prefix.to_string(), hash_of(other))),
        }
    }
    let mut raw = Vec::new();
    walk("status", status, 0, &mut raw);
    out.extend(raw.into_iter().map(|(k, h)| (strings.get(&k), h)));
}

fn digest(strings: &mut Interner, obj: &DynamicObject, t_ms: i64, rv: u64, epoch: u32) -> Tracked {
    let meta = &obj.metadata;
    let status = obj.data.get("status").unwrap_or(&Value::Null);
    let has_status = status.as_object().is_some_and(|o| !o.is_empty());
    let observed_generation = status.get("observedGeneration").and_then(Value::as_i64);
    let ready = status
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        })
        .map(|c| {
            let s = c.get("status").and_then(Value::as_str).unwrap_or("Unknown");
            let since = c
                .get("lastTransitionTime")
                .and_then(Value::as_str)
                .and_then(parse_time_ms);
            (strings.get(s), since)
        });
    let mut annotations: Vec<(Arc<str>, u64)> = meta
        .annotations
        .iter()
        .flatten()
        .take(MAX_FIELDS)
        .map(|(k, v)| (strings.get(k), hash_str(v)))
        .collect();
    annotations.sort();
    let labels = {
        let mut h = DefaultHasher::new();
        for (k, v) in meta.labels.iter().flatten() {
            (k, v).hash(&mut h);
        }
        h.finish()
    };
    let mut leaves = Vec::new();
    if has_status {
        status_leaves(strings, status, &mut leaves);
    }
    let managers: Vec<Manager> = meta
        .managed_fields
        .iter()
        .flatten()
        .map(|m| {
            let fields = m.fields_v1.as_ref().map(|f| &f.0);
            let ann: Box<[Arc<str>]> = fields
                .and_then(|f| f.get("f:metadata"))
                .and_then(|f| f.get("f:annotations"))
                .and_then(Value::as_object)
                .map(|o| {
                    o.keys()
                        .filter_map(|k| k.strip_prefix("f:"))
                        .take(MAX_FIELDS)
                        .map(|k| strings.get(k))
                        .collect()
                })
                .unwrap_or_default();
            Manager {
                manager: strings.get(m.manager.as_deref().unwrap_or("")),
                operation: strings.get(m.operation.as_deref().unwrap_or("")),
                status: m.subresource.as_deref() == Some("status"),
                time_ms: m.time.as_ref().map(time_ms),
                fields: fields.map_or(0, hash_of),
                owns_spec: fields.and_then(|f| f.get("f:spec")).is_some(),
                owns_status: fields.and_then(|f| f.get("f:status")).is_some(),
                annotations: ann,
            }
        })
        .collect();
    let created_ms = meta.creation_timestamp.as_ref().map(time_ms);
    let generation_changed_ms = managers
        .iter()
        .filter(|m| m.owns_spec && !m.status)
        .filter_map(|m| m.time_ms)
        .max()
        .or(created_ms);
    Tracked {
        rv,
        epoch,
        created_ms,
        first_seen_ms: t_ms,
        deleted: false,
        generation: meta.generation.unwrap_or(0),
        observed_generation,
        has_status,
        ready,
        generation_changed_ms,
        spec: obj.data.get("spec").map_or(0, hash_of),
        labels,
        annotations: annotations.into(),
        allow: meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(super::snapshot::ALLOW_ANNOTATION))
            .map(|v| strings.get(v)),
        status: leaves.into(),
        managers: managers.into(),
        activity: None,
    }
}

/// Keys whose hash differs between two sorted (key, hash) lists, including added and removed ones.
fn changed_keys(old: &[(Arc<str>, u64)], new: &[(Arc<str>, u64)]) -> Vec<Arc<str>> {
    let old_map: HashMap<&str, u64> = old.iter().map(|(k, h)| (&**k, *h)).collect();
    let new_map: HashMap<&str, u64> = new.iter().map(|(k, h)| (&**k, *h)).collect();
    let mut out: Vec<Arc<str>> = new
        .iter()
        .filter(|(k, h)| old_map.get(&**k) != Some(h))
        .map(|(k, _)| k.clone())
        .collect();
    out.extend(
        old.iter()
            .filter(|(k, _)| !new_map.contains_key(&**k))
            .map(|(k, _)| k.clone()),
    );
    out
}

/// Updates who owns each field that the managedFields entries changed by this write own now: a field whose
/// owner differs from the last one seen changed hands.
fn follow_owners(
    strings: &mut Interner,
    owned: &mut Vec<Owned>,
    changed: &[&Manager],
    obj: &DynamicObject,
) {
    let entries = obj.metadata.managed_fields.iter().flatten().filter(|e| {
        changed.iter().any(|m| {
            &*m.manager == e.manager.as_deref().unwrap_or("")
                && &*m.operation == e.operation.as_deref().unwrap_or("")
                && m.status == (e.subresource.as_deref() == Some("status"))
        })
    });
    for e in entries {
        let Some(fields) = e.fields_v1.as_ref() else {
            continue;
        };
        let manager = strings.get(e.manager.as_deref().unwrap_or(""));
        for (path, value) in owned_leaves(obj, &fields.0) {
            let field = strings.get(&path);
            match owned.iter_mut().find(|o| o.field == field) {
                Some(o) => {
                    if o.owner != manager {
                        o.handovers += 1;
                        if o.owners.iter().any(|(m, v)| *m == manager && *v == value) {
                            o.reverts += 1;
                            // Co-owners applying one value hand it around without a fight. A value the watch
                            // cannot see (0: a metadata-only watch of a built-in kind's spec) may have changed.
                            let held = o.owners.iter().find(|(m, _)| *m == o.owner).map(|x| x.1);
                            o.flips += u32::from(value == UNSEEN || held != Some(value));
                        }
                        o.owner = manager.clone();
                    }
                    match o.owners.iter().position(|(m, _)| *m == manager) {
                        Some(i) => o.owners[i].1 = value,
                        None if o.owners.len() < MAX_OWNERS => {
                            o.owners.push((manager.clone(), value));
                        }
                        None => {}
                    }
                }
                None => {
                    let new = Owned {
                        field,
                        owner: manager.clone(),
                        handovers: 0,
                        reverts: 0,
                        flips: 0,
                        owners: vec![(manager.clone(), value)],
                    };
                    if owned.len() < MAX_OWNED {
                        owned.push(new);
                    } else if let Some(idle) = owned.iter_mut().find(|o| o.handovers == 0) {
                        *idle = new;
                    }
                }
            }
        }
    }
}

/// The value hash of a leaf the object does not show (a metadata-only watch has no spec or status).
const UNSEEN: u64 = 0;

/// The leaf fields of one managedFields entry (`fieldsV1`) as paths, with a hash of each one's value in `obj`.
/// Metadata other than labels and annotations is left out (every writer touches it); a list keyed by `k:`/`v:`
/// entries counts as one leaf, the whole list.
fn owned_leaves(obj: &DynamicObject, fields: &Value) -> Vec<(String, u64)> {
    fn walk(prefix: &str, node: &Value, value: Option<&Value>, out: &mut Vec<(String, u64)>) {
        let Some(children) = node.as_object() else {
            return;
        };
        let named: Vec<(&str, &Value)> = children
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("f:").map(|k| (k, v)))
            .collect();
        let keyed = children
            .keys()
            .any(|k| k.starts_with("k:") || k.starts_with("v:") || k.starts_with("i:"));
        if named.is_empty() || keyed {
            if !prefix.is_empty() && out.len() < MAX_LEAVES {
                out.push((prefix.to_string(), value.map_or(UNSEEN, hash_of)));
            }
            return;
        }
        for (k, child) in named {
            let path = if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            };
            walk(&path, child, value.and_then(|v| v.get(k)), out);
        }
    }
    let mut out = Vec::new();
    let Some(top) = fields.as_object() else {
        return out;
    };
    for (k, node) in top {
        match k.as_str() {
            "f:metadata" => {
                let meta = &obj.metadata;
                for (section, map) in [("labels", &meta.labels), ("annotations", &meta.annotations)]
                {
                    let Some(keys) = node.get(format!("f:{section}")).and_then(Value::as_object)
                    else {
                        continue;
                    };
                    for key in keys.keys().filter_map(|k| k.strip_prefix("f:")) {
                        if out.len() >= MAX_LEAVES {
                            break;
                        }
                        let value = map.as_ref().and_then(|m| m.get(key));
                        out.push((
                            format!("metadata.{section}[{key}]"),
                            value.map_or(UNSEEN, |v| hash_str(v)),
                        ));
                    }
                }
            }
            other => {
                if let Some(name) = other.strip_prefix("f:") {
                    walk(name, node, obj.data.get(name), &mut out);
                }
            }
        }
    }
    out
}

/// The value of a status leaf path (`status.a.b`, `status.conditions[Ready].x`) in `obj`, as text.
fn status_leaf_value(obj: &DynamicObject, path: &str) -> Option<String> {
    let mut cur = obj.data.get("status")?;
    for part in path.strip_prefix("status.")?.split('.') {
        let (name, sel) = match part.split_once('[') {
            Some((n, rest)) => (n, Some(rest.trim_end_matches(']'))),
            None => (part, None),
        };
        cur = cur.get(name)?;
        if let Some(t) = sel {
            cur = cur
                .as_array()?
                .iter()
                .find(|e| e.get("type").and_then(Value::as_str) == Some(t))?;
        }
    }
    Some(match cur {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

fn record_write(
    strings: &mut Interner,
    old: &mut Tracked,
    new: Tracked,
    t_ms: i64,
    obj: &DynamicObject,
) {
    let spec = new.generation != old.generation || (new.generation == 0 && new.spec != old.spec);
    let ann_keys = changed_keys(&old.annotations, &new.annotations);
    let status_keys = changed_keys(&old.status, &new.status);
    let labels = new.labels != old.labels;
    let mut flags = 0u8;
    if spec {
        flags |= F_SPEC;
    }
    if !status_keys.is_empty() || old.has_status != new.has_status {
        flags |= F_STATUS;
    }
    if !ann_keys.is_empty() {
        flags |= F_ANN;
    }
    if labels {
        flags |= F_LABELS;
    }

    // Who wrote: the managedFields entries that changed; when several writes fall in one second the entry's
    // time may not move, so fall back on who owns what changed.
    let changed: Vec<&Manager> = new
        .managers
        .iter()
        .filter(|m| {
            !old.managers.iter().any(|o| {
                o.manager == m.manager
                    && o.status == m.status
                    && o.time_ms == m.time_ms
                    && o.fields == m.fields
                    && o.operation == m.operation
            })
        })
        .collect();
    let owner_of_annotation = |key: &str| -> Option<Arc<str>> {
        new.managers
            .iter()
            .filter(|m| m.annotations.iter().any(|a| &**a == key))
            .max_by_key(|m| m.time_ms)
            .map(|m| m.manager.clone())
    };
    let status_owner = new
        .managers
        .iter()
        .filter(|m| m.owns_status)
        .max_by_key(|m| (m.status, m.time_ms))
        .map(|m| m.manager.clone());
    let main_writer: Option<Arc<str>> = changed
        .iter()
        .find(|m| !m.status)
        .map(|m| m.manager.clone())
        .or_else(|| ann_keys.first().and_then(|k| owner_of_annotation(k)))
        .or_else(|| {
            spec.then(|| {
                new.managers
                    .iter()
                    .filter(|m| m.owns_spec && !m.status)
                    .max_by_key(|m| m.time_ms)
                    .map(|m| m.manager.clone())
            })
            .flatten()
        });
    let status_writer: Option<Arc<str>> = changed
        .iter()
        .find(|m| m.status)
        .map(|m| m.manager.clone())
        .or_else(|| status_owner.clone());

    let bump = |writers: &mut Vec<(Arc<str>, bool, u32)>, m: &Arc<str>, status: bool| match writers
        .iter()
        .position(|(w, s, _)| w == m && *s == status)
    {
        Some(i) => writers[i].2 += 1,
        None if writers.len() < MAX_CHURN => writers.push((m.clone(), status, 1)),
        None => {}
    };
    let mut activity = old.activity.take().unwrap_or_default();
    let main_change = spec || labels || !ann_keys.is_empty();
    if main_change && let Some(m) = &main_writer {
        bump(&mut activity.writers, m, false);
    }
    if flags & F_STATUS != 0
        && let Some(m) = &status_writer
    {
        bump(&mut activity.writers, m, true);
    }

    if !spec {
        let ann_values = obj.metadata.annotations.as_ref();
        let fields = ann_keys
            .iter()
            .map(|k| {
                let v = ann_values.and_then(|a| a.get(&**k)).cloned();
                (
                    strings.get(&format!("metadata.annotations[{k}]")),
                    v,
                    owner_of_annotation(k),
                )
            })
            .chain(
                status_keys
                    .iter()
                    .map(|k| (k.clone(), status_leaf_value(obj, k), status_writer.clone())),
            )
            .collect::<Vec<_>>();
        for (field, value, manager) in fields {
            let volatile = value.as_deref().is_some_and(looks_volatile);
            match activity.churn.iter().position(|c| c.field == field) {
                Some(i) => {
                    let c = &mut activity.churn[i];
                    c.changes += 1;
                    c.volatile += u32::from(volatile);
                    if manager.is_some() {
                        c.manager = manager;
                    }
                }
                None if activity.churn.len() < MAX_CHURN => activity.churn.push(Churn {
                    field,
                    changes: 1,
                    volatile: u32::from(volatile),
                    manager,
                }),
                None => {}
            }
        }
    }

    follow_owners(strings, &mut activity.owned, &changed, obj);

    let writes = &mut activity.writes;
    writes.total += 1;
    writes.spec += u32::from(spec);
    writes.status += u32::from(flags & F_STATUS != 0);
    writes.annotations += u32::from(!ann_keys.is_empty());
    writes.labels += u32::from(labels);
    writes.no_spec_change += u32::from(!spec);
    writes.main += u32::from(main_change);

    if activity.history.len() == HISTORY {
        activity.history.pop_front();
    }
    activity.history.push_back(Hist {
        t_ms,
        flags,
        manager: main_writer.or(status_writer),
    });

    let generation_changed_ms = if spec {
        Some(t_ms)
    } else {
        old.generation_changed_ms
    };
    let first_seen_ms = old.first_seen_ms;
    let created_ms = old.created_ms.or(new.created_ms);
    *old = Tracked {
        first_seen_ms,
        created_ms,
        generation_changed_ms,
        activity: Some(activity),
        ..new
    };
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn obj(rv: u32, generation: i64, ann: &str, status: Value, managers: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "bench.ctrlaudit.io/v1alpha1",
            "kind": "Widget",
            "metadata": {
                "name": "w", "namespace": "ns", "resourceVersion": rv.to_string(), "generation": generation,
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "annotations": {"example.com/stamp": ann},
                "managedFields": managers,
            },
            "spec": {"count": generation},
            "status": status,
        }))
        .unwrap()
    }

    fn looper(t: &str) -> Value {
        json!([
            {"manager": "creator", "operation": "Update", "time": "2026-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:count": {}}}},
            {"manager": "looper", "operation": "Update", "time": t,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:annotations": {"f:example.com/stamp": {}}}}},
            {"manager": "looper", "operation": "Update", "subresource": "status", "time": "2026-01-01T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:phase": {}}}},
        ])
    }

    #[test]
    fn annotation_churn_is_attributed_and_relist_does_not_double_count() {
        let mut t = TypeTracker::new("bench.ctrlaudit.io", "Widget", "widgets");
        let st = json!({"phase": "Ready"});
        let o1 = obj(
            1,
            1,
            "2026-01-01T00:00:01Z",
            st.clone(),
            looper("2026-01-01T00:00:01Z"),
        );
        t.handle(0, WatchEvent::Init);
        t.handle(0, WatchEvent::InitApply(&o1));
        t.handle(0, WatchEvent::InitDone);
        for i in 2..6u32 {
            let stamp = format!("2026-01-01T00:00:0{i}Z");
            let o = obj(i, 1, &stamp, st.clone(), looper(&stamp));
            t.handle(i64::from(i) * 1000, WatchEvent::Apply(&o));
        }
        // The same object again (a duplicate event), then a re-list that brings one unseen write.
        let o5 = obj(
            5,
            1,
            "2026-01-01T00:00:05Z",
            st.clone(),
            looper("2026-01-01T00:00:05Z"),
        );
        t.handle(5500, WatchEvent::Apply(&o5));
        t.handle(6000, WatchEvent::Init);
        t.handle(6000, WatchEvent::InitApply(&o5));
        t.handle(6000, WatchEvent::InitDone);
        let o7 = obj(
            7,
            1,
            "2026-01-01T00:00:07Z",
            st.clone(),
            looper("2026-01-01T00:00:07Z"),
        );
        t.handle(7000, WatchEvent::Init);
        t.handle(7000, WatchEvent::InitApply(&o7));
        t.handle(7000, WatchEvent::InitDone);
        assert_eq!(t.relists, 2);
        let r = &t.records()[0];
        assert_eq!(r.writes.total, 5, "{r:?}");
        assert_eq!(r.writes.no_spec_change, 5);
        assert_eq!(r.churn.len(), 1, "{r:?}");
        let c = &r.churn[0];
        assert_eq!(c.field, "metadata.annotations[example.com/stamp]");
        assert_eq!((c.changes, c.volatile_changes), (5, 5));
        assert_eq!(c.manager.as_deref(), Some("looper"));
        assert_eq!(
            r.writers,
            vec![WriterCount {
                manager: "looper".into(),
                subresource: String::new(),
                writes: 5
            }]
        );
        assert!(!r.deleted);
    }

    #[test]
    fn relist_marks_vanished_objects_deleted_and_spec_changes_move_generation() {
        let mut t = TypeTracker::new("g", "Widget", "widgets");
        let o1 = obj(1, 1, "a", Value::Null, json!([]));
        t.handle(0, WatchEvent::Init);
        t.handle(0, WatchEvent::InitApply(&o1));
        t.handle(0, WatchEvent::InitDone);
        let o2 = obj(2, 2, "a", Value::Null, json!([]));
        t.handle(1000, WatchEvent::Apply(&o2));
        let r = &t.records()[0];
        assert_eq!((r.writes.total, r.writes.spec), (1, 1));
        assert_eq!(r.generation_changed_ms, Some(1000));
        assert!(r.churn.is_empty());
        t.handle(2000, WatchEvent::Init);
        t.handle(2000, WatchEvent::InitDone);
        assert!(t.records()[0].deleted);
    }

    #[test]
    fn status_leaves_and_ready() {
        let st = json!({"observedGeneration": 1, "lastUpdated": "2026-01-01T00:00:01Z",
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:02Z"}]});
        let mut t = TypeTracker::new("g", "Widget", "widgets");
        t.handle(0, WatchEvent::Init);
        t.handle(
            0,
            WatchEvent::InitApply(&obj(1, 1, "a", st, looper("2026-01-01T00:00:00Z"))),
        );
        t.handle(0, WatchEvent::InitDone);
        let st2 = json!({"observedGeneration": 1, "lastUpdated": "2026-01-01T00:00:09Z",
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:02Z"}]});
        t.handle(
            1,
            WatchEvent::Apply(&obj(2, 1, "a", st2, looper("2026-01-01T00:00:00Z"))),
        );
        let r = &t.records()[0];
        assert_eq!(r.observed_generation, Some(1));
        assert_eq!(r.ready.as_ref().map(|x| x.status.as_str()), Some("False"));
        assert_eq!(r.churn[0].field, "status.lastUpdated");
        assert_eq!(r.churn[0].volatile_changes, 1);
        assert_eq!(r.churn[0].manager.as_deref(), Some("looper"));
        assert_eq!(r.writers[0].subresource, "status");
    }

    /// A Widget whose `spec.count` is owned by `owner` (and `spec.message` by the creator), at `count`.
    fn fought(rv: u32, count: i64, owner: &str, t: &str) -> DynamicObject {
        let other = if owner == "operator" {
            "scaler"
        } else {
            "operator"
        };
        serde_json::from_value(json!({
            "apiVersion": "bench.ctrlaudit.io/v1alpha1",
            "kind": "Widget",
            "metadata": {
                "name": "w", "namespace": "ns", "resourceVersion": rv.to_string(), "generation": rv,
                "labels": {"tier": "gold"},
                "managedFields": [
                    {"manager": "creator", "operation": "Update", "time": "2026-01-01T00:00:00Z",
                     "fieldsType": "FieldsV1",
                     "fieldsV1": {"f:metadata": {"f:labels": {"f:tier": {}}}, "f:spec": {"f:message": {}}}},
                    {"manager": owner, "operation": "Apply", "time": t,
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:count": {}}}},
                    {"manager": other, "operation": "Apply", "time": "2026-01-01T00:00:00Z",
                     "fieldsType": "FieldsV1", "fieldsV1": {}},
                ],
            },
            "spec": {"count": count, "message": "m"},
        }))
        .unwrap()
    }

    /// The record of one Widget that `first` owned when the watch started and then each of `writes` (the
    /// `spec.count` it sets, its manager) took over in turn, one second apart; with `spec_seen` false the watch
    /// shows no spec, as a metadata-only watch of a built-in kind.
    fn after_writes(first: &str, writes: &[(i64, &str)], spec_seen: bool) -> ObjectRecord {
        let mut t = TypeTracker::new("g", "Widget", "widgets");
        t.handle(0, WatchEvent::Init);
        t.handle(
            0,
            WatchEvent::InitApply(&fought(1, 1, first, "2026-01-01T00:00:01Z")),
        );
        t.handle(0, WatchEvent::InitDone);
        for (i, (count, owner)) in writes.iter().enumerate() {
            let rv = i as u32 + 2;
            let stamp = format!("2026-01-01T00:00:0{rv}Z");
            let mut obj = fought(rv, *count, owner, &stamp);
            if !spec_seen {
                obj.data.as_object_mut().unwrap().remove("spec");
            }
            t.handle(i64::from(rv) * 1000, WatchEvent::Apply(&obj));
        }
        t.records().remove(0)
    }

    #[test]
    fn a_field_flipped_between_two_managers_counts_handovers_and_reverts() {
        // scaler sets 2, operator puts 1 back, scaler 2 again, operator 1 again.
        let r = after_writes(
            "operator",
            &[
                (2, "scaler"),
                (1, "operator"),
                (2, "scaler"),
                (1, "operator"),
            ],
            true,
        );
        assert_eq!(r.handovers.len(), 1, "{r:?}");
        let h = &r.handovers[0];
        assert_eq!(h.field, "spec.count");
        // The first write only shows who owns it now; the three after it each hand it over.
        assert_eq!((h.handovers, h.reverts, h.flips), (3, 2, Some(2)), "{h:?}");
        assert_eq!(h.owners, vec!["scaler".to_string(), "operator".to_string()]);
    }

    /// Three managers applying the same `spec.count` hand the field around with every apply, and each puts back
    /// the value it set before: reverts, but no flip, since the value never changes.
    #[test]
    fn co_owners_of_one_value_hand_it_around_without_flips() {
        let writes = ["b", "c", "a", "b", "c", "a"].map(|owner| (1, owner));
        let r = after_writes("a", &writes, true);
        let h = &r.handovers[0];
        assert!(h.handovers >= 3 && h.reverts >= 1, "{h:?}");
        assert_eq!(h.flips, Some(0), "{h:?}");
    }

    /// A metadata-only watch (a built-in kind's spec) shows who owns `spec.replicas` but not its value: a revert
    /// there may be a flip, and counts as one, as before flips existed.
    #[test]
    fn a_revert_of_a_value_the_watch_cannot_see_counts_as_a_flip() {
        let writes = ["b", "a", "b", "a"].map(|owner| (1, owner));
        let r = after_writes("a", &writes, false);
        let h = &r.handovers[0];
        assert!(h.flips.is_some_and(|f| f >= 1), "{h:?}");
    }

    #[test]
    fn owned_leaves_are_paths_and_a_keyed_list_is_one_leaf() {
        let entry = |m: &str, fields: Value| {
            json!({"manager": m, "operation": "Update", "time": "2026-01-01T00:00:01Z",
                   "fieldsType": "FieldsV1", "fieldsV1": fields})
        };
        let o: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "labels": {"tier": "gold"},
                "managedFields": [entry("a", json!({"f:metadata": {"f:labels": {"f:tier": {}},
                    "f:finalizers": {".": {}, "v:\"x\"": {}}},
                    "f:data": {"f:k": {}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}}}}))]},
            "data": {"k": "v"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }))
        .unwrap();
        let leaves = owned_leaves(
            &o,
            &o.metadata.managed_fields.as_ref().unwrap()[0]
                .fields_v1
                .as_ref()
                .unwrap()
                .0,
        );
        let paths: Vec<&str> = leaves.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            vec!["data.k", "metadata.labels[tier]", "spec.containers"]
        );
        assert_eq!(leaves[1].1, hash_str("gold"));
    }
}
