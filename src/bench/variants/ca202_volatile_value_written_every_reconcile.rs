//! `bad-annotation-loop` (5 workers) and `bad-annotation-loop-single` (1 worker), CA202 with CA201: no
//! generation predicate, and a timestamp annotation written on the main resource in every reconcile. Each
//! write changes the object, the watch delivers it, and the object is reconciled again: forever. Status goes
//! through the status subresource (as in the seed's bad-fixed-status), so objects do turn Ready; the loop is
//! what never ends.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

use super::{Error, desired_status, error_policy};
use crate::bench::instrument::VariantCtx;
use crate::bench::widget::Widget;

async fn reconcile(widget: Arc<Widget>, ctx: Arc<VariantCtx>) -> Result<Action, Error> {
    let _timer = ctx.reconcile_started(&widget);
    ctx.simulated_work().await;
    // twin: no `is_current` check: every reconcile writes
    let ns = widget.namespace().ok_or(Error::NoNamespace)?;
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    let stamp = json!({
        "metadata": {
            "annotations": {
                "bench.ctrlaudit.io/last-reconciled": jiff::Timestamp::now().to_string(), //~ CA202
            }
        }
    });
    widgets
        .patch(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&stamp),
        )
        .await?;
    let status = json!({ "status": desired_status(&widget) });
    widgets
        .patch_status(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    // No resync: the window is shorter than any sensible one, and `success` keeps the result label comparable
    // with a controller-runtime reconcile that returns an empty Result.
    Ok(Action::await_change())
}

/// Runs the controller for `namespace` until the harness stops it.
pub async fn run(namespace: String, ctx: Arc<VariantCtx>) -> anyhow::Result<()> {
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &namespace);
    let (reader, writer) = reflector::store();
    let queue = ctx.clone();
    let stream = watcher(widgets, ctx.watcher_config())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        // twin: no `.predicate_filter(predicates::generation, ..)`: the annotation write triggers it again
        .inspect_ok(move |w| queue.triggered(w));
    Controller::for_stream(stream, reader) //~ CA201
        .with_config(controller::Config::default().concurrency(ctx.opts.workers))
        .graceful_shutdown_on(ctx.stopped())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|item| {
            ctx.finished(&item);
            futures::future::ready(())
        })
        .await;
    Ok(())
}
