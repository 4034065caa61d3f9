//! Builds a [`FileModel`] from one parsed file: a single walk over the syntax tree that records
//! functions, kube API calls, controller builder chains, requeues and the local data flow the
//! detectors need (which variables hold an `Api<K>`, a timestamp, a body with `status`).

use super::imports::{EXTERNAL_ROOTS, Imports, is_kube_path};
use super::sema::*;
use crate::finding::Span;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::{HashMap, HashSet};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, FnArg, Pat, Stmt, Type};

mod api_calls;
mod blocking;
mod controllers;
mod flow;
mod loops;
pub mod lower;
mod metric_labels;
mod paths;
mod phases;
mod source_text;
mod syntax;
mod volatile;
mod walk;

use api_calls::*;
use controllers::*;
use flow::*;
use lower::compact;
use paths::Cond;
use syntax::*;
use volatile::*;

/// Converts a proc-macro2 span into a 1-based [`Span`].
pub fn to_span(file: &str, s: proc_macro2::Span) -> Span {
    to_pos(s).in_file(file)
}
/// Converts a proc-macro2 span into a 1-based [`Pos`], for facts that know their file from elsewhere.
fn to_pos(s: proc_macro2::Span) -> Pos {
    let (a, b) = (s.start(), s.end());
    let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    Pos {
        line: n(a.line),
        column: n(a.column + 1),
        end_line: n(b.line),
        end_column: n(b.column + 1),
    }
}
fn start_end(file: &str, start: proc_macro2::Span, end: proc_macro2::Span) -> Span {
    let mut s = to_span(file, start);
    let e = to_span(file, end);
    s.end_line = e.end_line;
    s.end_column = e.end_column;
    s
}
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scope {
    For,
    While,
    Loop,
    Closure,
}
#[derive(Debug, Default, Clone)]
struct Var<'ast> {
    is_api: bool,
    kind: Option<String>,
    /// The expression it was bound to, in the tree (never a copy: every `let` has one).
    init: Option<&'ast Expr>,
    /// Holds a volatile value (one the file can see), or may (what calls of other files' functions returned).
    volatile: Vec<Vol>,
    /// Derived from the function's parameter at this position (`self` not counted).
    from_param: Option<usize>,
    /// Holds that parameter's whole value, or one made from all of it (`to_value(&status)`), not one of its fields:
    /// a comparison of it compares everything the parameter carries.
    whole_param: Option<usize>,
    /// An object whose `status` was set.
    status_set: bool,
    /// Holds a Controller under construction (index into the file's controllers).
    controller: Option<usize>,
    /// Taken out of `self` (`let Self { controller, .. } = self`).
    of_self: bool,
}
/// A volatile value as the walk sees it.
#[derive(Debug, Clone)]
struct Vol {
    /// Where it is produced: the call here, or the stamp inside this file's helper.
    span: Span,
    /// The producing expression, or the called function when `via` is set.
    source: String,
    /// The annotation or field key it is stored under.
    key: Option<String>,
    /// A call of a function this file does not define: volatile only if the crate join finds it returns a
    /// volatile value.
    via: Option<String>,
}
impl Var<'_> {
    /// What a use of the variable alone carries (as [`Extractor::find_volatile`] finds it in its name): the
    /// volatile value it holds, else the candidates it may hold.
    fn held(&self) -> Vec<Vol> {
        match self.volatile.first() {
            Some(v) if v.via.is_none() => vec![v.clone()],
            _ => self.volatile.iter().take(MAX_CANDIDATES).cloned().collect(),
        }
    }

    /// Takes what a value assigned or added to it carries: a volatile value the file can see replaces mere
    /// candidates and is never replaced by them; candidates add up (`s.a = f(); s.b = g();`).
    fn hold(&mut self, found: Vec<Vol>) {
        let definite = |v: &[Vol]| v.first().is_some_and(|x| x.via.is_none());
        if definite(&found) || self.volatile.is_empty() {
            self.volatile = found;
        } else if !definite(&self.volatile) {
            for v in found {
                if self.volatile.len() < MAX_CANDIDATES
                    && !self.volatile.iter().any(|h| h.via == v.via)
                {
                    self.volatile.push(v);
                }
            }
        }
    }
}
#[derive(Debug, Default)]
struct FnCtx<'ast> {
    model: FnModel,
    /// The type parameters in scope (the function's and its impl's): `T::f(..)` on one of them is a trait
    /// method, which any impl of the crate may answer.
    generics: HashSet<String>,
    vars: HashMap<String, Var<'ast>>,
    params: HashSet<String>,
    watcher_candidates: Vec<(Span, Option<String>, String)>,
    /// The `if`/`match` arms being visited, innermost last (see `ApiCall::then_writes_on_branch`).
    arms: Vec<ArmFrame>,
    /// A `return` seen so far: what follows may not run on every call (see `PhaseSet::unconditional`).
    returned_early: bool,
    /// Returns `Result<_, Action>`: `Err` is also how it says "come back later".
    err_is_action: bool,
    /// Returns `Duration` or `Option<Duration>` (see `FnModel::duration_returns`).
    returns_duration: bool,
    /// Returns text (see `FnModel::returned_text`).
    returns_text: bool,
    /// Per `return` met so far: does its value carry a volatile value?
    returns_carry: Vec<bool>,
    /// Bindings the function matches against enum variants (`match phase { Phase::Done => .. }`).
    enum_vars: HashSet<String>,
    /// After a top-level `if <the object is in place, by an API read> { return }`: the reads since, which a
    /// write at the top level makes a creation or renewal step.
    guarded_reads: Option<Vec<usize>>,
    /// A free function (`fn` item), not a method.
    free_fn: bool,
}
/// What a block has written so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Written {
    Nothing,
    /// A write-like call: an apply, a patch, a call named like one.
    Write,
    /// A call that moves an object to a new state (see `api_calls::changes_state`).
    StateChange,
}
/// One branch arm being visited: the reads and calls seen in it that no state write has followed yet.
#[derive(Debug, Default)]
struct ArmFrame {
    /// The branch depth inside the arm: a write at this depth is unconditional within the arm.
    depth: usize,
    reads: Vec<usize>,
    /// Indices of the calls made in the arm (into `FnModel::calls`).
    calls: Vec<usize>,
    /// The arm logs an error (`error!(..)`, or a log line that says "error"): what it returns is a failure's.
    logs_error: bool,
    /// A state write happened at the arm's own depth.
    wrote: bool,
    /// The arm has deleted something so far: a recreate or clean-up step follows.
    deleted: bool,
}
/// The walk over one file.
#[derive(Debug)]
pub struct Extractor<'a, 'ast> {
    path: &'a str,
    /// The text the tree was parsed from (see [`Extractor::with_source`]).
    source: Option<&'a str>,
    /// The file's text names a volatile source (see [`volatile::names_volatile`]); true when no text is at hand.
    file_names_volatile: bool,
    imports: &'a Imports,
    aliases: &'a std::collections::BTreeMap<String, String>,
    consts: HashMap<String, f64>,
    /// Functions of this file that return a value built from a volatile call: name → (where, what).
    volatile_fns: HashMap<String, VolatileFn>,
    api_fields: HashMap<String, String>,
    /// Functions of this file that return a `Controller<K>`: name → (has predicate, config set).
    controller_builders: HashMap<String, ControllerBuilder>,
    /// Types this file declares (structs, enums, aliases): a crate's own `Controller` is not kube's.
    local_types: HashSet<String>,
    /// The type parameters of the `impl` block being walked.
    impl_generics: Vec<String>,
    pub model: FileModel,
    fns: Vec<FnCtx<'ast>>,
    scopes: Vec<Scope>,
    guards: usize,
    /// Per guard counted in `guards`: the parameter whose whole value its condition compares (see
    /// `Var::whole_param`).
    guard_params: Vec<Option<usize>>,
    branches: usize,
    /// Depth of error paths around the node being visited (see `Requeue::on_error`).
    error_path: usize,
    /// The variants of the enum match arms around the node being visited, innermost last (see
    /// `Requeue::variants`).
    variants: Vec<Vec<String>>,
    /// The enum match arms around the node being visited, innermost last: their variants as `Type::Variant`, and
    /// whether code in the arm has set the phase to another variant (see `CallCtx::phase_arm`).
    phase_arms: Vec<(Vec<String>, bool)>,
    /// How many of `error_path` are only an `Err(..)` constructor (see `Requeue::in_err_value`).
    err_values: usize,
    /// Depth of deletion paths around the node being visited (see `CallPath::Deletion`).
    deletion_path: usize,
    /// Per enclosing `if` branch, innermost last: the condition that says when it runs, if it does (see
    /// [`ApiCall::guard`]).
    conditions: Vec<Option<Cond<'ast>>>,
    /// Per enclosing block: the strongest write-like call seen in it so far (see `Requeue::after_change`).
    block_writes: Vec<Written>,
    /// Per enclosing `if`: was its branch taken because something was written or changed?
    change_branches: Vec<bool>,
    blocking_ok: usize,
    retry_closure: usize,
    propagated: HashSet<(usize, usize)>,
    awaited: HashSet<(usize, usize)>,
    seen_chains: HashSet<(usize, usize)>,
    /// The inner calls of method chains already flattened at their outermost call (by address in the tree).
    chain_inner: HashSet<usize>,
    /// The statements being visited, innermost last: their text is rendered only for a watcher
    /// stream (see `WatcherStream`), not for every statement.
    stmt_stack: Vec<&'ast Stmt>,
    /// The time this file may take (`thresholds.max_file_seconds`).
    budget: Budget,
}

