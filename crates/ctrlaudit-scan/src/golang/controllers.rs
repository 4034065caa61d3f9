//! controller-runtime's builder chains as Controllers: `ctrl.NewControllerManagedBy(mgr).For(&T{}) … .Complete(r)`
//! (or `builder.ControllerManagedBy`), in one expression or through a local the chain is bound to. What the
//! chain says becomes the same `sema::ControllerModel` the Rust front end gives for a kube-runtime Controller:
//! the kind, the steps of its main stream (predicates), its workers, and which `Reconcile` it runs.

use super::requeues::lower_value;
use super::syntax::{self, Src, named_children, qualified, strip_ref};
use super::{Imports, body};
use crate::finding::Span;
use crate::sema::{ConcurrencyConfig, ControllerModel, RunCall, StreamStep, Value};
use std::collections::HashMap;
use tree_sitter::Node;

/// controller-runtime's default `MaxConcurrentReconciles`: one worker per controller.
const DEFAULT_WORKERS: u64 = 1;

/// One method of a builder chain, as owned data (a chain bound to a local outlives its syntax).
#[derive(Debug, Clone)]
pub(crate) struct Step {
    method: String,
    /// The names the arguments use (`predicate`, `GenerationChangedPredicate`).
    arg_names: Vec<String>,
    span: Span,
    /// `For(&appv1.Widget{})`: the kind.
    kind: Option<String>,
    /// `WithOptions(controller.Options{MaxConcurrentReconciles: n})`: what it sets.
    workers: Option<ConcurrencyConfig>,
    /// `For(obj, builder.WithPredicates(..))`: predicates on the main stream, by the names they use.
    for_predicates: Vec<String>,
}

/// A finished chain: its steps from the root, and the `Complete`/`Build` call with its argument.
pub(crate) struct Chain<'a> {
    steps: Vec<Step>,
    reconciler: Option<Node<'a>>,
}

/// `X.Complete(r)` or `X.Build(r)` where `X` is a controller-runtime builder chain.
pub(crate) fn chain<'a>(
    src: &Src<'_>,
    imports: &Imports,
    call: Node<'a>,
    builders: &HashMap<String, Vec<Step>>,
) -> Option<Chain<'a>> {
    let f = call.child_by_field_name("function")?;
    if f.kind() != "selector_expression" {
        return None;
    }
    let method = src.text(f.child_by_field_name("field")?);
    if !matches!(method, "Complete" | "Build") {
        return None;
    }
    let steps = steps_of(src, imports, f.child_by_field_name("operand")?, builders)?;
    let reconciler = call
        .child_by_field_name("arguments")
        .and_then(|a| named_children(a).next());
    Some(Chain { steps, reconciler })
}

/// A chain not yet finished (bound to a local to be completed later).
pub(crate) fn unfinished_chain(
    src: &Src<'_>,
    imports: &Imports,
    n: Node<'_>,
    builders: &HashMap<String, Vec<Step>>,
) -> Option<Vec<Step>> {
    if n.kind() != "call_expression" {
        return None;
    }
    steps_of(src, imports, n, builders)
}

/// The steps of a builder expression, from its root call (or a local holding a chain).
fn steps_of(
    src: &Src<'_>,
    imports: &Imports,
    n: Node<'_>,
    builders: &HashMap<String, Vec<Step>>,
) -> Option<Vec<Step>> {
    if n.kind() == "identifier" {
        return builders.get(src.text(n)).cloned();
    }
    // `builder.TypedControllerManagedBy[reconcile.Request](mgr)` parses as a conversion to a generic type.
    if n.kind() == "type_conversion_expression" {
        let (pkg, name) = n
            .child_by_field_name("type")
            .filter(|t| t.kind() == "generic_type")
            .and_then(|t| t.child_by_field_name("type"))
            .and_then(|t| syntax::qualified_type(src, t))?;
        let typed_root = (name == "NewTypedControllerManagedBy"
            && imports.path_of(pkg) == Some("sigs.k8s.io/controller-runtime"))
            || (name == "TypedControllerManagedBy"
                && imports.is(pkg, "sigs.k8s.io/controller-runtime/pkg/builder"));
        let args: Vec<Node> = n.child_by_field_name("operand").into_iter().collect();
        return typed_root.then(|| vec![step(src, imports, name, &args, n)]);
    }
    if n.kind() != "call_expression" {
        return None;
    }
    let f = n.child_by_field_name("function")?;
    let args: Vec<Node> = n
        .child_by_field_name("arguments")
        .map(|a| named_children(a).collect())
        .unwrap_or_default();
    if let Some((pkg, name)) = qualified(src, f) {
        let root = (name == "NewControllerManagedBy"
            && imports.path_of(pkg) == Some("sigs.k8s.io/controller-runtime"))
            || (name == "ControllerManagedBy"
                && imports.is(pkg, "sigs.k8s.io/controller-runtime/pkg/builder"));
        if root {
            return Some(vec![step(src, imports, name, &args, n)]);
        }
    }
    if f.kind() != "selector_expression" {
        return None;
    }
    let mut steps = steps_of(src, imports, f.child_by_field_name("operand")?, builders)?;
    let method = src.text(f.child_by_field_name("field")?);
    steps.push(step(src, imports, method, &args, n));
    Some(steps)
}

