//! The harness's bookkeeping, on a thread and runtime of its own so that its CPU time can be measured apart
//! from the variants': once a second it scrapes every variant's `/metrics` over HTTP, counts Ready objects
//! from one watch on the run's Widgets, appends a CSV row per variant, draws the progress bar, and checks
//! that the API server still answers.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::cluster::RUN_LABEL;
use super::csv::{self, Row};
use super::scrape;
use super::widget::Widget;

/// One variant as the bookkeeper sees it.
#[derive(Debug, Clone)]
pub struct Watched {
    pub name: String,
    pub addr: SocketAddr,
    pub namespaces: Vec<String>,
    pub expected: u64,
}

/// What the bookkeeper needs.
#[derive(Debug, Clone)]
pub struct BookConfig {
    pub kube: kube::Config,
    pub run_id: String,
    pub variants: Vec<Watched>,
    pub output_dir: PathBuf,
    pub duration: Duration,
    /// When the variants started (t = 0 in the CSVs).
    pub t0: std::time::Instant,
    /// `--settle`: from this time on, tell the harness as soon as every variant has settled.
    pub settle_after: Option<Duration>,
}

/// What the bookkeeper tells the harness while running.
#[derive(Debug, Clone)]
pub enum BookEvent {
    /// The API server stopped answering (3 health checks in a row).
    ApiServerLost(String),
    /// Past `settle_after`, every variant has settled (sent once).
    AllSettled,
}

/// What the bookkeeper hands back when stopped.
#[derive(Debug, Default)]
pub struct BookResult {
    pub rows: BTreeMap<String, Vec<Row>>,
    /// CPU time of the bookkeeping thread, and the wall time it ran.
    pub cpu: Option<Duration>,
    pub wall: Duration,
    pub scrape_errors: BTreeMap<String, u64>,
    pub csv_files: Vec<PathBuf>,
    pub apiserver_lost: Option<String>,
}

/// A running bookkeeper.
#[derive(Debug)]
pub struct Book {
    thread: std::thread::JoinHandle<Result<BookResult>>,
    stop: watch::Sender<bool>,
    pub events: mpsc::UnboundedReceiver<BookEvent>,
}

impl Book {
    /// Starts the bookkeeping thread.
    pub fn start(cfg: BookConfig) -> Result<Self> {
        let (stop, stop_rx) = watch::channel(false);
        let (tx, events) = mpsc::unbounded_channel();
        let thread = std::thread::Builder::new()
            .name("ctrlaudit-bookkeeping".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("starting the bookkeeping runtime")?;
                rt.block_on(run(cfg, stop_rx, tx))
            })
            .context("starting the bookkeeping thread")?;
        Ok(Self {
            thread,
            stop,
            events,
        })
    }

    /// Stops it after one last scrape and returns what it recorded.
    pub fn finish(self) -> Result<BookResult> {
        // The thread may have ended already (an error): then there is no one to tell.
        let _ = self.stop.send(true);
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the bookkeeping thread panicked"))?
    }
}

/// Ready = the controller wrote status for the object's current generation.
pub fn is_ready(w: &Widget) -> bool {
    w.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Ready") && s.observed_generation == w.metadata.generation
    })
}

/// Ready per object, by namespace.
#[derive(Debug, Default)]
struct ReadyState {
    by_ns: HashMap<String, HashMap<String, bool>>,
    /// The listing in progress after a (re)start of the watch.
    pending: Option<HashMap<String, HashMap<String, bool>>>,
}

impl ReadyState {
    fn apply(&mut self, ev: watcher::Event<Widget>) {
        let put = |m: &mut HashMap<String, HashMap<String, bool>>, w: &Widget| {
            m.entry(w.namespace().unwrap_or_default())
                .or_default()
                .insert(w.name_any(), is_ready(w));
        };
        match ev {
            watcher::Event::Apply(w) => put(&mut self.by_ns, &w),
            watcher::Event::Delete(w) => {
                if let Some(m) = self.by_ns.get_mut(&w.namespace().unwrap_or_default()) {
                    m.remove(&w.name_any());
                }
            }
            watcher::Event::Init => self.pending = Some(HashMap::new()),
            watcher::Event::InitApply(w) => match self.pending.as_mut() {
                Some(p) => put(p, &w),
                None => put(&mut self.by_ns, &w),
            },
            watcher::Event::InitDone => {
                if let Some(p) = self.pending.take() {
                    self.by_ns = p;
                }
            }
        }
    }

    fn count(&self, namespaces: &[String]) -> (u64, u64) {
        let mut ready = 0;
        let mut total = 0;
        for ns in namespaces {
            if let Some(m) = self.by_ns.get(ns) {
                total += m.len() as u64;
                ready += m.values().filter(|r| **r).count() as u64;
            }
        }
        (ready, total)
    }
}