/// Work on one file stops at its deadline: checked every few hundred nodes by each pass over the tree.
#[derive(Debug, Default)]
struct Budget {
    deadline: Option<std::time::Instant>,
    nodes: u32,
    spent: bool,
}

impl Budget {
    /// Counts a node; true once the deadline has passed (and from then on).
    fn spent(&mut self) -> bool {
        if !self.spent {
            self.nodes = self.nodes.wrapping_add(1);
            // The first node too, so that a spent budget stops even a small file.
            if self.nodes % 256 == 1
                && self
                    .deadline
                    .is_some_and(|d| std::time::Instant::now() >= d)
            {
                self.spent = true;
            }
        }
        self.spent
    }
}

/// The analysis of a file did not finish within its time budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

fn key(s: proc_macro2::Span) -> (usize, usize) {
    let a = s.start();
    (a.line, a.column)
}
/// The key under which a call's `?`/`.await` is remembered: where its method or function name starts.
fn call_key(e: &Expr) -> Option<(usize, usize)> {
    match e {
        Expr::MethodCall(m) => Some(key(m.method.span())),
        Expr::Call(c) => Some(key(c.func.span())),
        _ => None,
    }
}

impl<'a, 'ast> Extractor<'a, 'ast> {
    pub fn new(
        path: &'a str,
        imports: &'a Imports,
        aliases: &'a std::collections::BTreeMap<String, String>,
    ) -> Self {
        Self {
            path,
            imports,
            aliases,
            consts: HashMap::new(),
            volatile_fns: HashMap::new(),
            api_fields: HashMap::new(),
            controller_builders: HashMap::new(),
            local_types: HashSet::new(),
            impl_generics: Vec::new(),
            model: FileModel {
                path: path.to_string(),
                ..Default::default()
            },
            fns: Vec::new(),
            scopes: Vec::new(),
            guards: 0,
            guard_params: Vec::new(),
            branches: 0,
            err_values: 0,
            variants: Vec::new(),
            phase_arms: Vec::new(),
            error_path: 0,
            deletion_path: 0,
            conditions: Vec::new(),
            block_writes: Vec::new(),
            change_branches: Vec::new(),
            blocking_ok: 0,
            retry_closure: 0,
            propagated: HashSet::new(),
            awaited: HashSet::new(),
            seen_chains: HashSet::new(),
            chain_inner: HashSet::new(),
            stmt_stack: Vec::new(),
            budget: Budget::default(),
            source: None,
            file_names_volatile: true,
        }
    }

