//! One Go function's body reduced to facts: controller-runtime client calls (typed verb and subresource, the
//! object's kind), `ctrl.Result` requeues and what each return gives, volatile values assigned into an object
//! that a later write of that object carries, calls of the module's own functions, and error signs.

use super::branches::{
    self, acts, changes_on, deletion_branches, drops_err, drops_result, guard, is_error_kind_test,
    is_statement, never_retries, place_path, retry_only_branches, skips_when_unchanged,
    tests_error, waits_for_state,
};
use super::client::object_arg;
use super::syntax::{self, Src, named_children, qualified, root_ident, snake};
use super::{Imports, controllers, fn_header, periodic, statements};
use crate::sema::{
    ApiCall, Call, CallCtx, Callee, ErrorSign, FileModel, FnModel, Guard, GuardKind,
    RETRY_ON_CONFLICT, ResolvedCall, VolatileWrite,
};
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

/// Go's predeclared functions: never a call of the module's own code.
pub(super) const BUILTINS: &[&str] = &[
    "append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make", "max",
    "min", "new", "panic", "print", "println", "real", "recover",
];

/// Where a statement runs within its function.
#[derive(Debug, Clone, Default)]
pub(super) struct Place {
    /// Inside an `if`/`switch`/`select` branch, a loop body or a closure: not on every call of the function.
    pub(super) branch: bool,
    /// Inside the branch of an `err != nil` test.
    pub(super) on_error: bool,
    /// Inside the branch taken because the object is being deleted.
    pub(super) deletion: bool,
    pub(super) guard: Option<Guard>,
    pub(super) in_loop: bool,
    /// Inside the function handed to `retry.RetryOnConflict`/`retry.OnError`, or a loop.
    pub(super) in_retry: bool,
    /// Inside the function handed to `retry.RetryOnConflict`/`retry.OnError` (not a loop).
    pub(super) conflict_retry: bool,
    /// Inside a `go` statement: runs on its own goroutine, not on the reconcile's worker.
    pub(super) detached: bool,
    /// The phase the innermost branch on one runs in (see `phases`).
    pub(super) phase_arm: Vec<String>,
    /// Inside a loop on a timer or a function a `wait.Until` runs (see `periodic`).
    pub(super) periodic: bool,
}

/// A volatile value assigned into an object, waiting for the write of that object that carries it.
pub(super) struct Pending {
    pub(super) var: String,
    pub(super) span: crate::finding::Span,
    pub(super) source: String,
    pub(super) key: Option<String>,
}

