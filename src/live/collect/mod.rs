//! All of `live`'s I/O: discover the custom resources, watch them, scrape `/metrics`, read an audit log, and
//! fold it all into a plain [`Snapshot`]. Read-only: list, watch and get, never a write, never a Secret.

pub mod audit_file;
pub mod discover;
pub mod scrape;
pub mod watch;

use crate::config::Config;
use crate::live::snapshot::{MetricSource, ResourceType, Scope, Snapshot, SourceKind, Window};
use crate::report::Note;
use kube::Client;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where a controller's `/metrics` are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsTarget {
    /// A plain `http://` URL reachable from here.
    Url(String),
    /// A pod, scraped through the API server's pod proxy; port `None` = from the pod's container ports.
    Pod {
        namespace: String,
        name: String,
        port: Option<u16>,
    },
    /// Pods matching a label selector in a namespace.
    Selector {
        namespace: String,
        selector: String,
        port: Option<u16>,
    },
}

/// What to observe and for how long.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// `None` = all namespaces.
    pub namespace: Option<String>,
    pub duration: Duration,
    /// Limit to these types (plural, kind, short name or plural.group; built-in kinds too); empty = every
    /// custom resource.
    pub resources: Vec<String>,
    /// Also watch, for metadata only, the kinds the watched types own (their objects with an ownerReference to
    /// a watched object).
    pub owned: bool,
    pub targets: Vec<MetricsTarget>,
    pub audit_log: Option<PathBuf>,
    /// How often the controllers' `/metrics` are scraped during the window.
    pub scrape_interval: Duration,
    /// Whether to scrape the API server's `/metrics`.
    pub apiserver_metrics: bool,
    pub write_ceiling: Option<f64>,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// The longest wait for one request's answer (`--request-timeout`); `None` = only the window bounds it.
    pub request_timeout: Option<Duration>,
    /// The API server's URL, to say in a note which server did not answer.
    pub server: Option<String>,
}

impl Default for CollectOptions {
    fn default() -> Self {
        Self {
            namespace: None,
            duration: Duration::from_secs(60),
            resources: Vec::new(),
            owned: false,
            targets: Vec::new(),
            audit_log: None,
            scrape_interval: Duration::from_secs(5),
            apiserver_metrics: true,
            write_ceiling: None,
            progress: false,
            request_timeout: Some(crate::connect::DEFAULT_REQUEST_TIMEOUT),
            server: None,
        }
    }
}

/// The shortest `--scrape-interval`: a scrape of a large endpoint takes longer than a shorter one, and the
/// detectors read rates over the window, not single scrapes.
pub const MIN_SCRAPE_INTERVAL: Duration = Duration::from_secs(1);

/// After the window, how long the closing work (the last scrapes, the watches' ends) may take: the run ends
/// within `--duration` and this, whatever the API server does.
pub const CLOSING: Duration = Duration::from_secs(10);

/// `now + d`, or a month on when that overflows (a library caller's duration; the flags are bounded).
pub(crate) fn after(d: Duration) -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(crate::duration::MAX))
        .unwrap_or(now)
}

/// A request that got no (whole) answer in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoAnswer {
    #[error("{server} did not answer {what} within {}", crate::duration::format(*.within))]
    Timeout {
        server: String,
        what: String,
        within: Duration,
    },
    #[error("{what} was not sent: the window had ended (waiting for earlier requests)")]
    WindowOver { what: String },
}

/// The time limits of one window: every request gets at most the request timeout and never runs past the
/// window (setup) or the closing grace (the last scrapes).
#[derive(Debug, Clone)]
pub struct Limits {
    /// The end of the window, counted from before discovery: setup shares it, watches end at it.
    pub deadline: tokio::time::Instant,
    /// The end of the closing grace after the window.
    pub closing: tokio::time::Instant,
    pub request_timeout: Option<Duration>,
    /// `the API server at https://…`.
    pub server: String,
}

impl Limits {
    /// Limits for a window of `opts.duration` starting now.
    pub fn new(opts: &CollectOptions) -> Self {
        let deadline = after(opts.duration);
        Self {
            deadline,
            closing: deadline.checked_add(CLOSING).unwrap_or(deadline),
            request_timeout: opts.request_timeout,
            server: opts.server.as_ref().map_or_else(
                || "the API server".to_string(),
                |u| format!("the API server at {u}"),
            ),
        }
    }

