//! The bench's controllers: real kube-rs `Controller`s for the Widget CRD, in pairs that differ in exactly one
//! anti-pattern, all doing the same simulated work. Each file that shows a rule is named by it
//! (`ca202_….rs`) and is a copy of its good twin (`good.rs`, `shared.rs` for CA401) that differs only in
//! hunks it marks, with `//~ CODE` where scan must fire and `// twin:` where a difference is deliberate
//! (`tests/bench_variants_scan.rs` checks both, and that the good ones raise nothing).

pub mod ca101_status_written_through_main_resource;
pub mod ca201_reconcile_without_generation_predicate;
pub mod ca202_volatile_value_written_every_reconcile;
pub mod ca203_polling_requeue;
pub mod ca206_field_ownership_fight;
pub mod ca301_replace_with_conflict_retry;
pub mod ca302_unbounded_reconcile_concurrency;
pub mod ca303_uncached_read_in_reconcile;
pub mod ca401_controller_per_tenant;
pub mod ca402_unbounded_metric_label;
pub mod good;
pub mod good_one_owner;
pub mod shared;

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

/// Which controller code a variant runs (one file each, see [`Code::file`]).
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
    GoodOneOwner,
    BadFight,
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
        Code::GoodUpdate => ca301_replace_with_conflict_retry::run(first, ctx).await,
        Code::BadNoPredicate => ca201_reconcile_without_generation_predicate::run(first, ctx).await,
        Code::BadAnnotationLoop => {
            ca202_volatile_value_written_every_reconcile::run(first, ctx).await
        }
        Code::BadStatusOnMain => ca101_status_written_through_main_resource::run(first, ctx).await,
        Code::BadPoll => ca203_polling_requeue::run(first, ctx).await,
        Code::BadUncached => ca303_uncached_read_in_reconcile::run(first, ctx).await,
        Code::Unbounded => ca302_unbounded_reconcile_concurrency::run(first, ctx).await,
        Code::PerTenant => ca401_controller_per_tenant::run(namespaces, ctx).await,
        Code::Shared => shared::run(ctx).await,
        Code::BadCardinality => ca402_unbounded_metric_label::run(first, ctx).await,
        Code::GoodOneOwner => good_one_owner::run(first, ctx).await,
        Code::BadFight => ca206_field_ownership_fight::run(first, ctx).await,
    }
}

impl Code {
    /// The file under `src/bench/variants/` that holds the code, named by the rule it shows (tests check
    /// that the name's code is the variant's rule and that the file exists).
    pub const fn file(self) -> &'static str {
        match self {
            Code::Good => "good.rs",
            Code::Shared => "shared.rs",
            Code::BadStatusOnMain => "ca101_status_written_through_main_resource.rs",
            Code::BadNoPredicate => "ca201_reconcile_without_generation_predicate.rs",
            Code::BadAnnotationLoop => "ca202_volatile_value_written_every_reconcile.rs",
            Code::BadPoll => "ca203_polling_requeue.rs",
            Code::GoodUpdate => "ca301_replace_with_conflict_retry.rs",
            Code::Unbounded => "ca302_unbounded_reconcile_concurrency.rs",
            Code::BadUncached => "ca303_uncached_read_in_reconcile.rs",
            Code::PerTenant => "ca401_controller_per_tenant.rs",
            Code::BadCardinality => "ca402_unbounded_metric_label.rs",
            Code::GoodOneOwner => "good_one_owner.rs",
            Code::BadFight => "ca206_field_ownership_fight.rs",
        }
    }
}