fn step(src: &Src<'_>, imports: &Imports, method: &str, args: &[Node<'_>], n: Node<'_>) -> Step {
    let mut arg_names = Vec::new();
    for a in args {
        syntax::any_node(*a, &mut |x| {
            if matches!(
                x.kind(),
                "identifier" | "type_identifier" | "field_identifier" | "package_identifier"
            ) {
                arg_names.push(src.text(x).to_string());
            }
            false
        });
    }
    let kind = (method == "For")
        .then(|| args.first().and_then(|a| literal_type(src, *a)))
        .flatten();
    let for_predicates = if method == "For" {
        args.iter()
            .skip(1)
            .filter(|a| src.text(**a).contains("WithPredicates"))
            .flat_map(|a| names_in(src, *a))
            .collect()
    } else {
        Vec::new()
    };
    let workers = (method == "WithOptions")
        .then(|| args.first().map(|a| workers_of(src, imports, *a)))
        .flatten();
    Step {
        method: method.to_string(),
        arg_names,
        span: src.span(n),
        kind,
        workers,
        for_predicates,
    }
}

/// The names an expression uses (`predicate`, `GenerationChangedPredicate`): what a predicate is made of.
fn names_in(src: &Src<'_>, n: Node<'_>) -> Vec<String> {
    let mut names = Vec::new();
    syntax::any_node(n, &mut |x| {
        if matches!(
            x.kind(),
            "identifier" | "type_identifier" | "field_identifier"
        ) {
            names.push(src.text(x).to_string());
        }
        false
    });
    names
}

/// `controller.Options{MaxConcurrentReconciles: n}`: n when constant, unknown when computed; the default
/// when the options do not set it.
fn workers_of(src: &Src<'_>, imports: &Imports, opts: Node<'_>) -> ConcurrencyConfig {
    if strip_ref(opts).kind() != "composite_literal" {
        return ConcurrencyConfig::Unknown;
    }
    let Some(v) = syntax::keyed_value(src, opts, "MaxConcurrentReconciles") else {
        return ConcurrencyConfig::Limit(DEFAULT_WORKERS);
    };
    let value: Value = lower_value(src, imports, v);
    match value.number(&HashMap::new(), &crate::sema::unbound) {
        Some(n) if n >= 0.0 => ConcurrencyConfig::Limit(n as u64),
        _ => ConcurrencyConfig::Unknown,
    }
}

/// The type of `&appv1.Widget{}` or `new(appv1.Widget)`.
fn literal_type(src: &Src<'_>, a: Node<'_>) -> Option<String> {
    let a = strip_ref(a);
    match a.kind() {
        "composite_literal" => a
            .child_by_field_name("type")
            .map(|t| syntax::base_type(src, t)),
        "call_expression"
            if a.child_by_field_name("function")
                .is_some_and(|f| src.text(f) == "new") =>
        {
            a.child_by_field_name("arguments")
                .and_then(|x| named_children(x).next())
                .map(|t| syntax::base_type(src, t))
        }
        _ => None,
    }
}

