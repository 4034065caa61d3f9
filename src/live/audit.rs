//! Summarises API server audit events (JSON lines) into an [`AuditSummary`]; the reading is in `collect`.
//!
//! One request appears at several stages; only `ResponseComplete` is counted. At level `RequestResponse`
//! (custom resources, usually) the bodies show whether `status` was sent to the main resource and dropped, and
//! which annotation keys a write set to which values.

use crate::live::snapshot::{
    AuditClient, AuditGroup, AuditObject, AuditSummary, FieldChurn, Identity,
};
use crate::live::tracker::parse_time_ms;
use crate::live::volatile::looks_volatile;
use crate::report::Note;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Annotation values remembered per object, to tell a new value from a repeated one.
const MAX_KEYS_PER_OBJECT: usize = 32;

type GroupKey = (
    Identity,
    String,
    String,
    String,
    String,
    Option<String>,
    u16,
);
type ObjectKey = (String, String, Option<String>, String);
/// The last generation and annotation values the server answered with for one object.
type ObjectState = (Option<i64>, Vec<(String, String)>);

/// Folds audit lines into a summary.
#[derive(Debug, Default)]
pub struct AuditFolder {
    namespace: Option<String>,
    source: String,
    lines: u64,
    requests: u64,
    malformed: u64,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
    groups: BTreeMap<GroupKey, (AuditGroup, HashSet<String>)>,
    objects: BTreeMap<(Identity, ObjectKey), AuditObject>,
    /// Per object: the last generation and annotation values the server answered with.
    state: HashMap<ObjectKey, ObjectState>,
    /// Per client: its traffic's shape, and the slots it was active in (bounded, see [`AuditClient::MAX_SLOTS`]).
    clients: BTreeMap<Identity, (AuditClient, HashSet<i64>)>,
    /// Keep only events whose time is in this range (ms).
    within: Option<(i64, i64)>,
}

impl AuditFolder {
    /// `namespace`: keep only requests about that namespace (None: all).
    pub fn new(source: &str, namespace: Option<&str>) -> Self {
        Self {
            namespace: namespace.map(str::to_string),
            source: source.to_string(),
            ..Self::default()
        }
    }

    /// Keeps only events between `from_ms` and `to_ms`.
    pub fn within(mut self, from_ms: i64, to_ms: i64) -> Self {
        self.within = Some((from_ms, to_ms));
        self
    }

    /// From now on, keeps only events up to `to_ms` (a followed log learns where its window ends last).
    pub fn until(&mut self, to_ms: i64) {
        let from = self.within.map_or(i64::MIN, |(a, _)| a);
        self.within = Some((from, to_ms));
    }

    /// Counts a line that could not even be read as text.
    pub fn malformed_line(&mut self) {
        self.lines += 1;
        self.malformed += 1;
    }

    /// Takes one line of the log. Blank lines are ignored; lines that are not audit events are counted.
    pub fn line(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        self.lines += 1;
        let Ok(ev) = serde_json::from_str::<Value>(line) else {
            self.malformed += 1;
            return;
        };
        if ev.get("kind").and_then(Value::as_str) != Some("Event") || ev.get("stage").is_none() {
            self.malformed += 1;
            return;
        }
        if ev["stage"] == "ResponseStarted" && ev["verb"] == "watch" {
            // A controller's watch is still open when the window ends: its start is the sign it watches.
            self.watch_started(&ev);
        }
        if ev["stage"] != "ResponseComplete" {
            return;
        }
        self.event(&ev);
    }

    /// The client who sent `ev` (user and user agent), if `ev` is in the namespace and time kept: for a watch's
    /// `ResponseStarted` event, which `event` never sees.
    fn client_of(&self, ev: &Value) -> Option<(Identity, Option<i64>)> {
        let namespace = ev["objectRef"]["namespace"].as_str();
        if let Some(want) = &self.namespace
            && namespace != Some(want.as_str())
        {
            return None;
        }
        let t = event_time(ev);
        if let (Some((a, b)), Some(t)) = (self.within, t)
            && (t < a || t > b)
        {
            return None;
        }
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        Some((
            Identity {
                user: s(&ev["user"]["username"]),
                user_agent: s(&ev["userAgent"]),
                manager: None,
            },
            t,
        ))
    }

