//! `bad-cardinality` (CA402): `good` plus per-object metrics, labelled with the object's namespace and name.
//! Every object adds a counter and a 40-bucket histogram (43 series) that live until the process restarts;
//! kcp's per-workspace workqueue names did the same and cost ~140,000 series at 10,000 workspaces.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::{WatchStreamExt, predicates, reflector, watcher};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use serde_json::json;
use tokio::time::Instant;

use super::{Error, desired_status, is_current};
use crate::bench::instrument::{VariantCtx, reconcile_histogram};
use crate::bench::widget::Widget;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ObjectLabels {
    namespace: String,
    name: String,
}

/// The variant's context: the common one plus the per-object families.
#[derive(Debug)]
struct Ctx {
    base: Arc<VariantCtx>,
    reconciles: Family<ObjectLabels, Counter>,
    duration: Family<ObjectLabels, Histogram, fn() -> Histogram>,
}

async fn reconcile(widget: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let started = Instant::now();
    let _timer = ctx.base.reconcile_started(&widget);
    let labels = ObjectLabels {
        namespace: widget.namespace().unwrap_or_default(), //~ CA402
        name: widget.name_any(),                           //~ CA402
    };
    ctx.reconciles.get_or_create(&labels).inc();
    ctx.base.simulated_work().await;
    if !is_current(&widget) {
        let ns = widget.namespace().ok_or(Error::NoNamespace)?;
        let widgets: Api<Widget> = Api::namespaced(ctx.base.client.clone(), &ns);
        let status = json!({ "status": desired_status(&widget) });
        widgets
            .patch_status(
                &widget.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await?;
    }
    // twin: and the reconcile's duration, per object
    ctx.duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    Ok(Action::await_change())
}

// twin: the common error_policy, on this variant's context
fn error_policy(widget: Arc<Widget>, _error: &Error, ctx: Arc<Ctx>) -> Action {
    Action::requeue(ctx.base.backoff(&widget))
}

/// Runs the controller for `namespace` until the harness stops it.
pub async fn run(namespace: String, ctx: Arc<VariantCtx>) -> anyhow::Result<()> {
    // twin: the per-object families, registered on the variant's /metrics beside the common ones
    let labelled = Arc::new(Ctx {
        base: ctx.clone(),
        reconciles: Family::default(),
        duration: Family::new_with_constructor(reconcile_histogram as fn() -> Histogram),
    });
    ctx.register(
        "widget_reconciles",
        "Reconciles per Widget",
        labelled.reconciles.clone(),
    );
    ctx.register(
        "widget_reconcile_duration_seconds",
        "Reconcile time per Widget",
        labelled.duration.clone(),
    );
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &namespace);
    let (reader, writer) = reflector::store();
    let queue = ctx.clone();
    let stream = watcher(widgets, ctx.watcher_config())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default())
        .inspect_ok(move |w| queue.triggered(w));
    Controller::for_stream(stream, reader)
        .with_config(controller::Config::default().concurrency(ctx.opts.workers))
        .graceful_shutdown_on(ctx.stopped())
        .run(reconcile, error_policy, labelled) // twin: the context with the families
        .for_each(|item| {
            ctx.finished(&item);
            futures::future::ready(())
        })
        .await;
    Ok(())
}
