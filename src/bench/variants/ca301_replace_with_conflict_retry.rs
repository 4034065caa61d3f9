//! `good-update` (5 workers) and `good-update-single` (1 worker): `good`, but status by `replace_status` (a PUT
//! carrying the resourceVersion the controller read) with client-go's `RetryOnConflict(DefaultRetry, …)`
//! around it: on 409 get a fresh copy and try again, up to 5 attempts. Correct, but every write
//! that races another writer costs a 409, a GET and a second PUT (the seed's experiment 3; CA301's pair).

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::{WatchStreamExt, predicates, reflector, watcher};

use super::{Error, desired_status, error_policy, is_current};
use crate::bench::instrument::VariantCtx;
use crate::bench::widget::Widget;

// twin: client-go's `retry.DefaultRetry`: 5 attempts.
const ATTEMPTS: u32 = 5;

async fn reconcile(widget: Arc<Widget>, ctx: Arc<VariantCtx>) -> Result<Action, Error> {
    let _timer = ctx.reconcile_started(&widget);
    ctx.simulated_work().await;
    if is_current(&widget) {
        return Ok(Action::await_change());
    }
    let ns = widget.namespace().ok_or(Error::NoNamespace)?;
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    // twin: replace_status inside client-go's RetryOnConflict where good sends a merge patch
    let name = widget.name_any();
    let mut current = (*widget).clone();
    let mut attempt = 1;
    loop {
        current.status = Some(desired_status(&current));
        match widgets
            .replace_status(&name, &PostParams::default(), &current)
            .await
        {
            Ok(_) => return Ok(Action::await_change()),
            Err(kube::Error::Api(status)) if status.is_conflict() && attempt < ATTEMPTS => {
                ctx.conflict_retry();
                attempt += 1;
                // The retry reads the object again, as RetryOnConflict's closure does with r.Get. client-go
                // also waits 10 ms between attempts; this GET's round trip takes about as long.
                current = widgets.get(&name).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
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
