//! `bad-status-on-main` (CA101): `good`, but the status is sent with a patch of the main resource. The Widget
//! CRD has the status subresource, so the API server answers 200 and drops `status`: nothing is ever Ready,
//! and no error says so.

use std::sync::Arc;

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
        return Ok(Action::await_change());
    }
    let ns = widget.namespace().ok_or(Error::NoNamespace)?;
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    let status = json!({ "status": desired_status(&widget) });
    widgets
        .patch(
            &widget.name_any(), //~^ CA101
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