/// The Controller a finished chain builds, in the function being walked.
pub(super) fn model(w: &body::Walk<'_, '_>, c: Chain<'_>, complete: Node<'_>) -> ControllerModel {
    let src = w.src();
    let kind = c.steps.iter().find_map(|s| s.kind.clone());
    let mut stream = Vec::new();
    for s in &c.steps {
        match s.method.as_str() {
            // Only what filters the main stream counts: `WithEventFilter` filters every source, and
            // `WithPredicates` given to `For` filters the reconciled kind's events.
            "WithEventFilter" => stream.push(StreamStep {
                method: s.method.clone(),
                arg_names: s.arg_names.clone(),
            }),
            "For" if !s.for_predicates.is_empty() => stream.push(StreamStep {
                method: "WithPredicates".into(),
                arg_names: s.for_predicates.clone(),
            }),
            _ => {}
        }
    }
    let config = c
        .steps
        .iter()
        .rev()
        .find_map(|s| s.workers.clone())
        .unwrap_or(ConcurrencyConfig::Limit(DEFAULT_WORKERS));
    let reconciler_ty = c.reconciler.and_then(|r| reconciler_type(w, r));
    let reconciler_from = c
        .reconciler
        .filter(|_| reconciler_ty.is_none())
        .and_then(|r| constructor(w, r));
    let reconcile = match reconciler_ty {
        Some(t) => format!("{t}::Reconcile"),
        None => "Reconcile".to_string(),
    };
    let span = c
        .steps
        .first()
        .map_or_else(|| src.span(complete), |s| s.span.clone());
    ControllerModel {
        span,
        in_fn: w.fn_name().to_string(),
        kind,
        stream,
        config,
        run: Some(RunCall {
            span: src.span(complete),
            reconcile: Some(reconcile),
            error_policy: None,
            inline_policy: Vec::new(),
            reconciler_from,
            singleton: c.reconciler.is_some_and(|r| is_singleton(w, r)),
        }),
        stored_in: None,
    }
}

