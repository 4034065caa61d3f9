//! The bench's controllers: real kube-rs `Controller`s for the Widget CRD, in pairs that differ in exactly one
//! anti-pattern, all doing the same simulated work. `kubectl ctrlaudit scan src/bench/variants` judges these
//! files like any other source: each bad one raises its rule (marked inline with `//~ CODE`), the good ones
//! nothing (`tests/bench_variants_scan.rs`).

pub mod bad_annotation_loop;
pub mod bad_cardinality;
pub mod bad_no_predicate;
pub mod bad_poll;
pub mod bad_status_on_main;
pub mod bad_uncached;
pub mod good;
pub mod good_update;
pub mod per_tenant;
pub mod shared;
pub mod unbounded;

use std::sync::Arc;

use kube::runtime::controller::Action;

use super::instrument::VariantCtx;
use super::widget::{Widget, WidgetStatus};

/// What a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kube api: {0}")]
    Kube(#[from] kube::Error),
    #[error("the object has no namespace")]
    NoNamespace,
}

/// Every variant's error policy: controller-runtime's per-object exponential backoff (5 ms doubling).
pub fn error_policy(widget: Arc<Widget>, _error: &Error, ctx: Arc<VariantCtx>) -> Action {
    Action::requeue(ctx.backoff(&widget))
}

/// The status every variant converges to: Ready at the object's generation.
pub fn desired_status(w: &Widget) -> WidgetStatus {
    WidgetStatus {
        phase: Some("Ready".to_string()),
        processed_count: Some(w.spec.count),
        observed_generation: w.metadata.generation,
        ..WidgetStatus::default()
    }
}

/// True when the object's status already says what [`desired_status`] would write: nothing to do.
pub fn is_current(w: &Widget) -> bool {
    w.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Ready")
            && s.processed_count == Some(w.spec.count)
            && s.observed_generation == w.metadata.generation
    })
}

/// Which controller code a variant runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Good,
    GoodUpdate,
    BadNoPredicate,
    BadAnnotationLoop,
    BadStatusOnMain,
    BadPoll,
    BadUncached,
    Unbounded,
    PerTenant,
    Shared,
    BadCardinality,
}

/// Runs `code` over `namespaces` until the context's stop signal (the tenant designs take all of them, the
/// others the first).
pub async fn run(code: Code, namespaces: Vec<String>, ctx: Arc<VariantCtx>) -> anyhow::Result<()> {
    let first = namespaces
        .first()
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("a variant needs at least one namespace"))?;
    match code {
        Code::Good => good::run(first, ctx).await,
        Code::GoodUpdate => good_update::run(first, ctx).await,
        Code::BadNoPredicate => bad_no_predicate::run(first, ctx).await,
        Code::BadAnnotationLoop => bad_annotation_loop::run(first, ctx).await,
        Code::BadStatusOnMain => bad_status_on_main::run(first, ctx).await,
        Code::BadPoll => bad_poll::run(first, ctx).await,
        Code::BadUncached => bad_uncached::run(first, ctx).await,
        Code::Unbounded => unbounded::run(first, ctx).await,
        Code::PerTenant => per_tenant::run(namespaces, ctx).await,
        Code::Shared => shared::run(ctx).await,
        Code::BadCardinality => bad_cardinality::run(first, ctx).await,
    }
}
