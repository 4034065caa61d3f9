//! `per-tenant` (CA401): one Controller per tenant namespace, each spawned, as kcp ran its garbage collector
//! and quota controller once per workspace. Every tenant costs its own watch connection, cache, scheduler and
//! tasks; compare with `shared`, which serves the same tenants with one.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::{WatchStreamExt, predicates, reflector, watcher};
use serde_json::json;
use tokio::task::JoinSet;

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
        .patch_status(
            &widget.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    Ok(Action::await_change())
}

/// Runs one controller per namespace in `tenants` until the harness stops them.
pub async fn run(tenants: Vec<String>, ctx: Arc<VariantCtx>) -> anyhow::Result<()> {
    let mut controllers = JoinSet::new();
    for ns in &tenants {
        let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), ns);
        let (reader, writer) = reflector::store();
        let queue = ctx.clone();
        let stream = watcher(widgets, ctx.watcher_config()) //~ CA401
            .default_backoff()
            .reflect(writer)
            .applied_objects()
            .predicate_filter(predicates::generation, Default::default())
            .inspect_ok(move |w| queue.triggered(w));
        let results = ctx.clone();
        controllers.spawn(
            Controller::for_stream(stream, reader)
                .with_config(controller::Config::default().concurrency(ctx.opts.workers))
                .graceful_shutdown_on(ctx.stopped())
                .run(reconcile, error_policy, ctx.clone())
                .for_each(move |item| {
                    results.finished(&item);
                    futures::future::ready(())
                }),
        );
    }
    while controllers.join_next().await.is_some() {}
    Ok(())
}