    fn watch_started(&mut self, ev: &Value) {
        if let Some((id, t)) = self.client_of(ev) {
            self.client(id, t).watched = true;
        }
    }

    /// The record of client `id`, with `t` counted as a moment it was active.
    fn client(&mut self, id: Identity, t: Option<i64>) -> &mut AuditClient {
        let (c, slots) = self.clients.entry(id.clone()).or_insert_with(|| {
            (
                AuditClient {
                    identity: id,
                    first_ms: t.unwrap_or(0),
                    last_ms: t.unwrap_or(0),
                    ..AuditClient::default()
                },
                HashSet::new(),
            )
        });
        if let Some(t) = t {
            c.first_ms = c.first_ms.min(t);
            c.last_ms = c.last_ms.max(t);
            if slots.len() < AuditClient::MAX_SLOTS as usize {
                slots.insert(t.div_euclid(AuditClient::SLOT_MS));
            }
            c.active_slots = slots.len() as u32;
        }
        c
    }

    fn event(&mut self, ev: &Value) {
        let Some(obj_ref) = ev.get("objectRef") else {
            return; // a non-resource URL such as /metrics
        };
        let s = |v: &Value| v.as_str().unwrap_or("").to_string();
        let namespace = obj_ref
            .get("namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(want) = &self.namespace
            && namespace.as_deref() != Some(want.as_str())
        {
            return;
        }
        let t = event_time(ev);
        if let (Some((a, b)), Some(t)) = (self.within, t)
            && (t < a || t > b)
        {
            return;
        }
        self.requests += 1;
        if let Some(t) = t {
            self.first_ms = Some(self.first_ms.map_or(t, |f| f.min(t)));
            self.last_ms = Some(self.last_ms.map_or(t, |l| l.max(t)));
        }
        let verb = s(&ev["verb"]);
        let group = s(&obj_ref["apiGroup"]);
        let resource = s(&obj_ref["resource"]);
        let subresource = s(&obj_ref["subresource"]);
        let name = s(&obj_ref["name"]);
        let code = ev["responseStatus"]["code"].as_u64().unwrap_or(0) as u16;
        let write = matches!(verb.as_str(), "update" | "patch" | "create" | "delete");
        let identity = Identity {
            user: s(&ev["user"]["username"]),
            user_agent: s(&ev["userAgent"]),
            // Without a fieldManager parameter the API server names the manager after the user agent up to
            // its first '/', so the name matches the managedFields entry the watch sees.
            manager: if write {
                field_manager(ev["requestURI"].as_str().unwrap_or("")).or_else(|| {
                    ev["userAgent"]
                        .as_str()
                        .and_then(|ua| ua.split('/').next())
                        .filter(|m| !m.is_empty())
                        .map(str::to_string)
                })
            } else {
                None
            },
        };
        // The namespace and the time were checked above, for the client's record too.
        let c = self.client(identity.client(), t);
        c.requests += 1;
        c.watched |= verb == "watch";
        let req = ev.get("requestObject").filter(|v| v.is_object());
        let resp = ev.get("responseObject").filter(|v| v.is_object());
        let main_write = matches!(verb.as_str(), "update" | "patch") && subresource.is_empty();
        let req_status = req
            .and_then(|r| r.get("status"))
            .filter(|s| s.as_object().is_some_and(|o| !o.is_empty()));
        let ok = (200..300).contains(&code);
        let status_in_body = main_write && req_status.is_some();
        let status_dropped = status_in_body
            && ok
            && resp.is_some_and(|r| {
                let stored = r.get("status");
                req_status.and_then(Value::as_object).is_some_and(|sent| {
                    sent.iter()
                        .any(|(k, v)| stored.and_then(|s| s.get(k)) != Some(v))
                })
            });

        let key = (
            identity.clone(),
            verb.clone(),
            group.clone(),
            resource.clone(),
            subresource.clone(),
            namespace.clone(),
            code,
        );
        let (g, names) = self.groups.entry(key).or_insert_with(|| {
            (
                AuditGroup {
                    identity: identity.clone(),
                    verb: verb.clone(),
                    group: group.clone(),
                    resource: resource.clone(),
                    subresource: subresource.clone(),
                    namespace: namespace.clone(),
                    code,
                    ..AuditGroup::default()
                },
                HashSet::new(),
            )
        });
        g.count += 1;
        g.with_body += u64::from(main_write && req.is_some());
        g.status_in_body += u64::from(status_in_body);
        g.status_dropped += u64::from(status_dropped);
        if !name.is_empty() {
            names.insert(name.clone());
        }

        if !(ok && matches!(verb.as_str(), "update" | "patch") && !name.is_empty()) {
            return;
        }
        let okey: ObjectKey = (
            group.clone(),
            resource.clone(),
            namespace.clone(),
            name.clone(),
        );
        let resp_gen = resp.and_then(|r| r["metadata"]["generation"].as_i64());
        let resp_ann: Vec<(String, String)> = resp
            .and_then(|r| r["metadata"]["annotations"].as_object())
            .map(|o| {
                o.iter()
                    .take(MAX_KEYS_PER_OBJECT)
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let (prev_gen, prev_ann) = self.state.get(&okey).cloned().unwrap_or_default();
        let no_spec_change = match (prev_gen, resp_gen) {
            (Some(a), Some(b)) => a == b,
            _ => req.is_some_and(|r| r.get("spec").is_none()),
        };
        let t = t.unwrap_or(0);
        let rec = self
            .objects
            .entry((identity.clone(), okey.clone()))
            .or_insert_with(|| AuditObject {
                identity: identity.clone(),
                group,
                resource,
                namespace,
                name,
                first_ms: t,
                last_ms: t,
                ..AuditObject::default()
            });
        rec.first_ms = rec.first_ms.min(t);
        rec.last_ms = rec.last_ms.max(t);
        if subresource.is_empty() {
            rec.main_writes += 1;
            rec.no_spec_change += u32::from(no_spec_change);
        } else if subresource == "status" {
            rec.status_writes += 1;
        }
        if subresource.is_empty() && no_spec_change {
            let sent = req
                .and_then(|r| r["metadata"]["annotations"].as_object())
                .into_iter()
                .flatten();
            for (k, v) in sent {
                let v = v.as_str().unwrap_or("");
                let before = prev_ann
                    .iter()
                    .find(|(pk, _)| pk == k)
                    .map(|(_, pv)| pv.as_str());
                if before == Some(v) {
                    continue;
                }
                let field = format!("metadata.annotations[{k}]");
                let volatile = looks_volatile(v);
                match rec.churn.iter().position(|c| c.field == field) {
                    Some(i) => {
                        rec.churn[i].changes += 1;
                        rec.churn[i].volatile_changes += u32::from(volatile);
                    }
                    None if rec.churn.len() < MAX_KEYS_PER_OBJECT => rec.churn.push(FieldChurn {
                        field,
                        changes: 1,
                        volatile_changes: u32::from(volatile),
                        manager: identity.manager.clone(),
                    }),
                    None => {}
                }
            }
        }
        if resp.is_some() {
            self.state.insert(okey, (resp_gen.or(prev_gen), resp_ann));
        }
    }

    /// The summary, groups and objects in a stable order.
    pub fn finish(self) -> AuditSummary {
        AuditSummary {
            source: self.source,
            lines: self.lines,
            requests: self.requests,
            malformed: self.malformed,
            first_ms: self.first_ms,
            last_ms: self.last_ms,
            groups: self
                .groups
                .into_values()
                .map(|(mut g, names)| {
                    g.objects = names.len() as u64;
                    g
                })
                .collect(),
            objects: self.objects.into_values().collect(),
            clients: self.clients.into_values().map(|(c, _)| c).collect(),
        }
    }
}

/// The `fieldManager` query parameter of a request URI, percent-decoded.
/// When the API server answered (or, failing that, received) an event's request.
fn event_time(ev: &Value) -> Option<i64> {
    ev.get("stageTimestamp")
        .or_else(|| ev.get("requestReceivedTimestamp"))
        .and_then(Value::as_str)
        .and_then(parse_time_ms)
}

fn field_manager(uri: &str) -> Option<String> {
    let query = uri.split_once('?')?.1;
    let raw = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("fieldManager="))?;
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok().filter(|s| !s.is_empty())
}

/// What to say about how a log read: nothing when every line was an audit event; how many were skipped when some
/// were not; and, when none was, that it is no audit log at all (gzip, UTF-16, a text, truncated JSON), which
/// leaves nothing observed rather than "no findings".
pub fn read_note(summary: &AuditSummary, subject: &str) -> Option<Note> {
    let message = if summary.lines == 0 {
        "has no lines: nothing was read from it".to_string()
    } else if summary.malformed >= summary.lines {
        format!(
            "none of its {} lines is an audit event (a JSON object of kind Event per line): not an API server \
             audit log? (gzip, UTF-16 and other encodings are not read, decompress or convert it first; a line \
             over {} MiB is skipped)",
            summary.lines,
            crate::live::collect::audit_file::MAX_LINE >> 20
        )
    } else if summary.malformed > 0 {
        format!(
            "{} of {} lines were not audit events and were skipped",
            summary.malformed, summary.lines
        )
    } else {
        return None;
    };
    Some(Note {
        subject: subject.to_string(),
        message,
    })
}

/// Summarises a whole log text (fixtures, tests).
pub fn summarise(source: &str, text: &str, namespace: Option<&str>) -> AuditSummary {
    let mut f = AuditFolder::new(source, namespace);
    for line in text.lines() {
        f.line(line);
    }
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_manager_is_decoded() {
        assert_eq!(
            field_manager("/apis/g/v1/namespaces/n/widgets/w?fieldManager=my%2Fctl&force=true")
                .as_deref(),
            Some("my/ctl")
        );
        assert_eq!(field_manager("/apis/g/v1/widgets"), None);
    }

    #[test]
    fn malformed_lines_are_counted_and_skipped() {
        let text = "not json\n{\"kind\":\"Event\",\"stage\":\"RequestReceived\",\"verb\":\"get\"}\n\n{\"a\":1}\n";
        let s = summarise("t", text, None);
        assert_eq!((s.lines, s.malformed, s.requests), (3, 2, 0));
        let note = read_note(&s, "audit log t").expect("a note");
        assert!(note.message.starts_with("2 of 3 lines"), "{note:?}");
    }

    #[test]
    fn a_log_without_a_single_audit_event_is_no_evidence() {
        let truncated = "{\"kind\":\"Event\",\"stage\":\"ResponseComplete\",\"verb\":\"get\"";
        for text in [
            "Dec  1 07:00:00 host kubelet[1]: started\nanother line\n",
            truncated,
            "\u{1f}\u{8b}\u{8}\u{0}binary",
            "{\0\"\0k\0i\0n\0d\0\"\0}\0\n\0",
        ] {
            let s = summarise("t", text, None);
            assert!(s.lines > 0 && s.malformed == s.lines, "{text:?}: {s:?}");
            let snap = crate::live::snapshot::Snapshot {
                audit: Some(s.clone()),
                ..Default::default()
            };
            assert!(!snap.has_evidence(), "{text:?}");
            let note = read_note(&s, "audit log t").expect("a note");
            assert!(note.message.contains("is an audit event"), "{note:?}");
        }
        // One event among garbage is evidence.
        let one = "junk\n{\"kind\":\"Event\",\"stage\":\"RequestReceived\",\"verb\":\"get\"}\n";
        let s = summarise("t", one, None);
        let snap = crate::live::snapshot::Snapshot {
            audit: Some(s),
            ..Default::default()
        };
        assert!(snap.has_evidence());
    }
}
