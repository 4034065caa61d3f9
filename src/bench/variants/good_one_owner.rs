//! `good-one-owner` (CA206's good side): two controllers on the same Widgets, each the only owner of what it
//! writes. A "scaler" owns `spec.count` (server-side apply with its own field manager, like an autoscaler owns
//! a Deployment's replicas); the operator reconciles and writes status only, leaving `spec.count` to its owner.

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

/// The `spec.count` the scaler wants.
const SCALED_COUNT: i64 = 3;

/// The scaler: sets `spec.count` when it differs from what it wants, and owns it.
async fn scale(widget: Arc<Widget>, ctx: Arc<VariantCtx>) -> Result<Action, Error> {
    if widget.spec.count == SCALED_COUNT {
        return Ok(Action::await_change());
    }
    let ns = widget.namespace().ok_or(Error::NoNamespace)?;
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    let owned = json!({
        "apiVersion": "bench.ctrlaudit.io/v1alpha1",
        "kind": "Widget",
        "spec": { "count": SCALED_COUNT },
    });
    let manager = format!("{}/scaler", ctx.opts.controller);
    widgets
        .patch(
            &widget.name_any(),
            &PatchParams::apply(&manager).force(),
            &Patch::Apply(&owned),
        )
        .await?;
    Ok(Action::await_change())
}

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
        .patch_status(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    Ok(Action::await_change())
}

/// Runs the operator and the scaler for `namespace` until the harness stops them.
pub async fn run(namespace: String, ctx: Arc<VariantCtx>) -> anyhow::Result<()> {
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &namespace);
    let (reader, writer) = reflector::store();
    let queue = ctx.clone();
    let stream = watcher(widgets.clone(), ctx.watcher_config())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default())
        .inspect_ok(move |w| queue.triggered(w));
    let operator = Controller::for_stream(stream, reader)
        .with_config(controller::Config::default().concurrency(ctx.opts.workers))
        .graceful_shutdown_on(ctx.stopped())
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|item| {
            ctx.finished(&item);
            futures::future::ready(())
        });
    let (scaler_reader, scaler_writer) = reflector::store();
    let scaler_stream = watcher(widgets, ctx.watcher_config())
        .default_backoff()
        .reflect(scaler_writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    let scaler = Controller::for_stream(scaler_stream, scaler_reader)
        .with_config(controller::Config::default().concurrency(ctx.opts.workers))
        .graceful_shutdown_on(ctx.stopped())
        .run(scale, error_policy, ctx.clone())
        .for_each(|_| futures::future::ready(()));
    futures::join!(operator, scaler);
    Ok(())
}
