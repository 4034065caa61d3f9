//! One watch per resource type (kube-rs `watcher`, with backoff), fed into a [`TypeTracker`]: a streaming list
//! (WatchList) where the API server has it, else LIST then WATCH; metadata only for the built-in kinds.

use super::{Progress, now_ms};
use crate::live::snapshot::ResourceType;
use crate::live::tracker::{TypeTracker, WatchEvent};
use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, watcher};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// What one watch produced.
#[derive(Debug)]
pub struct WatchOutcome {
    pub tracker: TypeTracker,
    /// Lists started (the first and every re-list).
    pub lists: u64,
    /// Lists that completed: 0 means the type was never seen (kube-rs announces a list before it is made).
    pub listed: u64,
    /// When the first list completed, in ms since the epoch.
    pub first_listed_ms: Option<i64>,
    /// When the watch was down: from its first error to the next event, in ms since the epoch (an outage
    /// that lasted to the deadline ends there).
    pub gaps: Vec<(i64, i64)>,
    /// The error that stopped the watch, or the last one it recovered from.
    pub error: Option<String>,
    /// The lists were streamed in the watch (WatchList: one request each, whatever the object count) rather
    /// than paged LISTs.
    pub streaming: bool,
}

/// Retries after 250 ms, doubling to at most 2 s, reset by every event. kube-rs's default (up to 30 s, reset only
/// after 120 s) suits a controller that runs for weeks; a window of a minute would lose half its evidence to one
/// outage, and a retry is one list and one watch.
#[derive(Debug)]
struct WindowBackoff {
    next: Duration,
}

const FIRST_RETRY: Duration = Duration::from_millis(250);
const LAST_RETRY: Duration = Duration::from_secs(2);

impl Default for WindowBackoff {
    fn default() -> Self {
        Self { next: FIRST_RETRY }
    }
}

impl Iterator for WindowBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let now = self.next;
        self.next = (now * 2).min(LAST_RETRY);
        Some(now)
    }
}

impl kube::runtime::utils::Backoff for WindowBackoff {
    fn reset(&mut self) {
        self.next = FIRST_RETRY;
    }
}