/// The walk of one function's body: what it has learned so far, and the model it fills.
pub(super) struct Walk<'s, 't> {
    pub(super) src: &'s Src<'t>,
    pub(super) imports: &'s Imports,
    /// The file's own struct types that embed no `ObjectMeta`: a `Name` field of theirs names no object.
    pub(super) plain_structs: &'s HashSet<String>,
    /// The receiver's name (`r` of `func (r *WidgetReconciler) …`).
    pub(super) recv: Option<String>,
    /// Local variables and parameters by name → their type's own name.
    pub(super) locals: HashMap<String, String>,
    /// Locals holding a volatile value (`now := metav1.Now()`): where it was produced and by what.
    pub(super) volatile_locals: HashMap<String, (crate::finding::Span, String)>,
    /// Locals holding text built from an object's identity or an error (`name := obj.GetName()`).
    pub(super) text_locals: HashMap<String, crate::sema::TextExpr>,
    /// Objects whose `.Status` this function changed before the current point.
    pub(super) status_set: HashSet<String>,
    pub(super) pending: Vec<Pending>,
    pub(super) f: FnModel,
    /// Builder chains bound to locals, for Controllers built over several statements.
    pub(super) builders: HashMap<String, Vec<controllers::Step>>,
    pub(super) controllers: Vec<crate::sema::ControllerModel>,
    /// Values handed to metric labels (see `labels`).
    pub(super) model_labels: super::labels::MetricFacts,
    /// The function's parameters by name: their position (the receiver not counted).
    pub(super) params: HashMap<String, usize>,
    /// Locals and parameters holding a client-go typed client (`secrets := cs.CoreV1().Secrets(ns)`, `sc
    /// corev1client.SecretInterface`) → the kind it serves: its calls go to the API server like the chain's.
    pub(super) typed_clients: HashMap<String, String>,
    /// The workqueue methods this function calls, with their queue (see `queue_method`).
    pub(super) queue_seen: HashSet<(String, &'static str)>,
    /// Locals holding a metric label set, with the values put in it so far (see `labels`).
    pub(super) label_sets: HashMap<String, Vec<(crate::finding::Span, crate::sema::TextExpr)>>,
    pub(super) func_fields: Vec<(String, Callee)>, // as `FileModel::func_fields`
    pub(super) clients: super::provenance::ClientFlow,
    /// Phase arms whose code moved the object out of their phase so far (see `phases`).
    pub(super) phase_moved: Vec<Vec<String>>,
    /// Parameters and variables declared with another package's type → that package's name (see `callee`).
    pub(super) local_packages: HashMap<String, String>,
    /// Parameters and variables by name → the named type they are declared with (see `types`).
    pub(super) local_types: HashMap<String, crate::sema::TypeRef>,
    /// Slices and maps by name → the type of their elements.
    pub(super) local_elems: HashMap<String, crate::sema::TypeRef>,
    /// Range variables → their items' kind, for API calls only (`locals` also tells CA402 what an object is).
    pub(super) range_kinds: HashMap<String, String>,
    /// Maps keyed by a pointer to a named type (`map[*vpa_types.VerticalPodAutoscaler][]*corev1.Pod`) → that type.
    pub(super) map_keys: HashMap<String, String>,
    /// Locals bound to a requeue (`rr := ctrl.Result{RequeueAfter: d}`) and not assigned since (see `requeues`).
    pub(super) result_locals: HashMap<String, crate::sema::Requeue>,
    /// Objects built here from a literal and given no resourceVersion since (see `ApiCall::unversioned`).
    pub(super) built: HashSet<String>,
}

/// The model of one function or method declaration; Controllers it builds go to `model`.
pub(super) fn function(
    src: &Src<'_>,
    imports: &Imports,
    plain_structs: &HashSet<String>,
    decl: Node<'_>,
    model: &mut FileModel,
) -> FnModel {
    let f = fn_header(src, decl);
    let recv = decl
        .child_by_field_name("receiver")
        .and_then(|r| named_children(r).find(|p| p.kind() == "parameter_declaration"))
        .and_then(|p| p.child_by_field_name("name"))
        .map(|n| src.text(n).to_string());
    let mut w = Walk {
        src,
        imports,
        plain_structs,
        recv,
        locals: HashMap::new(),
        volatile_locals: HashMap::new(),
        text_locals: HashMap::new(),
        status_set: HashSet::new(),
        pending: Vec::new(),
        f,
        builders: HashMap::new(),
        controllers: Vec::new(),
        model_labels: Default::default(),
        params: HashMap::new(),
        typed_clients: HashMap::new(),
        queue_seen: HashSet::new(),
        func_fields: Vec::new(),
        label_sets: HashMap::new(),
        clients: Default::default(),
        phase_moved: Vec::new(),
        local_packages: HashMap::new(),
        local_types: HashMap::new(),
        local_elems: HashMap::new(),
        range_kinds: HashMap::new(),
        map_keys: HashMap::new(),
        result_locals: HashMap::new(),
        built: HashSet::new(),
    };
    if let Some(list) = decl.child_by_field_name("parameters") {
        w.declare_params(list);
    }
    if let Some(body) = decl.child_by_field_name("body") {
        w.block(body, &Place::default());
        // `controller.New(..)` then `c.Watch(source.Kind(cache, &T{}, &handler.EnqueueRequestForObject{}, ..))`:
        // the watch that enqueues the object itself says which kind the controller reconciles.
        for c in w.controllers.iter_mut().filter(|c| c.kind.is_none()) {
            controllers::watched_kind(src, body, c);
        }
        // Goroutines the function then waits for (a fan-out joined by `wg.Wait()` or `<-results`) run on its time.
        if branches::joins_goroutines(src, body) {
            for c in &mut w.f.calls {
                c.ctx.on_goroutine = false;
            }
        }
    }
    model.controllers.append(&mut w.controllers);
    model.metric_label_values.append(&mut w.model_labels.values);
    model.dropped_series.append(&mut w.model_labels.dropped);
    model.func_fields.append(&mut w.func_fields);
    model.caches.append(&mut w.clients.caches);
    w.f.works_queue = w
        .queue_seen
        .iter()
        .any(|(q, m)| *m == "Take" || (*m == "Get" && w.queue_seen.contains(&(q.clone(), "Done"))));
    w.f
}

impl<'s, 't> Walk<'s, 't> {
    fn block(&mut self, block: Node<'_>, place: &Place) {
        self.sequence(&statements(block), place);
    }

