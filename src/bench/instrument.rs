//! What every bench variant shares: controller-runtime-compatible metrics, a model of the work queue
//! (kube-rs keeps its scheduler private), per-object error backoff, the simulated work and the stop signal.
//!
//! The metric names are controller-runtime's and client-go's, so one scraper reads a bench variant and a Go
//! controller alike: `controller_runtime_reconcile_total{controller,result}`,
//! `controller_runtime_reconcile_time_seconds`, `workqueue_depth`, `workqueue_adds_total`,
//! `workqueue_retries_total`, `rest_client_requests_total{code,method}` (the last from [`super::client`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use futures::channel::oneshot;
use futures::future::Shared;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry};
use tokio::time::Instant;

use super::client::RestMetrics;
use super::widget::Widget;

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`, so percentiles compare.
pub const RECONCILE_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// A histogram with [`RECONCILE_BUCKETS`]; a plain `fn` so it can be a [`Family`] constructor.
pub fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS.iter().copied())
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    controller: String,
    kind: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

#[derive(Debug, Clone)]
struct Metrics {
    reconcile_total: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    reconcile_time: HistogramFamily<ControllerLabels>,
    active_workers: Family<ControllerLabels, Gauge>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    conflict_retries: Family<ControllerLabels, Counter>,
    controller_errors: Family<KindLabels, Counter>,
    resident_memory: Gauge,
    baseline_memory: Gauge,
    tasks: Gauge,
    baseline_tasks: Gauge,
    controllers: Gauge,
}

/// What the harness passes to a variant: who it is, how much work a reconcile simulates, and options.
#[derive(Debug, Clone)]
pub struct VariantOptions {
    /// The `controller` label value, also the variant's name.
    pub controller: String,
    /// Simulated work per reconcile (a tokio sleep: I/O-bound work that does not hold a core).
    pub work: Duration,
    /// `watcher::Config::streaming_lists()` (the seed's WatchListClient) instead of LIST then WATCH.
    pub streaming_lists: bool,
    /// Label selector for the objects the variant owns (the cluster-wide `shared` design needs it).
    pub label_selector: Option<String>,
    /// Export `process_resident_memory_bytes` and tokio task counts (only meaningful in a process of its own).
    pub process_metrics: bool,
    /// The configured worker limit, exported as `controller_runtime_max_concurrent_reconciles` (0 = unbounded).
    pub workers: u16,
}

/// The context every variant's reconcile gets: the kube client plus the instrumentation.
pub struct VariantCtx {
    /// The variant's own client (own connection pool, own request counters).
    pub client: Client,
    /// The variant's options.
    pub opts: VariantOptions,
    metrics: Metrics,
    rest: RestMetrics,
    registry: Mutex<Registry>,
    /// Objects waiting for a worker, with the instant they become due (a requeue is due later).
    queue: Mutex<HashMap<String, Instant>>,
    /// Consecutive failures per object, for the exponential error backoff.
    failures: Mutex<HashMap<String, u32>>,
    shutdown: Shared<oneshot::Receiver<()>>,
}

/// Held by the harness: dropping or firing it stops the variant's controllers gracefully.
#[derive(Debug)]
pub struct StopHandle(Option<oneshot::Sender<()>>);

impl StopHandle {
    /// Asks the variant's controllers to finish their running reconciles and return.
    pub fn stop(&mut self) {
        if let Some(tx) = self.0.take() {
            // The receiver may already be gone when the variant ended on its own: nothing to stop then.
            let _ = tx.send(());
        }
    }
}

impl std::fmt::Debug for VariantCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VariantCtx")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking reconcile must not take the metrics down with it: the data is still usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `namespace/name`, the queue key.
fn key_of(w: &Widget) -> String {
    format!("{}/{}", w.namespace().unwrap_or_default(), w.name_any())
}

fn key_of_ref(r: &ObjectRef<Widget>) -> String {
    format!("{}/{}", r.namespace.as_deref().unwrap_or_default(), r.name)
}

/// controller-runtime's default per-item rate limiter: 5 ms × 2^(failures−1), capped (there at 1000 s; here
/// at 60 s so that a bench window sees the retries).
pub fn error_backoff(failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    Duration::from_millis(5u64.saturating_mul(1u64 << exp)).min(Duration::from_secs(60))
}

/// The requeue delay inside an [`Action`]. kube-rs keeps the field private; its derived `Debug`
/// (`Action { requeue_after: Some(1s) }`) is the only way to read it, and a unit test pins that format.
pub fn requeue_after(action: &Action) -> Option<Duration> {
    if *action == Action::await_change() {
        return None;
    }
    let text = format!("{action:?}");
    let inner = text.split("Some(").nth(1)?.split(')').next()?;
    parse_debug_duration(inner)
}

/// Parses `Duration`'s `Debug` text: `1s`, `1.5s`, `300ms`, `20µs`, `7ns`.
fn parse_debug_duration(s: &str) -> Option<Duration> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let secs = match unit {
        "s" => v,
        "ms" => v / 1e3,
        "µs" | "us" => v / 1e6,
        "ns" => v / 1e9,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

impl VariantCtx {
    /// A context with a fresh registry; `rest` are the counters of the variant's client (see
    /// [`super::client::build`]). Returns the context and the handle that stops the variant.
    pub fn new(client: Client, rest: RestMetrics, opts: VariantOptions) -> (Arc<Self>, StopHandle) {
        let metrics = Metrics {
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_histogram as fn() -> Histogram),
            active_workers: Family::default(),
            max_concurrent: Family::default(),
            depth: Family::default(),
            adds: Family::default(),
            retries: Family::default(),
            conflict_retries: Family::default(),
            controller_errors: Family::default(),
            resident_memory: Gauge::default(),
            baseline_memory: Gauge::default(),
            tasks: Gauge::default(),
            baseline_tasks: Gauge::default(),
            controllers: Gauge::default(),
        };
        let mut r = Registry::default();
        r.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            metrics.reconcile_total.clone(),
        );
        r.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            metrics.reconcile_errors.clone(),
        );
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            metrics.reconcile_time.clone(),
        );
        r.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            metrics.active_workers.clone(),
        );
        r.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller (0 = unbounded)",
            metrics.max_concurrent.clone(),
        );
        r.register(
            "workqueue_depth",
            "Current depth of workqueue (objects triggered or due and not yet picked up by a worker)",
            metrics.depth.clone(),
        );
        r.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            metrics.adds.clone(),
        );
        r.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue (delayed re-adds after errors)",
            metrics.retries.clone(),
        );
        r.register(
            "ctrlaudit_conflict_retries",
            "Writes repeated inside reconcile after a 409 Conflict",
            metrics.conflict_retries.clone(),
        );
        r.register(
            "ctrlaudit_controller_errors",
            "Errors of the controller machinery itself (watch, queue, object not found), by kind",
            metrics.controller_errors.clone(),
        );
        if opts.process_metrics {
            r.register(
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                metrics.resident_memory.clone(),
            );
            r.register(
                "ctrlaudit_baseline_resident_memory_bytes",
                "Resident memory before the controllers started",
                metrics.baseline_memory.clone(),
            );
            r.register(
                "ctrlaudit_tokio_alive_tasks",
                "Tokio tasks alive in the process",
                metrics.tasks.clone(),
            );
            r.register(
                "ctrlaudit_baseline_tokio_alive_tasks",
                "Tokio tasks alive before the controllers started",
                metrics.baseline_tasks.clone(),
            );
            r.register(
                "ctrlaudit_controllers",
                "Controllers running in the process",
                metrics.controllers.clone(),
            );
        }
        rest.register(&mut r);
        metrics
            .max_concurrent
            .get_or_create(&ControllerLabels {
                controller: opts.controller.clone(),
            })
            .set(i64::from(opts.workers));
        let (tx, rx) = oneshot::channel();
        let ctx = Arc::new(Self {
            client,
            opts,
            metrics,
            rest,
            registry: Mutex::new(r),
            queue: Mutex::new(HashMap::new()),
            failures: Mutex::new(HashMap::new()),
            shutdown: rx.shared(),
        });
        (ctx, StopHandle(Some(tx)))
    }

    fn controller_labels(&self) -> ControllerLabels {
        ControllerLabels {
            controller: self.opts.controller.clone(),
        }
    }

    fn queue_labels(&self) -> QueueLabels {
        QueueLabels {
            name: self.opts.controller.clone(),
            controller: self.opts.controller.clone(),
        }
    }

    /// The watcher configuration every variant uses for its main stream.
    pub fn watcher_config(&self) -> watcher::Config {
        let mut cfg = watcher::Config::default();
        if let Some(sel) = &self.opts.label_selector {
            cfg = cfg.labels(sel);
        }
        if self.opts.streaming_lists {
            cfg = cfg.streaming_lists();
        }
        cfg
    }

    /// A future that completes when the harness stops the variant; for `graceful_shutdown_on`.
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.shutdown.clone().map(|_| ())
    }

    /// The variant's trigger stream saw `w` (after any predicate): it now waits in the queue.
    pub fn triggered(&self, w: &Widget) {
        let now = Instant::now();
        lock(&self.queue)
            .entry(key_of(w))
            .and_modify(|due| *due = (*due).min(now))
            .or_insert(now);
        self.metrics.adds.get_or_create(&self.queue_labels()).inc();
    }

    /// A worker picked `w` up. Hold the guard for the whole reconcile: it times it and counts active workers.
    pub fn reconcile_started(&self, w: &Widget) -> ReconcileGuard<'_> {
        lock(&self.queue).remove(&key_of(w));
        self.metrics
            .active_workers
            .get_or_create(&self.controller_labels())
            .inc();
        ReconcileGuard {
            ctx: self,
            start: Instant::now(),
        }
    }

    /// The work every variant does the same way: an I/O-bound call that takes `--work`.
    pub async fn simulated_work(&self) {
        tokio::time::sleep(self.opts.work).await;
    }

    /// A write was repeated after a 409 Conflict.
    pub fn conflict_retry(&self) {
        self.metrics
            .conflict_retries
            .get_or_create(&self.controller_labels())
            .inc();
    }

    /// The error backoff for `w` (for `error_policy`): counts a retry and schedules the object.
    pub fn backoff(&self, w: &Widget) -> Duration {
        let key = key_of(w);
        let n = {
            let mut f = lock(&self.failures);
            let n = f.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let delay = error_backoff(n);
        self.schedule(key, delay);
        self.metrics
            .retries
            .get_or_create(&self.queue_labels())
            .inc();
        delay
    }

    fn schedule(&self, key: String, after: Duration) {
        let due = Instant::now() + after;
        lock(&self.queue)
            .entry(key)
            .and_modify(|d| *d = (*d).min(due))
            .or_insert(due);
    }

    /// Records one item of the stream that `Controller::run` returns: the reconcile's result.
    pub fn finished<E: std::error::Error>(
        &self,
        item: &Result<(ObjectRef<Widget>, Action), controller::Error<E, watcher::Error>>,
    ) {
        let result = match item {
            Ok((obj, action)) => {
                lock(&self.failures).remove(&key_of_ref(obj));
                match requeue_after(action) {
                    Some(d) => {
                        self.schedule(key_of_ref(obj), d);
                        "requeue_after"
                    }
                    None => "success",
                }
            }
            Err(controller::Error::ReconcilerFailed(..)) => {
                self.metrics
                    .reconcile_errors
                    .get_or_create(&self.controller_labels())
                    .inc();
                "error"
            }
            Err(e) => {
                let kind = match e {
                    controller::Error::ObjectNotFound(_) => "object_not_found",
                    controller::Error::QueueError(_) => "queue",
                    _ => "runner",
                };
                self.metrics
                    .controller_errors
                    .get_or_create(&KindLabels {
                        controller: self.opts.controller.clone(),
                        kind: kind.to_string(),
                    })
                    .inc();
                return;
            }
        };
        self.metrics
            .reconcile_total
            .get_or_create(&ResultLabels {
                controller: self.opts.controller.clone(),
                result: result.to_string(),
            })
            .inc();
    }

    /// Registers a variant's own metric in its registry (the cardinality pair adds per-object series).
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        lock(&self.registry).register(name, help, metric);
    }

    /// Notes the process's memory and task count before the controllers start (the tenant designs).
    pub fn record_baseline(&self, controllers: usize) {
        if let Some(rss) = super::sysinfo::resident_bytes() {
            self.metrics.baseline_memory.set(clamp_i64(rss));
        }
        self.metrics.baseline_tasks.set(clamp_i64(alive_tasks()));
        self.metrics.controllers.set(clamp_i64(controllers as u64));
    }

    /// The OpenMetrics text of the variant's registry, with the sampled gauges refreshed.
    pub fn encode(&self) -> String {
        let now = Instant::now();
        let depth = lock(&self.queue)
            .values()
            .filter(|due| **due <= now)
            .count();
        self.metrics
            .depth
            .get_or_create(&self.queue_labels())
            .set(clamp_i64(depth as u64));
        if self.opts.process_metrics {
            if let Some(rss) = super::sysinfo::resident_bytes() {
                self.metrics.resident_memory.set(clamp_i64(rss));
            }
            self.metrics.tasks.set(clamp_i64(alive_tasks()));
        }
        self.rest.refresh();
        let mut out = String::new();
        // Encoding into a String cannot fail (fmt::Write for String is infallible).
        let _ = prometheus_client::encoding::text::encode(&mut out, &lock(&self.registry));
        out
    }
}

fn clamp_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Tokio tasks alive in the current runtime (0 outside one).
fn alive_tasks() -> u64 {
    tokio::runtime::Handle::try_current()
        .map(|h| h.metrics().num_alive_tasks() as u64)
        .unwrap_or(0)
}

/// Times one reconcile and counts it as an active worker while alive.
#[derive(Debug)]
pub struct ReconcileGuard<'a> {
    ctx: &'a VariantCtx,
    start: Instant,
}

impl Drop for ReconcileGuard<'_> {
    fn drop(&mut self) {
        let labels = self.ctx.controller_labels();
        self.ctx
            .metrics
            .reconcile_time
            .get_or_create(&labels)
            .observe(self.start.elapsed().as_secs_f64());
        self.ctx.metrics.active_workers.get_or_create(&labels).dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requeue_after_reads_kube_runtimes_action() {
        // Pins the Debug format this relies on: a kube upgrade that changes it fails here.
        assert_eq!(requeue_after(&Action::await_change()), None);
        assert_eq!(
            requeue_after(&Action::requeue(Duration::from_secs(1))),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            requeue_after(&Action::requeue(Duration::from_millis(1500))),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            requeue_after(&Action::requeue(Duration::from_millis(20))),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            requeue_after(&Action::requeue(Duration::from_secs(300))),
            Some(Duration::from_secs(300))
        );
    }

    #[test]
    fn error_backoff_is_controller_runtimes_exponential() {
        assert_eq!(error_backoff(1), Duration::from_millis(5));
        assert_eq!(error_backoff(2), Duration::from_millis(10));
        assert_eq!(error_backoff(5), Duration::from_millis(80));
        assert_eq!(error_backoff(40), Duration::from_secs(60));
    }
}