/// Watches one type until `deadline`. A 403 stops it (retrying cannot help); other errors are retried with
/// `WindowBackoff` (within 2 s) and re-listed without double counting (see `tracker`). With `owners`, only
/// objects owned by one of those (group, kind) are kept.
pub async fn watch_type(
    client: Client,
    rt: ResourceType,
    namespace: Option<String>,
    owners: Vec<(String, String)>,
    deadline: tokio::time::Instant,
    progress: Arc<Progress>,
) -> WatchOutcome {
    let gvk = GroupVersionKind::gvk(&rt.group, &rt.version, &rt.kind);
    let ar = ApiResource::from_gvk_with_plural(&gvk, &rt.plural);
    let api: Api<DynamicObject> = match &namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    // `PartialObjectMetadata`: what the rules read of a built-in kind, a fraction of the bytes, and never a
    // Secret's data.
    let meta_api: Api<PartialObjectMeta<DynamicObject>> = match &namespace {
        Some(ns) => Api::namespaced_with(client, ns, &ar),
        None => Api::all_with(client, &ar),
    };
    let mut tracker = TypeTracker::new(&rt.group, &rt.kind, &rt.plural).owned_by(owners);
    let mut lists = 0u64;
    let mut listed = 0u64;
    let mut first_listed_ms = None;
    let mut error = None;
    let mut gaps = Vec::new();
    let mut down_since = None;
    // A streamed list costs one request and holds one object at a time, where a LIST costs a request per 500
    // objects and holds a page; API servers without WatchList (before 1.27, or with the gate off) refuse it.
    let open = |streaming: bool| {
        let config = if streaming {
            watcher::Config::default().streaming_lists()
        } else {
            watcher::Config::default()
        };
        if rt.metadata_only {
            watcher(meta_api.clone(), config)
                .backoff(WindowBackoff::default())
                .map(|e| e.map(as_dynamic))
                .boxed()
        } else {
            watcher(api.clone(), config)
                .backoff(WindowBackoff::default())
                .boxed()
        }
    };
    let mut streaming = true;
    let mut stream = open(streaming);
    let sleep = tokio::time::sleep_until(deadline);
    tokio::pin!(sleep);
    let mut counted_objects = 0usize;
    let mut counted_writes = 0u64;
    loop {
        let item = tokio::select! {
            _ = &mut sleep => break,
            item = stream.next() => item,
        };
        let Some(item) = item else { break };
        let t = now_ms();
        // Back up once data flows again: a re-list that finished, or an event. (kube-rs announces a re-list
        // with `Init` before making it, so that is not yet proof.)
        let flowing = matches!(
            item,
            Ok(watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_))
        );
        if flowing && let Some(since) = down_since.take() {
            gaps.push((since, t));
        }
        match item {
            Ok(watcher::Event::Init) => {
                lists += 1;
                tracker.handle(t, WatchEvent::Init);
            }
            Ok(watcher::Event::InitApply(o)) => tracker.handle(t, WatchEvent::InitApply(&o)),
            Ok(watcher::Event::InitDone) => {
                listed += 1;
                first_listed_ms.get_or_insert(t);
                tracker.handle(t, WatchEvent::InitDone);
            }
            Ok(watcher::Event::Apply(o)) => tracker.handle(t, WatchEvent::Apply(&o)),
            Ok(watcher::Event::Delete(o)) => tracker.handle(t, WatchEvent::Delete(&o)),
            Err(e) if streaming && listed == 0 && refuses_streaming(&e) => {
                streaming = false;
                lists = lists.saturating_sub(1);
                stream = open(streaming);
                continue;
            }
            Err(e) => {
                let (forbidden, msg) = describe(&e, &rt);
                error = Some(msg);
                down_since.get_or_insert(t);
                if forbidden {
                    break;
                }
                continue;
            }
        }
        // Progress counters, cheaply: objects on every event, writes now and then.
        let n = tracker.len();
        if n != counted_objects {
            progress
                .objects
                .fetch_add((n - counted_objects) as u64, Ordering::Relaxed);
            counted_objects = n;
        }
        if tracker.events.is_multiple_of(64) {
            let w = tracker.writes();
            progress
                .writes
                .fetch_add(w.saturating_sub(counted_writes), Ordering::Relaxed);
            counted_writes = w;
        }
    }
    let w = tracker.writes();
    progress
        .writes
        .fetch_add(w.saturating_sub(counted_writes), Ordering::Relaxed);
    if let Some(since) = down_since {
        gaps.push((since, now_ms().max(since)));
    }
    WatchOutcome {
        gaps,
        tracker,
        lists,
        listed,
        first_listed_ms,
        error,
        streaming,
    }
}

/// A metadata-only event as one of [`DynamicObject`]s with no data, so that one tracker reads both.
fn as_dynamic(
    e: watcher::Event<PartialObjectMeta<DynamicObject>>,
) -> watcher::Event<DynamicObject> {
    let conv = |p: PartialObjectMeta<DynamicObject>| DynamicObject {
        types: p.types,
        metadata: p.metadata,
        data: serde_json::Value::Null,
    };
    match e {
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
        watcher::Event::InitApply(p) => watcher::Event::InitApply(conv(p)),
        watcher::Event::Apply(p) => watcher::Event::Apply(conv(p)),
        watcher::Event::Delete(p) => watcher::Event::Delete(conv(p)),
    }
}

/// The API server rejected the streaming list's parameters (`sendInitialEvents`, `resourceVersionMatch` on a
/// watch): it has no WatchList.
fn refuses_streaming(e: &watcher::Error) -> bool {
    let status = match e {
        watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s,
        watcher::Error::WatchError(s) => s,
        _ => return false,
    };
    matches!(status.code, 400 | 422)
}

fn describe(e: &watcher::Error, rt: &ResourceType) -> (bool, String) {
    let what = format!("list and watch on {}", rt.qualified());
    match e {
        watcher::Error::InitialListFailed(k)
        | watcher::Error::WatchStartFailed(k)
        | watcher::Error::WatchFailed(k) => {
            let forbidden = matches!(k, kube::Error::Api(s) if s.code == 403 || s.code == 401);
            (forbidden, super::discover::explain(k, &what))
        }
        watcher::Error::WatchError(s) if s.code == 403 => {
            (true, format!("forbidden (needs {what})"))
        }
        watcher::Error::WatchError(s) => {
            (false, format!("the watch ended: {} {}", s.code, s.message))
        }
        watcher::Error::NoResourceVersion => (true, "the type does not support watch".to_string()),
    }
}
