//! The per-file model: what the detectors need to know about one file, as plain data (no syntax
//! tree), so that files are parsed in parallel and the crate-level pass only joins small summaries.

use crate::finding::Span;

mod api;
mod clients;
mod controller;
mod metrics;
mod phase;
mod value;
pub use api::*;
pub use clients::*;
pub use controller::*;
pub use metrics::*;
pub use phase::*;
pub use value::*;

/// The receiver of a call on a type parameter, in a call's name (`<generic>::reconcile_record`): a trait method
/// that every impl of the crate may answer.
pub const GENERIC: &str = "<generic>";

/// The language a file is written in: which front end made its model, and in whose terms a finding's advice
/// is written.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// kube-rs / kube-runtime.
    #[default]
    Rust,
    /// controller-runtime / client-go.
    Go,
}

/// What scan learned from one file.
#[derive(Debug, Default, Clone)]
pub struct FileModel {
    pub path: String,
    pub lang: Lang,
    /// A dependency's file (see `scan::deps`): its functions can be called, never run as a reconcile, and
    /// nothing is reported in it.
    pub library: bool,
    pub crds: Vec<CrdDecl>,
    /// `const NAME: Duration|u64 = …` evaluated to seconds, for requeues in other files.
    pub consts: Vec<(String, f64)>,
    pub fns: Vec<FnModel>,
    pub controllers: Vec<ControllerModel>,
    /// `.run(..)` on a Controller a method takes from `self` (`self.controller.run(..)`, or after
    /// `let Self { controller, .. } = self`): where a Controller stored in the type is started.
    pub self_runs: Vec<SelfRun>,
    /// `watcher(..)` streams of kube-runtime and what happens to each on its way.
    pub watcher_streams: Vec<WatcherStream>,
    /// Values handed to metric labels.
    pub metric_label_values: Vec<LabelValue>,
    /// Metrics some of whose series this file deletes (`DeleteLabelValues`, `remove_label_values`), by name.
    pub dropped_series: Vec<String>,
    /// `loop`/`while` bodies that sleep (or wait on an interval tick), and the API calls in them.
    pub sleeping_loops: Vec<SleepingLoop>,
    /// Method sets declared by name (a Go `interface`): a call through one may run any type's method that has
    /// them all.
    pub interfaces: Vec<InterfaceDecl>,
    /// Struct types that embed another package's type (`type EKSClient struct{ *eks.Client }`): the embedded
    /// type's methods are theirs too, unseen, so they may implement an interface whose other methods they do not
    /// declare.
    pub embedding_types: Vec<String>,
    /// Struct fields with the type each is declared with (`tgbManager TargetGroupBindingManager`), for the
    /// methods called on them (see [`Callee::OnType`]).
    pub field_types: Vec<FieldType>,
    /// Method values stored in a field of function type (`c.syncHandler = c.sync`, `syncHandler: c.sync`): a
    /// call of the field (`c.syncHandler(key)`) runs the method.
    pub func_fields: Vec<(String, Callee)>,
    /// A Go file's package by its import path (`sigs.k8s.io/kueue/pkg/workload`), when its module's `go.mod` was
    /// read: what a call from another package names it by.
    pub package: Option<String>,
    /// What managers' clients cache, where a function says so (Go): a `client.CacheOptions{DisableFor: ..}`, or
    /// a manager built with options that leave the client's out (`ctrl.NewManager(cfg, ctrl.Options{..})` with no
    /// `Client:`), whose client caches every kind.
    pub caches: Vec<CacheSite>,
}

/// A struct's field and its declared type (the pointee of a pointer, the element of a slice or map).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldType {
    pub owner: String,
    pub field: String,
    pub ty: TypeRef,
}

/// `type Exposer interface { Expose(..) error; Cleanup(..) }`: its name and its methods' names.
#[derive(Debug, Clone, PartialEq)]
pub struct InterfaceDecl {
    pub name: String,
    pub methods: Vec<String>,
    /// Each method's signature (see `FnModel::signature`), in the order of `methods`: an implementation's is the
    /// same.
    pub signatures: Vec<String>,
}

/// One `watcher(api, cfg)` stream.
#[derive(Debug, Clone)]
pub struct WatcherStream {
    pub span: Span,
    pub in_fn: String,
    /// `.default_backoff()` / `.backoff(..)` is applied to it (or to the binding it goes into).
    pub backed_off: bool,
    /// It goes into a `Controller` (`for_stream`, `watches_stream`, `owns_stream`), which backs off itself.
    pub to_controller: bool,
    /// It is polled here: `.next()`, `try_next`, `for_each`, `collect`, …
    pub consumed: bool,
}