async fn run(
    cfg: BookConfig,
    mut stop: watch::Receiver<bool>,
    events: mpsc::UnboundedSender<BookEvent>,
) -> Result<BookResult> {
    let cpu0 = super::sysinfo::thread_cpu();
    let wall0 = Instant::now();
    let client = Client::try_from(cfg.kube.clone()).context("building the observer's client")?;
    let mut result = BookResult::default();
    let mut files = BTreeMap::new();
    for v in &cfg.variants {
        let path = cfg.output_dir.join(format!("{}.csv", v.name));
        let mut w = BufWriter::new(
            File::create(&path).with_context(|| format!("creating {}", path.display()))?,
        );
        csv::write_header(&mut w).with_context(|| format!("writing {}", path.display()))?;
        files.insert(v.name.clone(), w);
        result.csv_files.push(path);
        result.rows.insert(v.name.clone(), Vec::new());
    }
    let bar = progress_bar(cfg.duration);
    let api: Api<Widget> = Api::all(client.clone());
    let wc = watcher::Config::default().labels(&format!("{RUN_LABEL}={}", cfg.run_id));
    let mut stream = watcher(api, wc).default_backoff().boxed();
    let mut ready = ReadyState::default();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut health = tokio::time::interval(Duration::from_secs(2));
    let mut failures = 0u32;
    let mut last: HashMap<String, scrape::Snapshot> = HashMap::new();
    let mut settled_sent = false;
    loop {
        tokio::select! {
            // Errors are retried by the watcher with backoff; the health check decides when the server is gone.
            Some(Ok(ev)) = stream.next() => ready.apply(ev),
            _ = tick.tick() => {
                record(&cfg, &ready, &mut last, &mut result, &mut files).await;
                bar.set_position(cfg.t0.elapsed().as_secs().min(cfg.duration.as_secs()));
                bar.set_message(status_line(&cfg, &ready));
                if !settled_sent
                    && cfg.settle_after.is_some_and(|w| cfg.t0.elapsed() >= w)
                    && all_settled(&result.rows)
                {
                    settled_sent = true;
                    // The harness may be gone already: then nobody needs to know.
                    let _ = events.send(BookEvent::AllSettled);
                }
            }
            _ = health.tick() => {
                let ok = tokio::time::timeout(Duration::from_secs(2), client.apiserver_version())
                    .await
                    .is_ok_and(|r| r.is_ok());
                if ok {
                    failures = 0;
                } else {
                    failures += 1;
                    if failures == 3 && result.apiserver_lost.is_none() {
                        let why = "the API server did not answer 3 health checks in a row".to_string();
                        result.apiserver_lost = Some(why.clone());
                        // The harness may be gone already: then nobody needs to know.
                        let _ = events.send(BookEvent::ApiServerLost(why));
                    }
                }
            }
            _ = stop.changed() => break,
        }
    }
    // One last row at the very end of the window.
    record(&cfg, &ready, &mut last, &mut result, &mut files).await;
    bar.finish_and_clear();
    for (name, mut w) in files {
        w.flush().with_context(|| format!("writing {name}.csv"))?;
    }
    result.wall = wall0.elapsed();
    result.cpu = match (cpu0, super::sysinfo::thread_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    Ok(result)
}

/// Every variant has rows spanning the settle window and is at rest at their end.
fn all_settled(rows: &BTreeMap<String, Vec<Row>>) -> bool {
    rows.values()
        .all(|r| super::summary::at_end(r).is_some_and(|e| e.settled))
}

fn progress_bar(duration: Duration) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(duration.as_secs()), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:24}] {pos}/{len}s {wide_msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn status_line(cfg: &BookConfig, ready: &ReadyState) -> String {
    cfg.variants
        .iter()
        .map(|v| {
            let (r, _) = ready.count(&v.namespaces);
            format!("{} {r}/{}", v.name, v.expected)
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

async fn record(
    cfg: &BookConfig,
    ready: &ReadyState,
    last: &mut HashMap<String, scrape::Snapshot>,
    result: &mut BookResult,
    files: &mut BTreeMap<String, BufWriter<File>>,
) {
    let t = cfg.t0.elapsed().as_secs_f64();
    let scrapes = futures::future::join_all(cfg.variants.iter().map(|v| async move {
        let text = scrape::fetch(v.addr, Duration::from_millis(900)).await;
        (v, text.and_then(|t| scrape::parse(&t)))
    }))
    .await;
    for (v, snap) in scrapes {
        let (scraped, snap) = match snap {
            Ok(s) => {
                last.insert(v.name.clone(), s.clone());
                (true, s)
            }
            Err(_) => {
                *result.scrape_errors.entry(v.name.clone()).or_default() += 1;
                (false, last.get(&v.name).cloned().unwrap_or_default())
            }
        };
        let (r, total) = ready.count(&v.namespaces);
        let row = Row {
            t,
            ready: r,
            objects: total,
            scraped,
            snap,
        };
        if let Some(w) = files.get_mut(&v.name) {
            // A full disk must not stop the measurement: the rows are also kept in memory.
            let _ = csv::write_line(w, &row.fields()).and_then(|()| w.flush());
        }
        if let Some(rows) = result.rows.get_mut(&v.name) {
            rows.push(row);
        }
    }
}
