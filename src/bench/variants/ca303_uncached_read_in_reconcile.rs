//! `bad-uncached` (CA303): `good`, but each reconcile LISTs the namespace's Widgets to find its object instead
//! of using the one the Controller's Store handed it: a round trip and N objects serialised per reconcile.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::{WatchStreamExt, predicates, reflector, watcher};
use serde_json::json;

use super::{Error, desired_status, error_policy, is_current};
use crate::bench::instrument::VariantCtx;
use crate::bench::widget::Widget;

async fn reconcile(widget: Arc<Widget>, ctx: Arc<VariantCtx>) -> Result<Action, Error> {
    let _timer = ctx.reconcile_started(&widget);
    ctx.simulated_work().await;
    // twin: judged from the LIST below, not from the object the Store handed over
    let ns = widget.namespace().ok_or(Error::NoNamespace)?;
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    let all = widgets.list(&ListParams::default()).await?; //~ CA303
    let Some(fresh) = all
        .items
        .into_iter()
        .find(|w| w.name_any() == widget.name_any())
    else {
        // twin: deleted since it was queued: nothing to reconcile.
        return Ok(Action::await_change());
    };
    if is_current(&fresh) {
        return Ok(Action::await_change()); // twin: current by the LIST
    }
    let status = json!({ "status": desired_status(&fresh) }); // twin: the LIST's copy
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
        .predicate_filter(predicates::generation, Default::default())
        .inspect_ok(move |w| queue.triggered(w));
    Controller::for_stream(stream, reader)
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