    /// The text the tree was parsed from: blocks are read from it instead of printed from the tree.
    pub fn with_source(mut self, source: &'a str) -> Self {
        self.source = Some(source);
        self
    }

    /// The compact text of a block, from the source it was parsed from when that is at hand (see
    /// [`source_text::compact_source`]), else printed from the tree.
    fn block_text(&self, b: &syn::Block) -> String {
        match self.block_source(b) {
            Some(text) => source_text::compact_source(text),
            None => compact(b),
        }
    }

    /// The source text of a block, braces included, when the text the tree was parsed from is at hand.
    fn block_source(&self, b: &syn::Block) -> Option<&'a str> {
        let range = b.brace_token.span.join().byte_range();
        self.source
            .and_then(|s| s.get(range))
            .filter(|t| t.starts_with('{') && t.ends_with('}'))
    }

    /// Stops the passes over the tree once `deadline` has passed (see [`Extractor::run_within`]).
    pub fn with_deadline(mut self, deadline: Option<std::time::Instant>) -> Self {
        self.budget.deadline = deadline;
        self
    }

    /// Runs the pre-pass (consts, CRDs, `Api<K>` fields) and the main walk.
    pub fn run(self, file: &'ast syn::File) -> FileModel {
        // Without a deadline the budget is never spent.
        self.run_within(file).unwrap_or_default()
    }

    /// [`Extractor::run`], or [`OverBudget`] when the deadline passed first: a model half built is not one.
    pub fn run_within(mut self, file: &'ast syn::File) -> Result<FileModel, OverBudget> {
        self.source = self
            .source
            .and_then(|s| s.get(source_text::parsed_from(s, file)..));
        // A file whose text names no volatile source has no function that returns one: its bodies are not
        // searched one by one.
        self.file_names_volatile = self.source.is_none_or(names_volatile);
        let mut pre = PrePass { ex: &mut self };
        pre.visit_file(file);
        // Twice more: a helper of a helper of a stamp (deeper chains are rare, and each pass walks the file). A
        // pass can find a function only if the pass before it found one: with none known, it repeats the first.
        let mut grew = !self.volatile_fns.is_empty();
        for _ in 0..2 {
            if !grew {
                break;
            }
            let before = self.volatile_fns.len();
            let mut again = VolatileFnPass {
                pre: PrePass { ex: &mut self },
            };
            again.visit_file(file);
            grew = self.volatile_fns.len() != before;
        }
        self.model.consts = self.consts.iter().map(|(k, v)| (k.clone(), *v)).collect();
        self.visit_file(file);
        if self.budget.spent {
            return Err(OverBudget);
        }
        Ok(self.model)
    }

    fn span(&self, s: proc_macro2::Span) -> Span {
        to_span(self.path, s)
    }

    fn fn_name(&self) -> String {
        self.fns
            .last()
            .map(|f| f.model.name.clone())
            .unwrap_or_else(|| "<top level>".into())
    }

    fn var(&self, name: &str) -> Option<&Var<'ast>> {
        self.fns.last()?.vars.get(name)
    }

    fn current_scope(&self) -> Option<Scope> {
        self.scopes.last().copied()
    }

    fn enter_fn(
        &mut self,
        name: String,
        self_ty: Option<String>,
        sig: &syn::Signature,
        span: proc_macro2::Span,
    ) {
        let mut ctx = FnCtx::default();
        ctx.model.generics = sig
            .generics
            .type_params()
            .map(|t| t.ident.to_string())
            .chain(self.impl_generics.iter().cloned())
            .collect();
        ctx.generics = ctx.model.generics.iter().cloned().collect();
        let ret = compact(&sig.output);
        ctx.model.returns_volatile = self.volatile_fns.get(&name).map(|v| VolatileReturn {
            span: v.span.clone(),
            source: v.source.clone(),
            clock: v.clock,
        });
        ctx.model.name = name;
        ctx.model.self_ty = self_ty;
        ctx.model.is_async = sig.asyncness.is_some();
        ctx.model.span = self.span(span);
        ctx.model.returns_action = ret.contains("Action");
        ctx.err_is_action = ret.contains(",Action>");
        ctx.returns_duration = ret.ends_with("Duration") || ret.ends_with("Duration>");
        ctx.returns_text = ret == "->String" || ret.ends_with("str") || ret.contains("Cow<");
        if let syn::ReturnType::Type(_, ty) = &sig.output {
            ctx.model.returns_api = api_kind_of_type(ty);
        }
        let generics: HashSet<String> = sig
            .generics
            .type_params()
            .map(|t| t.ident.to_string())
            .collect();
        let mut first_typed = true;
        let typed = sig.inputs.iter().filter_map(|i| match i {
            FnArg::Typed(pt) => Some(pt),
            FnArg::Receiver(_) => None,
        });
        for (index, pt) in typed.enumerate() {
            let pname = pat_ident(&pt.pat).unwrap_or_default();
            ctx.params.insert(pname.clone());
            ctx.model.params.push(pname.clone());
            // `Api<K>` over a type parameter says nothing about the kind.
            let api_kind = api_kind_of_type(&pt.ty).map(|k| k.filter(|k| !generics.contains(k)));
            ctx.vars.insert(
                pname.clone(),
                Var {
                    is_api: api_kind.is_some(),
                    kind: api_kind.flatten(),
                    from_param: Some(index),
                    whole_param: Some(index),
                    ..Default::default()
                },
            );
            if first_typed && ctx.model.returns_action {
                ctx.model.object_kind = object_kind_of_type(&pt.ty);
            }
            if !first_typed && matches!(&*pt.ty, Type::Reference(_)) {
                ctx.model.has_error_ref_param = true;
            }
            if first_typed
                && matches!(&*pt.ty, Type::Reference(r) if !compact(&r.elem).contains("Arc"))
                && sig.inputs.len() == 2
            {
                // ≤0.74 error_policy(&E, Context<T>)
                ctx.model.has_error_ref_param = ctx.model.returns_action && !ctx.model.is_async;
            }
            first_typed = false;
        }
        self.fns.push(ctx);
    }

    fn exit_fn(&mut self, block: &syn::Block) {
        let Some(mut ctx) = self.fns.pop() else {
            return;
        };
        ctx.model.last_line = block.brace_token.span.close().start().line;
        let returned = collect_returns(block);
        // Every value it returns carries the stamp: not one only compared with (a dedup window check), nor one
        // that only the creation path puts in a name.
        if ctx.model.returns_volatile.is_some() {
            let tails_carry = collect_tails(block).iter().all(|e| {
                volatile_in_tokens(
                    e.to_token_stream(),
                    &ctx.vars,
                    &self.volatile_fns,
                    None,
                    &mut Vec::new(),
                )
                .is_some()
            });
            if !tails_carry || !ctx.returns_carry.iter().all(|c| *c) {
                ctx.model.returns_volatile = None;
            }
        }
        if ctx.returns_text
            && let [only] = &returned[..]
        {
            ctx.model.returned_text = Some(lower::text(only));
        }
        if ctx.returns_duration {
            let locals = |n: &str| ctx.vars.get(n).and_then(|v| v.init);
            ctx.model.duration_returns = returned
                .iter()
                .map(|e| match e {
                    Expr::Path(p) if p.path.is_ident("None") => DurationReturn::Nothing,
                    Expr::Call(c) if compact(&c.func) == "Some" && c.args.len() == 1 => {
                        match self.const_duration(&c.args[0], &locals).0 {
                            Some(s) => DurationReturn::Secs(s),
                            None => DurationReturn::Unknown,
                        }
                    }
                    other => match self.const_duration(other, &locals).0 {
                        Some(s) => DurationReturn::Secs(s),
                        None => DurationReturn::Unknown,
                    },
                })
                .collect();
        }
        ctx.model.returns = returned
            .into_iter()
            .map(|e| self.requeue_of(&e, &ctx))
            .collect();
        let body = self.block_text(block);
        if ctx.free_fn
            && let Some(span) = namespaced_controller_build(&body, &ctx.model.params, block)
        {
            ctx.model.builds_namespaced_controller = Some(Site {
                span: self.span(span),
                what: "Controller".into(),
                in_fn: ctx.model.name.clone(),
            });
        }
        ctx.model.error_signs = source_text::error_signs(&body);
        ctx.model.clears_resource_version = body.contains("resource_version=None");
        ctx.model.uses_finalizer = body.contains("finalizer(&");
        // Each watcher stream: its own statement, and the later ones that use the binding it went into.
        if !ctx.watcher_candidates.is_empty() {
            let stmts = statement_texts(block);
            for (span, bound, stmt) in std::mem::take(&mut ctx.watcher_candidates) {
                let uses: Vec<&String> = match &bound {
                    Some(name) => stmts
                        .iter()
                        .filter(|s| contains_ident(s, name) && **s != stmt)
                        .collect(),
                    None => Vec::new(),
                };
                let on_the_way = std::iter::once(&stmt).chain(uses.iter().copied());
                let (mut backed_off, mut to_controller) = (false, false);
                for s in on_the_way {
                    backed_off |= has_backoff(s);
                    to_controller |= hands_to_controller(s);
                }
                let consumed = match &bound {
                    Some(name) => uses
                        .iter()
                        .any(|s| consumes(s, Some(name)) || consumes(s, None)),
                    None => consumes(&stmt, None),
                };
                self.model.watcher_streams.push(WatcherStream {
                    span,
                    in_fn: ctx.model.name.clone(),
                    backed_off,
                    to_controller,
                    consumed,
                });
            }
        }
        self.model.fns.push(ctx.model);
    }

    fn with_scope<F: FnOnce(&mut Self)>(&mut self, s: Scope, f: F) {
        self.scopes.push(s);
        f(self);
        self.scopes.pop();
    }
}
