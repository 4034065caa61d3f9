//! `bad-poll` (CA203): `good`, but every successful reconcile asks to run again in 1 s instead of waiting for
//! a change: each object is reconciled once a second for ever (kcp's poll-based workspace deletion, kcp#4047).

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::{WatchStreamExt, predicates, reflector, watcher};
use serde_json::json;

use super::{Error, desired_status, error_policy, is_current};
use crate::bench::instrument::VariantCtx;
use crate::bench::widget::Widget;

async fn reconcile(widget: Arc<Widget>, ctx: Arc<VariantCtx>) -> Result<Action, Error> {
    let _timer = ctx.reconcile_started(&widget);
    ctx.simulated_work().await;
    if is_current(&widget) {
        return Ok(Action::requeue(Duration::from_secs(1))); //~ CA203
    }
    let ns = widget.namespace().ok_or(Error::NoNamespace)?;
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    let status = json!({ "status": desired_status(&widget) });
    widgets
        .patch_status(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    // twin: poll: run again in 1 s, changed or not
    Ok(Action::requeue(Duration::from_secs(1))) //~ CA203
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
