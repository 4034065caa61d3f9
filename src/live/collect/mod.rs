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
        }
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
    // What to watch.
    let (mut resources, discover_notes) = discover::custom_resources(client, requests).await;
    notes.extend(discover_notes);
    let namespaced_scope = opts.namespace.is_some();
    let mut unmatched = discover::select(&mut resources, &opts.resources, namespaced_scope);
    if !unmatched.is_empty() || opts.owned {
        let mut builtins = discover::builtin_resources(client, requests, notes).await;
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
    let (targets, target_notes) = scrape::resolve_targets(client, &opts.targets, requests).await;
    notes.extend(target_notes);

    let start = now_ms();
    let deadline = tokio::time::Instant::now() + opts.duration;
    let progress = Arc::new(Progress::default());

    let mut apiserver = MetricSource {
        name: "apiserver".into(),
        kind: SourceKind::Apiserver,
        scrapes: Vec::new(),
    };
    let mut apiserver_failed = !opts.apiserver_metrics;
    if opts.apiserver_metrics {
        match scrape::apiserver(client, cfg).await {
            Ok(s) => apiserver.scrapes.push(s),
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
            let interval = opts.scrape_interval;
            tokio::spawn(
                async move { scrape::scrape_target(client, t, &cfg, interval, deadline).await },
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
        match handle.await {
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
        if let Ok(outcome) = handle.await {
            *requests
                .entry("get controller /metrics".into())
                .or_default() += outcome.attempts;
            notes.extend(outcome.notes);
            metrics.push(outcome.source);
        }
    }
    if !apiserver_failed {
        match scrape::apiserver(client, cfg).await {
            Ok(s) => apiserver.scrapes.push(s),
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