/// A loop whose body sleeps.
#[derive(Debug, Clone)]
pub struct SleepingLoop {
    pub span: Span,
    pub in_fn: String,
    /// The body reads from the API server (get/list on an `Api`).
    pub reads: bool,
    /// The body writes to the API server.
    pub writes: bool,
    /// What the body names that tells API errors apart (see [`tells_conflict`]).
    pub error_signs: Vec<ErrorSign>,
}

/// One field of a struct literal: `replicas: Some(app.spec.replicas)` in a `DeploymentSpec { .. }`.
#[derive(Debug, Clone)]
pub struct FieldInit {
    /// The literal's type, last path segment: `DeploymentSpec`.
    pub ty: String,
    pub field: String,
    /// The value as written, compacted and cut to 120 characters.
    pub value: String,
    pub span: Span,
}

/// A place plus the text the message names.
#[derive(Debug, Clone)]
pub struct Site {
    pub span: Span,
    pub what: String,
    /// Name of the function the site is in.
    pub in_fn: String,
}

/// A `#[derive(CustomResource)]` type.
#[derive(Debug, Clone)]
pub struct CrdDecl {
    /// The kind (`#[kube(kind = "Widget")]`), which is the generated type's name.
    pub kind: String,
    pub has_status: bool,
    pub span: Span,
}

/// One function or method.
#[derive(Debug, Default, Clone)]
pub struct FnModel {
    pub name: String,
    pub self_ty: Option<String>,
    pub is_async: bool,
    /// Its name.
    pub span: Span,
    /// The line its body ends on (`span` is where its name is): what a place inside it lies between.
    pub last_line: usize,
    /// The `K` of a first parameter `Arc<K>`, `&K` or `K` when the function looks like a reconcile.
    pub object_kind: Option<String>,
    /// The type parameters it is generic over, its own first, in order, then its impl's: `K` of
    /// `fn run<K: Resource>(..)`. A kind named by one of them is whatever the callers instantiate it with.
    pub generics: Vec<String>,
    /// Parameter names by position (`self` not counted; empty for a pattern).
    pub params: Vec<String>,
    /// A Go function's signature as its types spell it without package qualifiers (`context.Context,string->
    /// *WorkflowTemplate,error`): what an interface's method must match. Empty for Rust.
    pub signature: String,
    /// Returns an `Api<K>` (`fn process_api(&self, ns: &str) -> Api<Process>`): `Some(kind)`, the kind when the
    /// type says it.
    pub returns_api: Option<Option<String>>,
    /// Returns `Action`, `Result<Action, _>` or `ReconcilerAction`.
    pub returns_action: bool,
    /// Has a `&E` parameter besides the object: the shape of an error_policy.
    pub has_error_ref_param: bool,
    /// Calls of functions and methods that may be the crate's own or a dependency's (not kube's API, see
    /// `api_calls`), in the order written, each with where in the function it is made.
    pub calls: Vec<Call>,
    /// `match x { A::B => .., _ => f(..) }`: what is left of an enum after the arms before it, handed to `f`.
    pub dispatches: Vec<Dispatch>,
    /// Fields set in struct literals of Kubernetes spec and reference types (`DeploymentSpec { replicas: .. }`,
    /// `CrossVersionObjectReference { kind: .. }`): what the objects this function builds say.
    pub spec_fields: Vec<FieldInit>,
    pub api_calls: Vec<ApiCall>,
    /// Calls that hand a kube `Api` to a function (see [`ApiArgCall`]).
    pub api_arg_calls: Vec<ApiArgCall>,
    pub requeues: Vec<Requeue>,
    /// Every value returned (tail and `return`) when each is a requeue; `None` entries mean "something else".
    pub returns: Vec<Option<Requeue>>,
    /// A std lock guard held across a later `.await` in the same block.
    pub guards_across_await: Vec<Site>,
    /// Every call by its resolved path (`std::thread::sleep`) or, for a method, its name, with where it is made:
    /// what rules that know other libraries' behaviour judge (CA305's blocking calls).
    pub resolved_calls: Vec<ResolvedCall>,
    pub volatile_writes: Vec<VolatileWrite>,
    /// Parameters (by position, `self` not counted) whose value reaches the body of a write, unguarded.
    pub param_writes: Vec<(usize, ApiCall)>,
    /// Volatile values handed to a call as an argument: where a helper's `param_writes` may carry them.
    pub volatile_args: Vec<VolatileArg>,
    /// Parameters handed on, unguarded, to another call: where the callee's `param_writes` make them written here.
    pub param_passes: Vec<ParamPass>,
    /// Returns text (`String`, `&str`, `Cow<str>`) from one expression: that expression
    /// (`format!("{self:?}").to_lowercase()`).
    pub returned_text: Option<TextExpr>,
    /// Returns a `Duration` or `Option<Duration>`: what each return is (see [`DurationReturn`]).
    pub duration_returns: Vec<DurationReturn>,
    /// Every call returns a value built from a volatile source (`fn condition(..) -> Condition` stamping
    /// `Utc::now()`), whatever the branch.
    pub returns_volatile: Option<VolatileReturn>,
    /// What the function names that tells API errors apart (`code == 409`, `is_conflict()`, `"Conflict"`); see
    /// [`tells_conflict`].
    pub error_signs: Vec<ErrorSign>,
    /// The lines where it tests an error for a 409 (`apierrors.IsConflict(err)`, Go): a test a few lines
    /// below a call is of that call's error.
    pub conflict_tests: Vec<u32>,
    /// The function clears `resource_version` (an unconditional update, no 409 possible).
    pub clears_resource_version: bool,
    /// `finalizer(&api, …)` calls: writes the kind's metadata.
    pub uses_finalizer: bool,
    /// Phase or state fields it sets to an enum variant.
    pub phase_sets: Vec<PhaseSet>,
    /// Builds a Controller or watcher from `Api::namespaced(_, p)` where `p` is a parameter.
    pub builds_namespaced_controller: Option<Site>,
    /// `for` loops whose body spawns tasks or collects futures.
    pub spawning_loops: Vec<SpawningLoop>,
    /// Takes items off a client-go workqueue and marks them done (`key, quit := c.queue.Get()` …
    /// `c.queue.Done(key)`): a worker, whose calls run for each queued object as a reconcile's do.
    pub works_queue: bool,
    /// Client values it stores in struct fields, hands to the module's functions, and returns (see
    /// [`ClientOrigin`]).
    pub client_stores: Vec<ClientStore>,
    pub client_args: Vec<ClientArg>,
    pub returns_client: Option<ClientOrigin>,
    /// Functions handed to a call as an argument (`RunWorker(ctx, q, c.syncHandler)`, or a parameter passed on:
    /// `processNextWorkItem(ctx, q, syncHandler)`): the function called, the argument's position, the method
    /// value or parameter name. A call of that parameter in the callee runs it.
    pub func_args: Vec<(Callee, usize, Callee)>,
}