    /// Statements run one after another (a block's, a `case`'s): an early return guards what follows, and a
    /// write whose error the next ones drop is not propagated.
    fn sequence(&mut self, stmts: &[Node<'_>], place: &Place) {
        let mut wrote = false;
        let mut place = std::borrow::Cow::Borrowed(place);
        for (i, s) in stmts.iter().enumerate() {
            let before = self.f.api_calls.len();
            self.statement(*s, &place, wrote);
            // `if cached == ready { return nil }`: what follows runs only when something differs, as if it were
            // the branch of the opposite test.
            if let Some(cond) = skips_when_unchanged(self.src, *s) {
                place = std::borrow::Cow::Owned(Place {
                    branch: true,
                    guard: Some(Guard {
                        kind: GuardKind::Drift,
                        text: format!("not ({cond})")
                            .chars()
                            .take(Guard::MAX_TEXT)
                            .collect(),
                    }),
                    ..place.into_owned()
                });
            }
            if drops_result(self.src, *s, stmts.get(i + 1..).unwrap_or_default()) {
                for c in &mut self.f.api_calls[before..] {
                    c.propagated = false;
                }
            }
            wrote |= self.f.api_calls[before..].iter().any(ApiCall::is_write);
        }
    }

    fn statement(&mut self, s: Node<'_>, place: &Place, wrote_before: bool) {
        match s.kind() {
            "block" => self.block(s, place),
            "if_statement" => self.if_statement(s, place),
            "for_statement" => {
                // `for { … }` and `for cond { … }` repeat until something succeeds; a range visits items.
                let range = named_children(s).find(|c| c.kind() == "range_clause");
                let ranges = range.is_some();
                if let Some(r) = range {
                    self.bind_range(r);
                }
                let inner = Place {
                    branch: true,
                    in_loop: true,
                    in_retry: place.in_retry || !ranges,
                    periodic: place.periodic || periodic::timer_loop(self.src, s),
                    ..place.clone()
                };
                for c in named_children(s) {
                    if c.kind() == "block" {
                        self.block(c, &inner);
                    } else {
                        self.expr(c, place);
                    }
                }
            }
            "expression_switch_statement" | "type_switch_statement" | "select_statement" => {
                let inner = Place {
                    branch: true,
                    ..place.clone()
                };
                for c in named_children(s) {
                    match c.kind() {
                        "expression_case" | "default_case" | "type_case" | "communication_case" => {
                            let inner = self.case_place(s, c, &inner);
                            let stmts: Vec<Node> = named_children(c)
                                .flat_map(syntax::unwrap_stmt_list)
                                .filter(|st| is_statement(*st))
                                .collect();
                            self.sequence(&stmts, &inner);
                        }
                        _ => self.expr(c, place),
                    }
                }
            }
            "go_statement" => {
                let inner = Place {
                    branch: true,
                    detached: true,
                    ..place.clone()
                };
                self.expr(s, &inner);
            }
            "labeled_statement" => {
                for c in named_children(s).filter(|c| is_statement(*c)) {
                    self.statement(c, place, wrote_before);
                }
            }
            "return_statement" => {
                self.expr(s, place);
                self.returned_labels(s);
                self.returned_client(s);
                self.returned(s, place, wrote_before);
            }
            "short_var_declaration" | "assignment_statement" => {
                self.expr(s, place);
                self.assignment(s, place);
            }
            "var_declaration" => {
                self.expr(s, place);
                self.var_declaration(s);
            }
            _ => self.expr(s, place),
        }
    }

    fn if_statement(&mut self, s: Node<'_>, place: &Place) {
        let before = self.f.api_calls.len();
        if let Some(init) = s.child_by_field_name("initializer") {
            self.statement(init, place, false);
        }
        let cond = s.child_by_field_name("condition");
        if let Some(c) = cond {
            self.expr(c, place);
        }
        let cond_text = cond.map(|c| self.src.compact(c, 200)).unwrap_or_default();
        let is_err = cond_text.contains("err != nil")
            || cond_text.contains("Err != nil")
            || tests_error(&cond_text);
        // `if apierrors.IsNotFound(err) { r.Create(ctx, ..) … }`: a known error that this branch acts on (a
        // dependency to create, a job to submit), not a failure being retried. A branch on an error kind that only
        // returns (`if IsConflict(err) { return ctrl.Result{RequeueAfter: time.Second}, nil }`) still retries it.
        let handled = waits_for_state(&cond_text)
            || (is_error_kind_test(&cond_text)
                && s.child_by_field_name("consequence")
                    .is_some_and(|b| acts(self.src, b)));
        let (del_then, del_else) = deletion_branches(&cond_text);
        let (retry_then, retry_else) = retry_only_branches(&cond_text);
        if let Some(cons) = s.child_by_field_name("consequence") {
            // `if err := r.Update(..); err != nil { log… }`: the write's error is dropped.
            if is_err && drops_err(self.src, cons) {
                for c in &mut self.f.api_calls[before..] {
                    c.propagated = false;
                }
            }
            let inner = Place {
                branch: true,
                phase_arm: cond
                    .and_then(|c| self.phase_arm_of(c))
                    .unwrap_or_else(|| place.phase_arm.clone()),
                on_error: ((place.on_error || is_err) && !handled) || retry_then,
                deletion: place.deletion || del_then,
                guard: (!is_err && !cond_text.is_empty())
                    .then(|| guard(&cond_text))
                    .or_else(|| place.guard.clone()),
                ..place.clone()
            };
            // What a branch that ends in `return` did to the object does not reach the code after the `if`.
            let status_before = self.status_set.clone();
            self.block(cons, &inner);
            if statements(cons)
                .last()
                .is_some_and(|l| l.kind() == "return_statement")
            {
                self.status_set = status_before;
            }
        }
        if let Some(alt) = s.child_by_field_name("alternative") {
            let inner = Place {
                branch: true,
                deletion: place.deletion || del_else,
                on_error: place.on_error || retry_else,
                ..place.clone()
            };
            self.statement(alt, &inner, false);
        }
    }

    /// Walks an expression (or any non-block statement) for calls and closures.
    fn expr(&mut self, n: Node<'_>, place: &Place) {
        match n.kind() {
            "func_literal" => {
                // `func(options metav1.ListOptions) (runtime.Object, error) { .. }`: a list or watch function that
                // a reflector or informer calls when it (re)lists, not code of this pass.
                let list_watch = n.child_by_field_name("parameters").is_some_and(|p| {
                    named_children(p).any(|d| {
                        d.child_by_field_name("type")
                            .is_some_and(|t| self.src.text(t).ends_with("ListOptions"))
                    })
                });
                if list_watch {
                    return;
                }
                if let Some(body) = n.child_by_field_name("body") {
                    let inner = Place {
                        branch: true,
                        ..place.clone()
                    };
                    let shadowed = self.literal_params(n);
                    self.block(body, &inner);
                    for (name, before) in shadowed {
                        match before {
                            Some(t) => self.locals.insert(name, t),
                            None => self.locals.remove(&name),
                        };
                    }
                }
                return;
            }
            "call_expression" => {
                self.call(n, place);
                return;
            }
            // `syncHandler: c.sync` in a struct literal.
            "keyed_element" => {
                let parts: Vec<Node> = named_children(n).collect();
                if let [key, value] = parts[..] {
                    let key = syntax::unwrap_literal_element(key);
                    let value = syntax::unwrap_literal_element(value);
                    self.func_field(self.src.text(key), value);
                    // The literal the element is in: `&TaskReconciler{kubeClient: c}`.
                    let ty = n
                        .parent()
                        .and_then(|b| b.parent())
                        .and_then(|l| self.type_of(l));
                    self.store_client(ty, self.src.text(key), value);
                }
            }
            "composite_literal" => self.cache_options(n),
            "unary_expression" => self.timer_receive(n, place),
            _ => {}
        }
        for c in named_children(n) {
            if c.kind() == "block" {
                self.block(c, place);
            } else {
                self.expr(c, place);
            }
        }
    }

    fn call(&mut self, n: Node<'_>, place: &Place) {
        let Some(func) = n.child_by_field_name("function") else {
            return;
        };
        let args: Vec<Node> = n
            .child_by_field_name("arguments")
            .map(|a| named_children(a).collect())
            .unwrap_or_default();
        // Asked of both the module call and the library call below (see `CallCtx::never_retries`).
        let once = never_retries(self.src, &args);
        self.built_used(func, &args);
        if let Some(c) = controllers::chain(self.src, self.imports, n, &self.builders) {
            let m = controllers::model(self, c, n);
            self.controllers.push(m);
        } else if let Some(m) = controllers::from_new(self, n, &args) {
            self.controllers.push(m);
        }
        let retry = qualified(self.src, func).is_some_and(|(pkg, f)| {
            self.imports.is(pkg, "k8s.io/client-go/util/retry")
                && matches!(f, "RetryOnConflict" | "OnError")
        });
        if retry {
            self.f
                .error_signs
                .push(ErrorSign::Predicate(RETRY_ON_CONFLICT.into()));
            self.retried_functions(&args);
        }
        if let Some((pkg, f)) = qualified(self.src, func)
            && self.imports.is(pkg, "k8s.io/apimachinery/pkg/api/errors")
            && let Some(reason) = f.strip_prefix("Is")
        {
            if reason == "Conflict" {
                self.f.conflict_tests.push(self.src.pos(n).line);
            }
            self.f
                .error_signs
                .push(ErrorSign::Predicate(format!("is_{}", snake(reason))));
        }
        self.manager_built(func, &args);
        if let Some(m) = self.queue_method(func, &args, place.in_loop) {
            self.queue_seen.insert(m);
        }
        if let Some(mut call) = self.api_call(func, &args, place) {
            call.unversioned = self.unversioned(&call, &args);
            if call.is_write()
                && let Some(obj) = object_arg(&call.method, &args)
                && let Some(var) = root_ident(self.src, obj)
            {
                // What was assigned into the object before is carried by this write.
                let (carried, kept): (Vec<Pending>, Vec<Pending>) =
                    std::mem::take(&mut self.pending)
                        .into_iter()
                        .partition(|p| p.var == var);
                self.pending = kept;
                for p in carried {
                    self.f.volatile_writes.push(VolatileWrite {
                        span: p.span,
                        source: p.source,
                        write: call.clone(),
                        key: p.key,
                        via: None,
                    });
                }
            }
            self.f.api_calls.push(call);
        } else if !self.is_clientset_accessor(func)
            && let Some(callee) = self.callee(func)
        {
            for (i, a) in args.iter().enumerate() {
                let passed = match a.kind() {
                    "selector_expression" => self.callee(*a),
                    "identifier" if self.params.contains_key(self.src.text(*a)) => {
                        Some(Callee::Path(self.src.text(*a).to_string()))
                    }
                    _ => None,
                };
                if let Some(m) = passed {
                    self.f.func_args.push((callee.clone(), i, m));
                }
            }
            self.client_args(&callee, &args);
            self.object_handed_with_client(&callee, func, &args, place);
            let args = args.iter().map(|a| self.text_of(*a)).collect();
            self.f.calls.push(Call {
                callee,
                at: self.src.pos(n),
                args,
                type_args: Vec::new(),
                ctx: CallCtx {
                    path: place_path(place),
                    in_loop: place.in_loop,
                    transition: self.after_phase_move(place) || changes_on(place),
                    phase_arm: place.phase_arm.clone(),
                    never_retries: once,
                    on_goroutine: place.detached,
                    periodic: place.periodic,
                    handed_on: n.parent().is_some_and(|a| a.kind() == "argument_list"),
                    in_conflict_retry: place.conflict_retry,
                    ..Default::default()
                },
            });
        }
        // `meta.SetStatusCondition(&w.Status.Conditions, …)` changes the object's status: its address is handed
        // over. A value (`IsJobTerminal(w.Status.JobStatus)`, `DeepCopyConditions(w.Status.Conditions)`) is only
        // read.
        if let Some(first) = args.first()
            && first.kind() == "unary_expression"
            && self.src.text(*first).starts_with('&')
            && self.src.text(*first).contains(".Status")
            && let Some(var) = root_ident(self.src, *first)
        {
            self.status_set.insert(var.to_string());
        }
        self.metric_labels(func, &args);
        // Every call of another package by its import path (`time::Sleep`): what rules that know a library's
        // behaviour judge (CA305's waits).
        let mut resolved = None;
        // An injected clock's sleep (`c.clock.Sleep(time.Second)`, k8s.io/utils/clock's `Clock`, faked in tests)
        // waits like `time.Sleep`.
        let clock_sleep = (func.kind() == "selector_expression" && args.len() == 1)
            .then(|| {
                let on = self.src.text(func.child_by_field_name("operand")?);
                let m = self.src.text(func.child_by_field_name("field")?);
                let last = on.rsplit('.').next().unwrap_or(on).to_ascii_lowercase();
                (m == "Sleep" && (last.contains("clock") || last == "clk"))
                    .then_some(("k8s.io/utils/clock", "Sleep"))
            })
            .flatten();
        if let Some((path, name)) = clock_sleep.or_else(|| {
            let (pkg, name) = qualified(self.src, func)?;
            Some((self.imports.path_of(pkg)?, name))
        }) {
            resolved = Some(self.f.resolved_calls.len());
            self.f.resolved_calls.push(ResolvedCall {
                callee: Callee::Path(format!("{path}::{name}")),
                at: self.src.pos(n),
                off_runtime: place.detached,
                repeats_write: false,
                never_retries: once,
                kept: n.parent().is_some_and(|p| p.kind() == "expression_list"),
            });
        }
        self.expr(func, place);
        let periodic = self.periodic_runner(func);
        if periodic {
            self.periodic_method_values(&args, n, place_path(place));
        }
        let inner = Place {
            in_retry: place.in_retry || retry,
            conflict_retry: place.conflict_retry || retry,
            periodic: place.periodic || periodic,
            ..place.clone()
        };
        let calls_before = self.f.api_calls.len();
        for a in args {
            self.expr(a, &inner);
        }
        if let Some(i) = resolved
            && self.f.api_calls[calls_before..]
                .iter()
                .any(|c| c.is_write())
        {
            self.f.resolved_calls[i].repeats_write = true;
        }
    }

    /// The receiver's type name when `name` is the receiver.
    pub(super) fn receiver_type(&self, name: &str) -> Option<&str> {
        (self.recv.as_deref() == Some(name))
            .then_some(self.f.self_ty.as_deref())
            .flatten()
    }
}