    /// How long a request started now may take: `cap`, the request timeout, and what is left until `until`.
    pub fn budget(&self, cap: Option<Duration>, until: tokio::time::Instant) -> Duration {
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        [cap, self.request_timeout]
            .into_iter()
            .flatten()
            .fold(left, Duration::min)
    }

    /// Awaits `request` (`what`: `list customresourcedefinitions`) for at most its budget within the window.
    pub async fn setup<T>(
        &self,
        what: &str,
        request: impl Future<Output = T>,
    ) -> Result<T, NoAnswer> {
        self.within(what, None, self.deadline, request).await
    }

    /// Awaits `request` for at most `cap`, the request timeout and what is left until `until`.
    pub async fn within<T>(
        &self,
        what: &str,
        cap: Option<Duration>,
        until: tokio::time::Instant,
        request: impl Future<Output = T>,
    ) -> Result<T, NoAnswer> {
        let within = self.budget(cap, until);
        if within.is_zero() {
            return Err(NoAnswer::WindowOver {
                what: what.to_string(),
            });
        }
        tokio::time::timeout(within, request)
            .await
            .map_err(|_| NoAnswer::Timeout {
                server: self.server.clone(),
                what: what.to_string(),
                within,
            })
    }
}

/// Counters the watch tasks update for the progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    pub objects: AtomicU64,
    pub writes: AtomicU64,
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Observes the cluster through `client` for `opts.duration`. Never fails: whatever could not be observed
/// becomes a note in the snapshot.
pub async fn collect(client: Option<Client>, opts: &CollectOptions, cfg: &Config) -> Snapshot {
    let mut snap = Snapshot {
        format: crate::live::snapshot::FORMAT_VERSION,
        scope: Scope {
            namespace: opts.namespace.clone(),
        },
        write_ceiling: opts.write_ceiling,
        ..Snapshot::default()
    };
    let mut notes: Vec<Note> = Vec::new();
    let mut requests: BTreeMap<String, u64> = BTreeMap::new();
    let start = now_ms();

    // With a cluster, the log is followed through the window (a rotation or truncation meanwhile loses
    // nothing); offline, it is read whole.
    let follower = match (&client, &opts.audit_log) {
        (Some(_), Some(path)) => Some(audit_file::Follower::start(
            path,
            opts.namespace.as_deref(),
            start,
        )),
        _ => None,
    };
    if let Some(client) = client {
        observe(&client, opts, cfg, &mut snap, &mut notes, &mut requests).await;
    } else {
        snap.window = Window {
            start_ms: start,
            end_ms: start,
        };
    }

    if let Some(path) = &opts.audit_log {
        let read = match follower {
            Some(Ok(f)) => f
                .finish(snap.window.end_ms)
                .await
                .map(|(summary, mut followed)| {
                    notes.append(&mut followed);
                    summary
                }),
            Some(Err(e)) => Err(e),
            None => audit_file::read(path, opts.namespace.as_deref(), None).await,
        };
        match read {
            Ok(summary) => {
                notes.extend(crate::live::audit::read_note(
                    &summary,
                    &format!("audit log {}", path.display()),
                ));
                snap.attach_audit(summary);
            }
            Err(e) => notes.push(Note {
                subject: format!("audit log {}", path.display()),
                message: format!("{e:#}"),
            }),
        }
    }
    snap.notes = notes;
    snap.requests = requests;
    snap
}