/// A call of a function or method, before the crate join resolves it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub callee: Callee,
    /// Where it is made, in the file of the function it is in: a rule that reports a call of the crate's own
    /// function (a helper that waits) names this line.
    pub at: Pos,
    /// The types a turbofish names, by last path segment: `ARecord` of `run::<ARecord>(..)`.
    pub type_args: Vec<String>,
    pub ctx: CallCtx,
    /// What each argument's text is made of, where the front end reads it (Go); empty otherwise. A callee's
    /// [`TextSource::Param`] is judged by it.
    pub args: Vec<TextExpr>,
}

/// Which path through its function a call is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallPath {
    /// Runs whenever the function does (on its branches, when they are taken).
    #[default]
    Routine,
    /// On an error path (inside `Err(..)`, a `map_err` closure, an `Err` arm, an arm that logs an error and
    /// fails): what only it reaches runs when something failed, not on every reconcile.
    Error,
    /// On the deletion path (a finalizer's `Cleanup` arm, a branch taken because `deletion_timestamp` is set):
    /// once per deletion.
    Deletion,
}

/// A call as the front end resolved it (see [`FnModel::resolved_calls`]).
#[derive(Debug, Clone)]
pub struct ResolvedCall {
    /// A function by its full path as imported (`std::fs::read_to_string`), or a method by name.
    pub callee: Callee,
    /// Where, in the file of the function it is in (every call of a file is recorded: no file name each).
    pub at: Pos,
    /// Inside `spawn_blocking`/`block_in_place`: off the async runtime's worker threads.
    pub off_runtime: bool,
    /// A call handed a closure that writes to the API server (`wait.PollUntilContextCancel(ctx, d, true,
    /// func(..) { get; update })`): what it repeats is the write, until it lands, not a wait for something else.
    pub repeats_write: bool,
    /// Handed a poll condition that never asks to be tried again (see [`CallCtx::never_retries`]).
    pub never_retries: bool,
    /// Its result is kept for later rather than waited on where it is (`tt := time.After(timeout)`, received in
    /// a `select` further on): the function's wait when it has no other.
    pub kept: bool,
}