/// `controller.New(name, mgr, controller.Options{Reconciler: r, MaxConcurrentReconciles: n})`: a Controller
/// without the builder, whose watches are added with `c.Watch(..)` (see [`watched_kind`]).
pub(super) fn from_new(
    w: &body::Walk<'_, '_>,
    call: Node<'_>,
    args: &[Node<'_>],
) -> Option<ControllerModel> {
    let src = w.src();
    let f = call.child_by_field_name("function")?;
    let (pkg, name) = qualified(src, f)?;
    if !matches!(name, "New" | "NewTyped" | "NewUnmanaged")
        || w.imports().path_of(pkg) != Some("sigs.k8s.io/controller-runtime/pkg/controller")
    {
        return None;
    }
    let opts = args.get(2).map(|o| strip_ref(*o));
    let config = match opts {
        Some(o) if o.kind() == "composite_literal" => workers_of(src, w.imports(), o),
        // Options built elsewhere: their workers are not known here.
        Some(_) => ConcurrencyConfig::Unknown,
        None => ConcurrencyConfig::Limit(DEFAULT_WORKERS),
    };
    let reconciler = opts.and_then(|o| syntax::keyed_value(src, o, "Reconciler"));
    let reconciler_ty = reconciler.and_then(|r| reconciler_type(w, r));
    let reconciler_from = reconciler
        .filter(|_| reconciler_ty.is_none())
        .and_then(|r| constructor(w, r));
    let reconcile = match reconciler_ty {
        Some(t) => format!("{t}::Reconcile"),
        None => "Reconcile".to_string(),
    };
    Some(ControllerModel {
        span: src.span(call),
        in_fn: w.fn_name().to_string(),
        kind: None,
        stream: Vec::new(),
        config,
        run: Some(RunCall {
            span: src.span(call),
            reconcile: Some(reconcile),
            error_policy: None,
            inline_policy: Vec::new(),
            reconciler_from,
            singleton: reconciler.is_some_and(|r| is_singleton(w, r)),
        }),
        stored_in: None,
    })
}

/// The kind and predicates of the watch that enqueues the reconciled object itself
/// (`handler.EnqueueRequestForObject`), among the calls of `body`.
pub(super) fn watched_kind(src: &Src<'_>, body: Node<'_>, c: &mut ControllerModel) {
    let mut found: Option<(String, Vec<String>)> = None;
    syntax::any_node(body, &mut |n| {
        if n.kind() != "call_expression" || !src.text(n).contains("EnqueueRequestForObject") {
            return false;
        }
        let Some(args) = n.child_by_field_name("arguments") else {
            return false;
        };
        let args: Vec<Node> = named_children(args).collect();
        // `source.Kind(cache, &T{}, handler, preds...)`, `c.Watch(source.Kind(cache, &T{}), handler, preds...)`
        // (controller-runtime 0.15 to 0.17) or `c.Watch(&source.Kind{Type: &T{}}, handler, preds...)`.
        let Some(at) = args
            .iter()
            .position(|a| src.text(*a).contains("EnqueueRequestForObject"))
        else {
            return false;
        };
        let kind = args[..at].iter().rev().find_map(|a| {
            let mut a = strip_ref(*a);
            if a.kind() == "call_expression"
                && a.child_by_field_name("function")
                    .is_some_and(|f| src.text(f).ends_with("Kind"))
            {
                a = a.child_by_field_name("arguments").and_then(|x| {
                    named_children(x)
                        .map(strip_ref)
                        .find(|x| x.kind() == "composite_literal")
                })?;
            }
            if a.kind() != "composite_literal" {
                return None;
            }
            let t = a
                .child_by_field_name("type")
                .map(|t| syntax::base_type(src, t))?;
            // `&source.Kind{Type: &T{}}`: the type inside.
            if t == "Kind" {
                let mut inner = None;
                syntax::any_node(a, &mut |x| {
                    if x != a && x.kind() == "composite_literal" {
                        inner = x
                            .child_by_field_name("type")
                            .map(|t| syntax::base_type(src, t));
                        return inner.is_some();
                    }
                    false
                });
                return inner;
            }
            Some(t)
        });
        let Some(kind) = kind else { return false };
        let preds = args[at + 1..]
            .iter()
            .flat_map(|p| names_in(src, *p))
            .collect();
        found = Some((kind, preds));
        true
    });
    if let Some((kind, preds)) = found {
        c.kind = Some(kind);
        if !preds.is_empty() {
            c.stream.push(StreamStep {
                method: "WithPredicates".into(),
                arg_names: preds,
            });
        }
    }
}

/// The type of the reconciler handed to a Controller: the method's receiver, a local of known type, or a
/// `&FooReconciler{..}` literal. controller-runtime's own interface (`r reconcile.Reconciler`) names none.
fn reconciler_type(w: &body::Walk<'_, '_>, r: Node<'_>) -> Option<String> {
    let src = w.src();
    let r = strip_ref(r);
    let t = match r.kind() {
        "identifier" => {
            let name = src.text(r);
            w.receiver_type(name)
                .or_else(|| w.local_type(name))
                .map(str::to_string)
        }
        "composite_literal" => r
            .child_by_field_name("type")
            .map(|t| syntax::base_type(src, t)),
        // A reconciler wrapped by an adapter (`reconcile.AsReconciler(mgr.GetClient(), c)`, a singleton's
        // `AsReconciler(r)`): the argument whose type is known. Any other call (`NewWidgetReconciler(c)`) returns
        // a type it does not name here.
        "call_expression"
            if r.child_by_field_name("function").is_some_and(|f| {
                src.text(f) == "AsReconciler" || src.text(f).ends_with(".AsReconciler")
            }) =>
        {
            r.child_by_field_name("arguments").and_then(|a| {
                named_children(a)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .find_map(|x| reconciler_type(w, x))
            })
        }
        // A decorator of the module's (`WithLeadingManager(mgr, r, &Workload{}, cfg)`, a metrics or tracing
        // wrapper) delegates to the reconciler it is handed: the receiver, or a local whose type is a reconciler.
        "call_expression" => r.child_by_field_name("arguments").and_then(|a| {
            named_children(a).find_map(|x| {
                let x = strip_ref(x);
                let name = (x.kind() == "identifier").then(|| src.text(x))?;
                w.receiver_type(name)
                    .or_else(|| w.local_type(name).filter(|t| t.ends_with("Reconciler")))
                    .map(str::to_string)
            })
        }),
        _ => None,
    };
    t.filter(|t| !matches!(t.as_str(), "Reconciler" | "TypedReconciler"))
}

/// `singleton.AsReconciler(p)` (github.com/awslabs/operatorpkg/singleton): a reconciler of one synthetic object.
fn is_singleton(w: &body::Walk<'_, '_>, r: Node<'_>) -> bool {
    let r = strip_ref(r);
    r.kind() == "call_expression"
        && r.child_by_field_name("function")
            .and_then(|f| qualified(w.src(), f))
            .is_some_and(|(pkg, name)| {
                name == "AsReconciler"
                    && w.imports()
                        .path_of(pkg)
                        .is_some_and(|p| p.ends_with("/singleton"))
            })
}

/// The module's function a reconciler value comes from: `NewWidgetReconciler(c)` itself, or the local it was
/// bound to (`r := controller.NewWidgetReconciler(c)`).
fn constructor(w: &body::Walk<'_, '_>, r: Node<'_>) -> Option<crate::sema::Callee> {
    let r = strip_ref(r);
    match r.kind() {
        "identifier" => w.clients.returned_by(w.src().text(r)),
        "call_expression" => r.child_by_field_name("function").and_then(|f| w.callee(f)),
        _ => None,
    }
}