async fn observe(
    client: &Client,
    opts: &CollectOptions,
    cfg: &Config,
    snap: &mut Snapshot,
    notes: &mut Vec<Note>,
    requests: &mut BTreeMap<String, u64>,
) {
    // The window counts from here: a server that does not answer discovery uses it up, instead of delaying it.
    let limits = Limits::new(opts);
    // What to watch.
    let (mut resources, discover_notes) =
        discover::custom_resources(client, requests, &limits).await;
    notes.extend(discover_notes);
    let namespaced_scope = opts.namespace.is_some();
    let mut unmatched = discover::select(&mut resources, &opts.resources, namespaced_scope);
    if !unmatched.is_empty() || opts.owned {
        let mut builtins = discover::builtin_resources(client, requests, notes, &limits).await;
        unmatched = discover::select_named(&mut builtins, &unmatched);
        if opts.owned && discover::add_owned(&mut resources, &mut builtins, namespaced_scope) == 0 {
            notes.push(Note {
                subject: "--owned".into(),
                message: "no kind to add: every one is watched already".into(),
            });
        }
        // Only the built-in kinds that are watched are part of the snapshot: listing every one would bury
        // the custom resources in the table of types.
        resources.extend(builtins.into_iter().filter(|r| r.watched));
    }
    for w in unmatched {
        notes.push(Note {
            subject: format!("--resource {w}"),
            message: "no resource type of that name (a plural, kind, short name or plural.group)"
                .into(),
        });
    }
    let owners = discover::owners(&resources);

    // Controller targets: resolve selectors and ports once, up front.
    let (targets, target_notes) =
        scrape::resolve_targets(client, &opts.targets, requests, &limits).await;
    notes.extend(target_notes);

    let start = now_ms();
    let deadline = limits.deadline;
    let progress = Arc::new(Progress::default());

    let mut apiserver = MetricSource {
        name: "apiserver".into(),
        kind: SourceKind::Apiserver,
        ..MetricSource::default()
    };
    let mut apiserver_failed = !opts.apiserver_metrics;
    if opts.apiserver_metrics {
        match scrape::apiserver(client, cfg, &limits, deadline).await {
            Ok(s) => apiserver.push(s),
            Err(e) => {
                apiserver_failed = true;
                notes.push(Note {
                    subject: "apiserver /metrics".into(),
                    message: e.to_string(),
                });
            }
        }
        *requests.entry("get /metrics".into()).or_default() += 1;
    }

    let watches: Vec<_> = resources
        .iter()
        .filter(|r| r.watched)
        .map(|r| {
            let client = client.clone();
            let rt = r.clone();
            let ns = if r.namespaced {
                opts.namespace.clone()
            } else {
                None
            };
            let progress = progress.clone();
            let owners = if r.owned { owners.clone() } else { Vec::new() };
            tokio::spawn(async move {
                watch::watch_type(client, rt, ns, owners, deadline, progress).await
            })
        })
        .collect();

    let scrapers: Vec<_> = targets
        .into_iter()
        .map(|t| {
            let client = client.clone();
            let cfg = cfg.clone();
            // The flag refuses less; a library caller's shorter interval would only spin.
            let interval = opts.scrape_interval.max(MIN_SCRAPE_INTERVAL);
            let limits = limits.clone();
            tokio::spawn(
                async move { scrape::scrape_target(client, t, &cfg, interval, &limits).await },
            )
        })
        .collect();

    let bar = opts.progress.then(|| progress_bar(opts.duration));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut stopped_early = false;
    let mut ended_early = false;
    loop {
        let tick = tokio::time::sleep(Duration::from_millis(250));
        tokio::select! {
            _ = tick => {}
            _ = &mut ctrl_c => { stopped_early = true; break; }
        }
        if let Some(bar) = &bar {
            let elapsed = opts
                .duration
                .saturating_sub(deadline.saturating_duration_since(tokio::time::Instant::now()));
            bar.set_position(elapsed.as_millis() as u64);
            bar.set_message(format!(
                "{} objects, {} writes",
                progress.objects.load(Ordering::Relaxed),
                progress.writes.load(Ordering::Relaxed)
            ));
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        // Every watch stopped (forbidden, unauthorized, or there was nothing to watch on a cluster that cannot
        // be reached) and no other source is left: waiting out the window would show nothing more.
        let nothing_left = apiserver_failed
            && opts.audit_log.is_none()
            && watches.iter().all(|h| h.is_finished())
            && scrapers.iter().all(|h| h.is_finished());
        if nothing_left {
            ended_early = true;
            break;
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if ended_early {
        notes.push(Note {
            subject: "window".into(),
            message: "ended early: no watch, /metrics source or audit log was left to observe (see the notes above)"
                .into(),
        });
    }
    if stopped_early {
        notes.push(Note {
            subject: "window".into(),
            message:
                "interrupted (Ctrl-C): findings cover the part of the window that was observed"
                    .into(),
        });
    }

    let mut objects = Vec::new();
    for (handle, rt) in watches
        .into_iter()
        .zip(resources.iter_mut().filter(|r| r.watched))
    {
        if stopped_early {
            handle.abort();
        }
        let abort = handle.abort_handle();
        let Ok(joined) = tokio::time::timeout_at(limits.closing, handle).await else {
            // Watches end at the deadline; one that has not is stuck in something the window cannot wait for.
            abort.abort();
            rt.watched = false;
            notes.push(Note {
                subject: format!("watch {}", rt.qualified()),
                message: format!(
                    "did not end within {} of the window's end: dropped",
                    crate::duration::format(CLOSING)
                ),
            });
            continue;
        };
        match joined {
            Ok(outcome) => {
                rt.relists = outcome.tracker.relists;
                rt.listed_after_ms = outcome.first_listed_ms.map(|t| (t - start).max(0));
                // A streamed list is the watch request itself; a LIST is paged by 500 (kube-rs default).
                if !outcome.streaming {
                    let pages = (outcome.tracker.len() as u64).div_ceil(500).max(1);
                    *requests
                        .entry(format!("list {}", rt.qualified()))
                        .or_default() += outcome.lists * pages;
                }
                *requests
                    .entry(format!("watch {}", rt.qualified()))
                    .or_default() += outcome.lists;
                if let Some(err) = outcome.error {
                    notes.push(Note {
                        subject: format!("watch {}", rt.qualified()),
                        message: with_gaps(err, &outcome.gaps, outcome.listed),
                    });
                    if outcome.listed == 0 {
                        rt.watched = false;
                    }
                } else if outcome.listed == 0 && !stopped_early {
                    // Neither an error nor a list: the request is still waiting. Nothing was seen of the type, so
                    // it does not count as watched (a window with nothing else is no evidence, not "clean").
                    rt.watched = false;
                    notes.push(Note {
                        subject: format!("watch {}", rt.qualified()),
                        message: format!(
                            "{} did not answer the list within the window: nothing was seen of this type",
                            limits.server
                        ),
                    });
                }
                let records = outcome.tracker.into_records();
                // Taken as is when it is the first type's: extending an empty Vec would copy every record.
                if objects.is_empty() {
                    objects = records;
                } else {
                    objects.extend(records);
                }
            }
            Err(e) if e.is_cancelled() => rt.watched = false,
            Err(e) => {
                rt.watched = false;
                notes.push(Note {
                    subject: format!("watch {}", rt.qualified()),
                    message: format!("the watch task failed: {e}"),
                });
            }
        }
    }
    let mut metrics = Vec::new();
    for handle in scrapers {
        if stopped_early {
            handle.abort();
        }
        let abort = handle.abort_handle();
        let Ok(joined) = tokio::time::timeout_at(limits.closing, handle).await else {
            abort.abort();
            continue;
        };
        if let Ok(outcome) = joined {
            *requests
                .entry("get controller /metrics".into())
                .or_default() += outcome.attempts;
            notes.extend(outcome.notes);
            metrics.push(outcome.source);
        }
    }
    if !apiserver_failed {
        match scrape::apiserver(client, cfg, &limits, limits.closing).await {
            Ok(s) => apiserver.push(s),
            Err(e) => notes.push(Note {
                subject: "apiserver /metrics".into(),
                message: format!("the closing scrape failed: {e}"),
            }),
        }
        *requests.entry("get /metrics".into()).or_default() += 1;
        metrics.insert(0, apiserver);
    }
    let end = now_ms();
    snap.window = Window {
        start_ms: start,
        end_ms: end.max(start + 1),
    };
    snap.resources = resources;
    snap.objects = objects;
    snap.metrics = metrics;
}

/// A watch error, and when it recovered: how long the watch was down, and that it re-listed.
fn with_gaps(err: String, gaps: &[(i64, i64)], listed: u64) -> String {
    if gaps.is_empty() || listed == 0 {
        return err;
    }
    let total_s: f64 = gaps.iter().map(|(a, b)| (b - a) as f64 / 1000.0).sum();
    let longest_s = gaps.iter().map(|(a, b)| b - a).max().unwrap_or(0) as f64 / 1000.0;
    format!(
        "down {} {} for {total_s:.1}s in all (longest {longest_s:.1}s), last error: {err}; after each outage it \
         re-listed and went on: objects written during an outage count one write each",
        gaps.len(),
        if gaps.len() == 1 { "time" } else { "times" },
    )
}

fn progress_bar(duration: Duration) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(duration.as_millis() as u64);
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} watching {elapsed_precise} [{bar:30}] {percent:>3}% {msg}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar
}

/// The resource types a snapshot would watch, for callers that only want discovery (tests, `--record`).
pub fn watched(resources: &[ResourceType]) -> impl Iterator<Item = &ResourceType> {
    resources.iter().filter(|r| r.watched)
}