/// A place in a file whose name is known from elsewhere (the function's [`FnModel::span`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

impl Pos {
    /// The same place as a [`Span`] of `file`.
    pub fn in_file(self, file: &str) -> Span {
        Span {
            file: file.to_string(),
            line: self.line as usize,
            column: self.column as usize,
            end_line: self.end_line as usize,
            end_column: self.end_column as usize,
        }
    }
}

/// Where a call is made, as data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallCtx {
    pub path: CallPath,
    /// Inside a `loop`/`while` body: called again on the next round.
    pub in_loop: bool,
    /// On a branch arm that goes on to change state (see [`ApiCall::then_writes_on_branch`]): a creation or
    /// transition step, which runs until its write lands rather than on every pass.
    pub transition: bool,
    /// The variants of the innermost enum match arm it is in (see `Requeue::variants`).
    pub variants: Vec<String>,
    /// The variants of every match arm on an enum it is in, within its function, as `Type::Variant` (through
    /// `Some(..)`; `None` beside one enum's variants as that enum's `None`): the phase the call runs in (see
    /// [`leaves_phase`]).
    pub phase_arm: Vec<String>,
    /// Handed a poll condition (`func() (bool, error)`) none of whose returns asks again (`false, nil`): the
    /// helper (`retryutil.Retry`, `wait.PollUntilContextTimeout`) ends after its first try, never waiting.
    pub never_retries: bool,
    /// Made by a `go` statement the function does not join (`go h.scaleLoop(so)`): off the worker.
    pub on_goroutine: bool,
    /// Made on a timer (a loop over a ticker, a function `wait.Until` runs): its callee runs every period,
    /// whatever changed, as a reconcile runs on every event.
    pub periodic: bool,
    /// Its result goes straight into another call (`c.AddFunc(spec, a.tick(..))`): a closure returned runs there.
    pub handed_on: bool,
    /// Made inside the function a conflict retry runs (`retry.RetryOnConflict(b, func() error { .. })`): a 409
    /// its callee returns is retried with a fresh read.
    pub in_conflict_retry: bool,
}

/// A catch-all match arm that hands the rest to a function: `_ => super::reconcile_apply(obj, ctx).await`.
#[derive(Debug, Clone)]
pub struct Dispatch {
    /// The function called.
    pub callee: Callee,
    /// The variants the arms before it take (no guard), by last path segment: `RebuildingReplicas`.
    pub handled: Vec<String>,
}

/// A `for` loop whose body spawns tasks or collects futures (`spawn(..)`, `.push(..)`, `JoinSet`, `join_all`).
#[derive(Debug, Clone)]
pub struct SpawningLoop {
    /// The loop's pattern variables and what it iterates, as written: `ns namespaces.iter()`.
    pub iterates: String,
    pub loop_vars: Vec<String>,
    /// An `Api::namespaced(_, v)` in the body takes its namespace from a loop variable.
    pub namespaced_api_from_loop_var: bool,
    /// Where the body builds a Controller or watcher, if it does.
    pub builds_controller: Option<Span>,
    /// Calls in the body that pass a loop variable: `run_tenant(client.clone(), ns)`.
    pub calls_with_loop_var: Vec<(String, Span)>,
}

/// A call that passes a kube `Api` to a function or method: `list::default(&pools)`. Where the function is a
/// dependency's thin wrapper of one API call, the crate join reads it as that call, made here.
#[derive(Debug, Clone)]
pub struct ApiArgCall {
    /// The function or method called (`x.apply(&api, ..)` is resolved among methods).
    pub callee: Callee,
    /// An argument is a kube `Api` (not only a module-qualified call that may build one).
    pub passes_api: bool,
    /// Where and how it is called, with the `Api`'s kind; which method it makes is known only once the crate
    /// join has read the function called (see [`ApiCall::with_method`]).
    pub call: ApiCall<()>,
}

