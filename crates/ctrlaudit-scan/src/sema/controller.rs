//! Controllers as a front end found them built: the builder chain's kind, streams and concurrency, and the
//! reconcile it runs.

use super::Requeue;
use crate::finding::Span;

/// A `Controller` built in a function, with what its builder chain says.
#[derive(Debug, Clone)]
pub struct ControllerModel {
    pub span: Span,
    pub in_fn: String,
    /// The reconciled kind, when the `Api<K>` or turbofish says it.
    pub kind: Option<String>,
    /// The steps of the stream it is built on (`Controller::for_stream(watcher(..).predicate_filter(..))`,
    /// through a binding or a builder function): which of them filter events is the rules' to say.
    pub stream: Vec<StreamStep>,
    pub config: ConcurrencyConfig,
    pub run: Option<RunCall>,
    /// Handed to the constructor of the type whose method builds it (`Self::new(.., controller, ..)`): that
    /// type's `self_runs` start it.
    pub stored_in: Option<String>,
}

/// A method applied on the way to a Controller's stream, with the names its arguments use:
/// `.predicate_filter(predicates::generation)` is `predicate_filter` with `predicates`, `generation`.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamStep {
    pub method: String,
    pub arg_names: Vec<String>,
}

/// A Controller started from a value of a type's own (see `FileModel::self_runs`).
#[derive(Debug, Clone)]
pub struct SelfRun {
    pub self_ty: String,
    pub in_fn: String,
    pub run: RunCall,
    /// What a `.with_config(..)` in the same chain sets.
    pub config: ConcurrencyConfig,
}

#[derive(Debug, Clone)]
pub struct RunCall {
    pub span: Span,
    pub reconcile: Option<String>,
    pub error_policy: Option<String>,
    /// The returns of an error_policy written inline as a closure.
    pub inline_policy: Vec<Option<Requeue>>,
    /// Go: the constructor whose result is the reconciler, when its type is not named where the Controller is
    /// built (`r := controller.NewInstanceReconciler(..)`, `Complete(r)`): the join takes the type from its
    /// signature (see `Unit::reconcile_of`).
    pub reconciler_from: Option<crate::sema::Callee>,
    /// Go: the reconciler is run as a singleton (`singleton.AsReconciler(p)` of awslabs/operatorpkg, Karpenter's
    /// provisioner): one synthetic object, requeued by itself, so a wait in it holds up no other object.
    pub singleton: bool,
}

/// What `.with_config(..)` sets, as far as scan can tell.
#[derive(Debug, Clone, PartialEq)]
pub enum ConcurrencyConfig {
    /// No `with_config` at all.
    Absent,
    /// A config without `.concurrency(n)`: the default 0.
    Default,
    /// `.concurrency(n)` with a constant.
    Limit(u64),
    /// Computed elsewhere: scan cannot judge.
    Unknown,
}