impl FnModel {
    /// Tells 409 Conflict apart somewhere in its body.
    pub fn handles_conflict(&self) -> bool {
        tells_conflict(&self.error_signs)
    }
}

/// `Action::requeue(d)` or `ReconcilerAction { requeue_after: Some(d) }`.
#[derive(Debug, Clone, Default)]
pub struct Requeue {
    pub span: Span,
    /// Seconds when the duration is a constant; `None` when computed or jittered.
    pub secs: Option<f64>,
    /// The duration when this file alone cannot evaluate it (it may name a const of another file of the crate,
    /// or be capped or chosen at run time): the crate join evaluates it again. `None` when jittered.
    pub duration: Option<Value>,
    /// Inside an `if`/`match` branch rather than unconditional.
    pub conditional: bool,
    /// On an error path: a `map_err`/`or_else`/`unwrap_or_else` closure, an `Err(..)` match arm, an
    /// `if let Err(..)` branch, or an `Err(..)` inside one of those. Error-retry policy, not polling.
    pub on_error: bool,
    /// Returned inside `Err(..)`: with `on_error` an error's retry; without it, how a function returning
    /// `Result<_, Action>` says "not yet" on a branch that waits on state.
    pub in_err_value: bool,
    /// Right after this reconcile changed something: a write earlier in the same block, or a branch taken because
    /// something was written or changed (`if ensure_secret(..)? {…}`, `if require_status_update {…}`). A one-shot
    /// follow-up, not a timer on an unchanged object.
    pub after_change: bool,
    /// Right after a write of any kind earlier in the same block (an apply, a patch, a call named like one).
    pub after_write: bool,
    /// The variants of the innermost enum match arm it is in (`Phase::Quiescing => ..`), by last path segment.
    pub variants: Vec<String>,
    /// What a call of a function returns (`Ok(requeue::short_retry())`): the crate join reads the duration from
    /// that function's returns.
    pub via: Option<Callee>,
    /// The arguments of that call: `SHORT_RETRY_SECONDS` for `after_secs(SHORT_RETRY_SECONDS)`.
    pub via_args: Vec<Value>,
    pub text: String,
}

/// A volatile value (timestamp, nonce) that reaches the body of a write, unguarded.
#[derive(Debug, Clone)]
pub struct VolatileWrite {
    /// Where the volatile value is produced.
    pub span: Span,
    /// The producing expression: `Utc::now()`.
    pub source: String,
    /// The write it reaches.
    pub write: ApiCall,
    /// The annotation or field key it is written under, when visible.
    pub key: Option<String>,
    /// The value is what a call of this function returned, which the file cannot see into: volatile only if the
    /// crate join finds that the function returns a volatile value (see `FnModel::returns_volatile`).
    pub via: Option<String>,
}

/// One return of a function that returns a `Duration` or `Option<Duration>`.
#[derive(Debug, Clone, PartialEq)]
pub enum DurationReturn {
    /// A constant, in seconds (`Some(..)` of one too).
    Secs(f64),
    /// `None`.
    Nothing,
    /// Computed at run time, or an expression the file cannot evaluate.
    Unknown,
}

/// What a function that returns a volatile value stamps into it.
#[derive(Debug, Clone)]
pub struct VolatileReturn {
    /// Where the volatile source is called.
    pub span: Span,
    /// The producing expression: `Utc::now()`.
    pub source: String,
    /// Takes no parameters: the function is a clock (`fn now_rfc3339() -> String`), so what a caller writes is its
    /// own fresh value, not the function's.
    pub clock: bool,
}

/// A parameter handed on to a call: `merge_status(api, name, &status)` where `status` is parameter 2.
#[derive(Debug, Clone)]
pub struct ParamPass {
    /// The parameter's position (`self` not counted).
    pub param: usize,
    /// The called function or method's name.
    pub callee: String,
    /// The argument's position (the receiver of a method call not counted).
    pub index: usize,
}

/// A volatile value passed as an argument: `update_status(&api, &name, status)` where `status` holds `Utc::now()`.
#[derive(Debug, Clone)]
pub struct VolatileArg {
    /// The called function or method's name.
    pub callee: String,
    /// The argument's position (the receiver of a method call not counted).
    pub index: usize,
    /// Where the volatile value is produced.
    pub span: Span,
    /// The producing expression: `Utc::now()`.
    pub source: String,
    pub key: Option<String>,
    /// As `VolatileWrite::via`.
    pub via: Option<String>,
}
