//! Builds a [`FileModel`] from one parsed file: a single walk over the syntax tree that records
//! functions, kube API calls, controller builder chains, requeues and the local data flow the
//! detectors need (which variables hold an `Api<K>`, a timestamp, a body with `status`).

use super::eval::{compact, duration_secs, number};
use super::imports::{EXTERNAL_ROOTS, Imports, is_kube_path};
use super::model::*;
use crate::finding::Span;
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::{HashMap, HashSet};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, FnArg, Pat, Stmt, Type};

/// Converts a proc-macro2 span into a 1-based [`Span`].
pub fn to_span(file: &str, s: proc_macro2::Span) -> Span {
    let (a, b) = (s.start(), s.end());
    Span {
        file: file.to_string(),
        line: a.line,
        column: a.column + 1,
        end_line: b.line,
        end_column: b.column + 1,
    }
}

fn start_end(file: &str, start: proc_macro2::Span, end: proc_macro2::Span) -> Span {
    let mut s = to_span(file, start);
    let e = to_span(file, end);
    s.end_line = e.end_line;
    s.end_column = e.end_column;
    s
}

/// Calls that produce a new value every time they run.
const VOLATILE: &[(&str, &str)] = &[
    ("Utc", "now"),
    ("Local", "now"),
    ("Timestamp", "now"),
    ("Zoned", "now"),
    ("SystemTime", "now"),
    ("OffsetDateTime", "now_utc"),
    ("Uuid", "new_v4"),
    ("Uuid", "now_v7"),
    ("rand", "random"),
    ("rand", "thread_rng"),
];

/// Label values that grow with the number of objects, namespaces or distinct errors.
const UNBOUNDED_LABEL: &[&str] = &[
    "name_any()",
    "name_unchecked()",
    ".namespace()",
    ".uid()",
    "metadata.name",
    "metadata.uid",
    "metadata.namespace",
    ":?}\"",
    "{:?}\",",
    "e.to_string()",
    "err.to_string()",
    "error.to_string()",
];

/// Does a label value's text contain one of [`UNBOUNDED_LABEL`] as whole tokens? `e.to_string()` is an error's
/// text; `phase.to_string()` only ends like it.
fn is_unbounded_label(text: &str) -> bool {
    UNBOUNDED_LABEL.iter().any(|p| {
        text.match_indices(p).any(|(i, _)| {
            let starts_ident = p.starts_with(|c: char| c.is_alphanumeric() || c == '_');
            let before = text[..i].chars().next_back();
            !starts_ident || !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Scope {
    For,
    While,
    Loop,
    Closure,
}

#[derive(Debug, Default, Clone)]
struct Var {
    is_api: bool,
    kind: Option<String>,
    init: Option<Expr>,
    /// Holds a volatile value: where it came from, its text, and the key it was stored under.
    volatile: Option<(Span, String, Option<String>)>,
    /// Derived from the function's parameter at this position (`self` not counted).
    from_param: Option<usize>,
    /// An object whose `status` was set.
    status_set: bool,
    /// Holds a Controller under construction (index into the file's controllers).
    controller: Option<usize>,
}

#[derive(Debug, Default)]
struct FnCtx {
    model: FnModel,
    vars: HashMap<String, Var>,
    params: HashSet<String>,
    watcher_candidates: Vec<(Span, Option<String>, String)>,
}

/// The walk over one file.
#[derive(Debug)]
pub struct Extractor<'a, 'ast> {
    path: &'a str,
    imports: &'a Imports,
    aliases: &'a std::collections::BTreeMap<String, String>,
    consts: HashMap<String, f64>,
    /// Functions of this file that return a value built from a volatile call: name → (where, what).
    volatile_fns: HashMap<String, (Span, String)>,
    api_fields: HashMap<String, String>,
    /// Functions of this file that return a `Controller<K>`: name → (has predicate, config set).
    controller_builders: HashMap<String, (bool, bool)>,
    pub model: FileModel,
    fns: Vec<FnCtx>,
    scopes: Vec<Scope>,
    guards: usize,
    branches: usize,
    /// Depth of error paths around the node being visited (see `Requeue::on_error`).
    error_path: usize,
    /// Per enclosing block: has a write-like call been seen in it so far (see `Requeue::after_change`)?
    block_writes: Vec<bool>,
    /// Per enclosing `if`: was its branch taken because something was written or changed?
    change_branches: Vec<bool>,
    blocking_ok: usize,
    retry_closure: usize,
    propagated: HashSet<(usize, usize)>,
    awaited: HashSet<(usize, usize)>,
    seen_chains: HashSet<(usize, usize)>,
    /// The statements being visited, innermost last: their text is rendered only for a watcher
    /// candidate (CA205), not for every statement.
    stmt_stack: Vec<&'ast Stmt>,
}

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

/// The call whose error an enclosing `?`/`unwrap()` propagates, through `.await` and error mapping.
fn propagation_target(e: &Expr) -> &Expr {
    match e {
        Expr::Await(a) => propagation_target(&a.base),
        Expr::Paren(p) => propagation_target(&p.expr),
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "map_err" | "context" | "with_context" | "wrap_err" | "wrap_err_with" | "err_into"
            ) =>
        {
            propagation_target(&m.receiver)
        }
        other => other,
    }
}

/// The variable at the root of `a.b.c()`, `&a`, `(*a).clone()`.
fn root_var(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.path.segments.len() == 1 => Some(p.path.segments[0].ident.to_string()),
        Expr::Field(f) => root_var(&f.base),
        Expr::MethodCall(m) => root_var(&m.receiver),
        Expr::Reference(r) => root_var(&r.expr),
        Expr::Unary(u) => root_var(&u.expr),
        Expr::Paren(p) => root_var(&p.expr),
        Expr::Index(i) => root_var(&i.expr),
        Expr::Try(t) => root_var(&t.expr),
        Expr::Await(a) => root_var(&a.base),
        _ => None,
    }
}

fn path_segments(p: &syn::Path) -> Vec<String> {
    p.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The `K` in `Api<K>`, `&Api<K>`, `Arc<Api<K>>`.
fn api_kind_of_type(ty: &Type) -> Option<Option<String>> {
    let t = compact(ty);
    let i = t.find("Api<")?;
    if i > 0 {
        let prev = t.as_bytes()[i - 1];
        if prev.is_ascii_alphanumeric() || prev == b'_' {
            return None;
        }
    }
    let rest = &t[i + 4..];
    let mut depth = 1;
    let mut end = rest.len();
    for (j, c) in rest.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    end = j;
                    break;
                }
            }
            _ => {}
        }
    }
    let inner = &rest[..end];
    let last = inner.rsplit("::").next().unwrap_or(inner);
    Some((!last.is_empty() && last != "_").then(|| last.to_string()))
}

/// The object type of a reconcile-shaped first parameter: `Arc<K>`, `&K`, `K`.
fn object_kind_of_type(ty: &Type) -> Option<String> {
    let t = compact(ty);
    let t = t.trim_start_matches('&');
    let inner = t
        .strip_prefix("Arc<")
        .or_else(|| t.strip_prefix("std::sync::Arc<"))
        .map(|s| s.trim_end_matches('>'))
        .unwrap_or(t);
    let last = inner.rsplit("::").next().unwrap_or(inner);
    (last.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then(|| last.to_string())
}

/// The object kind named by the first generic argument: `Widget` in `Api::<Widget>` or `Controller::<Widget>`.
fn first_type_argument_kind(args: &syn::PathArguments) -> Option<String> {
    match args {
        syn::PathArguments::AngleBracketed(a) => a.args.first().and_then(|g| match g {
            syn::GenericArgument::Type(t) => object_kind_of_type(t),
            _ => None,
        }),
        _ => None,
    }
}

fn pat_ident(p: &Pat) -> Option<String> {
    match p {
        Pat::Ident(i) => Some(i.ident.to_string()),
        Pat::Type(t) => pat_ident(&t.pat),
        Pat::Reference(r) => pat_ident(&r.pat),
        _ => None,
    }
}

fn pat_idents(p: &Pat, out: &mut Vec<String>) {
    match p {
        Pat::Ident(i) => out.push(i.ident.to_string()),
        Pat::Type(t) => pat_idents(&t.pat, out),
        Pat::Reference(r) => pat_idents(&r.pat, out),
        Pat::Tuple(t) => t.elems.iter().for_each(|e| pat_idents(e, out)),
        Pat::TupleStruct(t) => t.elems.iter().for_each(|e| pat_idents(e, out)),
        Pat::Struct(s) => s.fields.iter().for_each(|f| pat_idents(&f.pat, out)),
        _ => {}
    }
}

/// A condition that compares old with new, or checks presence: the shape of a write guard.
fn is_change_guard(cond: &str) -> bool {
    [
        "==",
        "!=",
        "is_none",
        "is_some",
        "contains_key",
        "<",
        ">",
        "!",
    ]
    .iter()
    .any(|t| cond.contains(t))
        || [
            "changed", "differ", "needs", "should", "stale", "outdated", "expired", "elapsed",
        ]
        .iter()
        .any(|w| cond.to_ascii_lowercase().contains(w))
}

fn contains_return(e: &impl ToTokens) -> bool {
    let c = compact(e);
    c.contains("return") || c.contains("continue") || c.contains("break")
}

/// The first variable in a token stream that comes from a parameter (not a field or method name after a `.`).
fn param_in_tokens(ts: TokenStream, vars: &HashMap<String, Var>) -> Option<usize> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Group(g) => {
                if let Some(p) = param_in_tokens(g.stream(), vars) {
                    return Some(p);
                }
            }
            TokenTree::Ident(id) => {
                let after_dot = i > 0 && toks[i - 1].to_string() == ".";
                if !after_dot && let Some(p) = vars.get(&id.to_string()).and_then(|v| v.from_param)
                {
                    return Some(p);
                }
            }
            _ => {}
        }
    }
    None
}

/// Finds a volatile call in a token stream: its span, text and the JSON key it sits under.
fn volatile_in_tokens(
    ts: TokenStream,
    vars: &HashMap<String, Var>,
    vfns: &HashMap<String, (Span, String)>,
    key: &mut Option<String>,
) -> Option<(proc_macro2::Span, String, Option<String>, Option<Span>)> {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut last_str: Option<String> = None;
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Literal(l) => {
                let s = l.to_string();
                if s.starts_with('"') && toks.get(i + 1).is_some_and(|n| n.to_string() == ":") {
                    last_str = Some(s.trim_matches('"').to_string());
                }
            }
            TokenTree::Group(g) => {
                let mut k = last_str.clone().or_else(|| key.clone());
                if let Some(hit) = volatile_in_tokens(g.stream(), vars, vfns, &mut k) {
                    return Some(hit);
                }
            }
            TokenTree::Ident(id) => {
                let name = id.to_string();
                // `Utc :: now`: ident, ':', ':', ident
                if let (Some(TokenTree::Punct(p1)), Some(TokenTree::Ident(f))) =
                    (toks.get(i + 1), toks.get(i + 3))
                    && p1.as_char() == ':'
                {
                    let fname = f.to_string();
                    if VOLATILE.iter().any(|(t, m)| *t == name && *m == fname) {
                        // From `Utc` to the call's closing parenthesis, so the whole call is underlined.
                        let whole = match toks.get(i + 4) {
                            Some(TokenTree::Group(args)) => id.span().join(args.span()),
                            _ => id.span().join(f.span()),
                        };
                        return Some((
                            whole.unwrap_or_else(|| id.span()),
                            format!("{name}::{fname}()"),
                            last_str.clone().or_else(|| key.clone()),
                            None,
                        ));
                    }
                }
                // A call of this file's function that returns a volatile value: `build_status(&obj)`.
                if let (Some((span, src)), Some(TokenTree::Group(g))) =
                    (vfns.get(&name), toks.get(i + 1))
                    && g.delimiter() == proc_macro2::Delimiter::Parenthesis
                {
                    return Some((
                        id.span(),
                        format!("{src} (in {name})"),
                        last_str.clone().or_else(|| key.clone()),
                        Some(span.clone()),
                    ));
                }
                let after_dot = i > 0 && toks[i - 1].to_string() == ".";
                if !after_dot
                    && let Some(v) = vars.get(&name)
                    && let Some((span, src, k)) = &v.volatile
                {
                    return Some((
                        id.span(),
                        src.clone(),
                        k.clone()
                            .or_else(|| last_str.clone())
                            .or_else(|| key.clone()),
                        Some(span.clone()),
                    ));
                }
            }
            TokenTree::Punct(_) => {}
        }
    }
    None
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
            model: FileModel {
                path: path.to_string(),
                ..Default::default()
            },
            fns: Vec::new(),
            scopes: Vec::new(),
            guards: 0,
            branches: 0,
            error_path: 0,
            block_writes: Vec::new(),
            change_branches: Vec::new(),
            blocking_ok: 0,
            retry_closure: 0,
            propagated: HashSet::new(),
            awaited: HashSet::new(),
            seen_chains: HashSet::new(),
            stmt_stack: Vec::new(),
        }
    }

    /// Runs the pre-pass (consts, CRDs, `Api<K>` fields) and the main walk.
    pub fn run(mut self, file: &'ast syn::File) -> FileModel {
        let mut pre = PrePass { ex: &mut self };
        pre.visit_file(file);
        self.model.consts = self.consts.iter().map(|(k, v)| (k.clone(), *v)).collect();
        self.visit_file(file);
        self.model
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

    fn var(&self, name: &str) -> Option<&Var> {
        self.fns.last()?.vars.get(name)
    }

    fn resolve_call_path(&self, p: &syn::Path) -> String {
        self.imports.resolve(&path_segments(p))
    }

    /// Does this expression denote a kube `Api`? Returns its kind if known.
    fn api_receiver(&self, e: &Expr) -> Option<Option<String>> {
        match e {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let v = self.var(&p.path.segments[0].ident.to_string())?;
                v.is_api.then(|| v.kind.clone())
            }
            Expr::Field(f) => {
                let name = match &f.member {
                    syn::Member::Named(i) => i.to_string(),
                    syn::Member::Unnamed(_) => return None,
                };
                self.api_fields.get(&name).map(|k| Some(k.clone()))
            }
            Expr::Reference(r) => self.api_receiver(&r.expr),
            Expr::Paren(p) => self.api_receiver(&p.expr),
            Expr::MethodCall(m) if m.method == "clone" || m.method == "as_ref" => {
                self.api_receiver(&m.receiver)
            }
            Expr::Call(c) => self.api_constructor(c),
            _ => None,
        }
    }

    /// `Api::namespaced(..)`, `Api::<K>::all(..)`, `Api::default_namespaced(..)`.
    fn api_constructor(&self, c: &syn::ExprCall) -> Option<Option<String>> {
        let Expr::Path(p) = &*c.func else {
            return None;
        };
        let segs = &p.path.segments;
        if segs.len() < 2 {
            return None;
        }
        let api_seg = &segs[segs.len() - 2];
        if api_seg.ident != "Api" {
            return None;
        }
        let ctor = segs[segs.len() - 1].ident.to_string();
        if !ctor.starts_with("namespaced")
            && !ctor.starts_with("all")
            && !ctor.starts_with("default_namespaced")
        {
            return None;
        }
        Some(first_type_argument_kind(&api_seg.arguments))
    }

    /// Is `p` the path of the kube function `name` (e.g. `watcher`)?
    fn is_kube_fn(&self, p: &syn::Path, names: &[&str]) -> bool {
        let Some(last) = p.segments.last() else {
            return false;
        };
        if !names.iter().any(|n| last.ident == n) {
            return false;
        }
        let resolved = self.resolve_call_path(p);
        if is_kube_path(&resolved) {
            return true;
        }
        let first = p.segments[0].ident.to_string();
        // A bare name or `watcher::watcher` with no explicit import may come in through a kube glob.
        !self.imports.is_imported(&first)
            && (p.segments.len() == 1 || first == "watcher" || first == "reflector")
            && self.imports.glob_from(&["kube", "kube_runtime"])
    }

    fn record_call_name(&mut self, p: &syn::Path) {
        let segs = path_segments(p);
        let Some(last) = segs.last().cloned() else {
            return;
        };
        let resolved = self.imports.resolve(&segs);
        let root = resolved.split("::").next().unwrap_or("");
        let external = segs.len() > 1 && EXTERNAL_ROOTS.contains(&root) && root != "crate";
        let is_type_ctor =
            segs.len() == 1 && last.chars().next().is_some_and(|c| c.is_ascii_uppercase());
        if !external
            && !is_type_ctor
            && let Some(f) = self.fns.last_mut()
        {
            f.model.calls.push(last);
        }
    }

    fn has_status(&self, e: &Expr, depth: usize) -> bool {
        if depth > 4 {
            return false;
        }
        match e {
            Expr::Reference(r) => self.has_status(&r.expr, depth + 1),
            Expr::Paren(p) => self.has_status(&p.expr, depth + 1),
            Expr::Macro(m) => macro_has_status_key(&m.mac),
            Expr::Call(c) => c.args.iter().any(|a| self.has_status(a, depth + 1)),
            Expr::MethodCall(m) => self.has_status(&m.receiver, depth + 1),
            Expr::Struct(s) => s.fields.iter().any(|f| {
                matches!(&f.member, syn::Member::Named(i) if i == "status")
                    && compact(&f.expr) != "None"
            }),
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let Some(v) = self.var(&p.path.segments[0].ident.to_string()) else {
                    return false;
                };
                v.status_set
                    || v.init
                        .as_ref()
                        .is_some_and(|i| self.has_status(i, depth + 1))
            }
            _ => false,
        }
    }

    /// The parameter (by position) that one of `nodes` is built from, through `let` bindings.
    fn param_in(&self, nodes: &[&Expr]) -> Option<usize> {
        let vars = &self.fns.last()?.vars;
        nodes
            .iter()
            .find_map(|n| param_in_tokens(n.to_token_stream(), vars))
    }

    fn find_volatile(&self, nodes: &[&Expr]) -> Option<(Span, String, Option<String>)> {
        let vars = &self.fns.last()?.vars;
        for n in nodes {
            let mut key = None;
            if let Some((sp, src, k, origin)) =
                volatile_in_tokens(n.to_token_stream(), vars, &self.volatile_fns, &mut key)
            {
                let span = origin.unwrap_or_else(|| self.span(sp));
                return Some((span, src, k));
            }
        }
        None
    }

    fn current_scope(&self) -> Option<Scope> {
        self.scopes.last().copied()
    }

    fn handle_api_call(&mut self, m: &syn::ExprMethodCall) {
        let method = m.method.to_string();
        if !WRITE_METHODS.contains(&method.as_str()) && !READ_METHODS.contains(&method.as_str()) {
            return;
        }
        let args: Vec<&Expr> = m.args.iter().collect();
        let args_text = compact(&m.args);
        let mut kind_known = self.api_receiver(&m.receiver);
        if method == "commit" {
            let via_var = root_var(&m.receiver)
                .and_then(|n| self.var(&n))
                .and_then(|v| v.init.as_ref())
                .is_some_and(|i| compact(i).contains(".entry("));
            if !compact(&m.receiver).contains(".entry(") && !via_var {
                return;
            }
            kind_known = Some(None);
        }
        let kind = match kind_known {
            Some(k) => k,
            None => {
                // An unknown receiver still counts when the arguments are kube's parameter types.
                let params = [
                    "PatchParams",
                    "PostParams",
                    "DeleteParams",
                    "ListParams",
                    "Patch::",
                ];
                if !params.iter().any(|p| args_text.contains(p)) {
                    return;
                }
                None
            }
        };
        let object_kind = self.fns.last().and_then(|f| f.model.object_kind.clone());
        // `let api = Api::namespaced(..)` without a type is inferred from use; in a reconcile
        // the object written is, as a rule, the reconciled one.
        let kind = kind.or(object_kind);
        let mk = key(m.method.span());
        let body_has_status = match method.as_str() {
            "patch" | "replace" => args.get(2).is_some_and(|b| self.has_status(b, 0)),
            _ => false,
        };
        let awaited = self.awaited.contains(&mk);
        let scope = self.current_scope();
        let call = ApiCall {
            method: method.clone(),
            span: start_end(self.path, m.method.span(), m.span()),
            kind,
            body_has_status,
            awaited_in_iteration: awaited && matches!(scope, Some(Scope::For | Scope::While)),
            in_retry: matches!(scope, Some(Scope::Loop | Scope::While)) || self.retry_closure > 0,
            propagated: self.propagated.contains(&mk),
            on_error: self.error_path > 0,
            after_change_on_branch: self.after_change_on_branch(),
            text: format!("{}.{}", compact(&m.receiver), method),
        };
        let is_body_write = matches!(
            method.as_str(),
            "patch" | "replace" | "patch_status" | "replace_status" | "patch_metadata"
        );
        if is_body_write && self.guards == 0 {
            let body: Vec<&Expr> = args.iter().skip(1).copied().collect();
            if let Some((span, source, key)) = self.find_volatile(&body)
                && let Some(f) = self.fns.last_mut()
            {
                f.model.volatile_writes.push(VolatileWrite {
                    span,
                    source,
                    write: call.clone(),
                    key,
                });
            } else if let Some(index) =
                self.param_in(body.last().map(std::slice::from_ref).unwrap_or(&[]))
                && let Some(f) = self.fns.last_mut()
            {
                f.model.param_writes.push((index, call.clone()));
            }
        }
        if let Some(f) = self.fns.last_mut() {
            f.model.api_calls.push(call);
        }
    }

    /// Flattens `a.b().c()` into its root and the method calls from the root outwards.
    fn chain<'e>(e: &'e Expr, out: &mut Vec<&'e syn::ExprMethodCall>) -> &'e Expr {
        match e {
            Expr::MethodCall(m) => {
                let root = Self::chain(&m.receiver, out);
                out.push(m);
                root
            }
            Expr::Await(a) => Self::chain(&a.base, out),
            Expr::Try(t) => Self::chain(&t.expr, out),
            Expr::Paren(p) => Self::chain(&p.expr, out),
            other => other,
        }
    }

    fn controller_root(&self, root: &Expr) -> Option<ControllerRoot> {
        match root {
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else { return None };
                let segs = &p.path.segments;
                // A crate function that builds and returns the Controller: `controller(api, cfg).run(..)`.
                if let Some(last) = segs.last()
                    && let Some((has_predicate, configured)) =
                        self.controller_builders.get(&last.ident.to_string())
                {
                    return Some(ControllerRoot::New {
                        span: c.span(),
                        kind: None,
                        has_predicate: *has_predicate,
                        hides_finalizers: false,
                        config: if *configured {
                            ConcurrencyConfig::Unknown
                        } else {
                            ConcurrencyConfig::Absent
                        },
                    });
                }
                if segs.len() < 2 {
                    return None;
                }
                let ty = &segs[segs.len() - 2];
                let ctor = segs[segs.len() - 1].ident.to_string();
                let resolved = self.imports.resolve(&[ty.ident.to_string()]);
                if ty.ident != "Controller" && !resolved.ends_with("::Controller") {
                    return None;
                }
                if !matches!(
                    ctor.as_str(),
                    "new"
                        | "new_with"
                        | "for_stream"
                        | "for_stream_with"
                        | "for_shared_stream"
                        | "for_shared_stream_with"
                ) {
                    return None;
                }
                let turbofish = first_type_argument_kind(&ty.arguments);
                let first = c.args.first();
                let mut kind = turbofish;
                let mut has_predicate = false;
                let mut hides_finalizers = false;
                if let Some(a) = first {
                    if kind.is_none() {
                        kind = self.api_receiver(a).flatten();
                    }
                    let mut text = compact(a);
                    if let Some(v) = root_var(a).and_then(|n| self.var(&n))
                        && let Some(init) = &v.init
                    {
                        text.push_str(&compact(init));
                    }
                    if ctor.starts_with("for_") {
                        has_predicate =
                            text.contains("predicate_filter") || text.contains(".predicate(");
                        // A generation-only filter drops the update that adds a finalizer.
                        hides_finalizers = has_predicate
                            && text.contains("generation")
                            && !text.contains("finalizers");
                        if kind.is_none() {
                            kind = self.kind_in_expr_vars(&text);
                        }
                    }
                }
                Some(ControllerRoot::New {
                    span: c.span(),
                    kind,
                    has_predicate,
                    hides_finalizers,
                    config: ConcurrencyConfig::Absent,
                })
            }
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let v = self.var(&p.path.segments[0].ident.to_string())?;
                v.controller.map(ControllerRoot::Var)
            }
            _ => None,
        }
    }

    fn kind_in_expr_vars(&self, text: &str) -> Option<String> {
        let f = self.fns.last()?;
        f.vars.iter().find_map(|(name, v)| {
            (v.is_api && v.kind.is_some() && contains_ident(text, name))
                .then(|| v.kind.clone())
                .flatten()
        })
    }

    fn concurrency_of(&self, arg: &Expr) -> ConcurrencyConfig {
        let mut text = compact(arg);
        if let Some(n) = root_var(arg)
            && let Some(v) = self.var(&n)
        {
            match &v.init {
                Some(i) => text = compact(i),
                None => return ConcurrencyConfig::Unknown,
            }
        }
        if let Some(i) = text.find(".concurrency(") {
            let rest = &text[i + ".concurrency(".len()..];
            let arg: String = rest.chars().take_while(|c| *c != ')').collect();
            return match arg.trim_end_matches("u16").parse::<u64>() {
                Ok(n) if n > 0 => ConcurrencyConfig::Limit(n),
                Ok(_) => ConcurrencyConfig::Default,
                Err(_) => ConcurrencyConfig::Unknown,
            };
        }
        if text.contains("default()") || text.contains("Default::default") {
            ConcurrencyConfig::Default
        } else {
            ConcurrencyConfig::Unknown
        }
    }

    fn handle_chain(&mut self, outer: &Expr) -> Option<usize> {
        let mut calls = Vec::new();
        let root = Self::chain(outer, &mut calls);
        self.handle_chain_parts(root, calls)
    }

    /// Records a Controller builder chain: its root and the method calls from the root outwards.
    fn handle_chain_parts(
        &mut self,
        root: &Expr,
        calls: Vec<&syn::ExprMethodCall>,
    ) -> Option<usize> {
        let croot = self.controller_root(root)?;
        let idx = match croot {
            ControllerRoot::New {
                span,
                kind,
                has_predicate,
                hides_finalizers,
                config,
            } => {
                let k = key(span);
                if !self.seen_chains.insert(k) {
                    return None;
                }
                let in_fn = self.fn_name();
                self.model.controllers.push(ControllerModel {
                    span: self.span(span),
                    in_fn,
                    kind,
                    has_predicate,
                    hides_finalizers,
                    config,
                    run: None,
                });
                self.model.controllers.len() - 1
            }
            ControllerRoot::Var(i) => {
                if let Some(first) = calls.first()
                    && !self.seen_chains.insert(key(first.method.span()))
                {
                    return Some(i);
                }
                i
            }
        };
        for m in calls {
            let name = m.method.to_string();
            match name.as_str() {
                "with_config" => {
                    if let Some(a) = m.args.first() {
                        let c = self.concurrency_of(a);
                        self.model.controllers[idx].config = c;
                    }
                }
                "run" => {
                    let fn_name = |e: Option<&Expr>| -> Option<String> {
                        match e? {
                            Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                            Expr::Closure(c) => first_called_name(&c.body),
                            // `backoff_reconciler!(reconcile_kanidm)`: a wrapper macro around the reconcile.
                            Expr::Macro(mac) => {
                                mac.mac.tokens.clone().into_iter().find_map(|t| match t {
                                    TokenTree::Ident(i) => Some(i.to_string()),
                                    _ => None,
                                })
                            }
                            _ => None,
                        }
                    };
                    // An error_policy written inline as a closure is judged where it stands.
                    let inline_policy = match m.args.iter().nth(1) {
                        Some(Expr::Closure(c)) => {
                            let exprs = match &*c.body {
                                Expr::Block(b) => collect_returns(&b.block),
                                other => vec![other.clone()],
                            };
                            match self.fns.last() {
                                Some(f) => exprs.iter().map(|e| self.requeue_of(e, f)).collect(),
                                None => Vec::new(),
                            }
                        }
                        _ => Vec::new(),
                    };
                    let run = RunCall {
                        span: start_end(self.path, m.method.span(), m.span()),
                        reconcile: fn_name(m.args.first()),
                        error_policy: match m.args.iter().nth(1) {
                            Some(Expr::Closure(_)) => None,
                            other => fn_name(other),
                        },
                        inline_policy,
                    };
                    self.model.controllers[idx].run = Some(run);
                }
                _ => {}
            }
        }
        Some(idx)
    }

    fn enter_fn(
        &mut self,
        name: String,
        self_ty: Option<String>,
        sig: &syn::Signature,
        span: proc_macro2::Span,
    ) {
        let mut ctx = FnCtx::default();
        let ret = compact(&sig.output);
        ctx.model.name = name;
        ctx.model.self_ty = self_ty;
        ctx.model.is_async = sig.asyncness.is_some();
        ctx.model.span = self.span(span);
        ctx.model.returns_action = ret.contains("Action");
        let mut first_typed = true;
        let typed = sig.inputs.iter().filter_map(|i| match i {
            FnArg::Typed(pt) => Some(pt),
            FnArg::Receiver(_) => None,
        });
        for (index, pt) in typed.enumerate() {
            let pname = pat_ident(&pt.pat).unwrap_or_default();
            ctx.params.insert(pname.clone());
            let api_kind = api_kind_of_type(&pt.ty);
            ctx.vars.insert(
                pname.clone(),
                Var {
                    is_api: api_kind.is_some(),
                    kind: api_kind.flatten(),
                    from_param: Some(index),
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
        ctx.model.returns = collect_returns(block)
            .into_iter()
            .map(|e| self.requeue_of(&e, &ctx))
            .collect();
        let body = compact(block);
        ctx.model.handles_conflict = handles_conflict(&body);
        ctx.model.clears_resource_version = body.contains("resource_version=None");
        ctx.model.uses_finalizer = body.contains("finalizer(&");
        // CA205: a watcher stream that is consumed here without a backoff anywhere on its way.
        if !ctx.watcher_candidates.is_empty() {
            let stmts = statement_texts(block);
            for (span, bound, stmt) in std::mem::take(&mut ctx.watcher_candidates) {
                if has_backoff(&stmt) || hands_to_controller(&stmt) {
                    continue;
                }
                let ok = match &bound {
                    Some(name) => {
                        let uses: Vec<&String> = stmts
                            .iter()
                            .filter(|s| contains_ident(s, name) && **s != stmt)
                            .collect();
                        let safe = uses
                            .iter()
                            .any(|s| has_backoff(s) || hands_to_controller(s));
                        let consumed = uses
                            .iter()
                            .any(|s| consumes(s, Some(name)) || consumes(s, None));
                        safe || !consumed
                    }
                    None => !consumes(&stmt, None),
                };
                if !ok {
                    self.model.unbacked_watchers.push(Site {
                        span,
                        what: "watcher".into(),
                        in_fn: ctx.model.name.clone(),
                    });
                }
            }
        }
        self.model.fns.push(ctx.model);
    }

    /// In a branch, right after a change: a write-like call earlier in the innermost block, or a branch taken on
    /// a write or a changed flag.
    fn after_change_on_branch(&self) -> bool {
        self.branches > 0
            && (self.block_writes.last() == Some(&true)
                || self.change_branches.last() == Some(&true))
    }

    /// Volatile values among a call's arguments, for the crate join to follow into the callee's writes. Not for
    /// kube's own verbs (their bodies are judged where they stand), not behind a compare-before-write guard, and on
    /// a branch only when a helper built the value (`build_status(..)`, which stamps it on every call).
    fn record_volatile_args<'e>(&mut self, callee: String, args: impl Iterator<Item = &'e Expr>) {
        if self.guards > 0
            || WRITE_METHODS.contains(&callee.as_str())
            || READ_METHODS.contains(&callee.as_str())
        {
            return;
        }
        let branches = self.branches;
        let found: Vec<VolatileArg> = args
            .enumerate()
            .filter_map(|(index, a)| {
                let (span, source, key) = self.find_volatile(&[a])?;
                if branches > 0 && !source.contains(" (in ") {
                    return None;
                }
                Some(VolatileArg {
                    callee: callee.clone(),
                    index,
                    span,
                    source,
                    key,
                })
            })
            .collect();
        if let Some(f) = self.fns.last_mut() {
            f.model.volatile_args.extend(found);
        }
    }

    /// A write-like call in the innermost block: what follows in it comes after a change.
    fn mark_write(&mut self) {
        if let Some(b) = self.block_writes.last_mut() {
            *b = true;
        }
    }

    /// Visits `e` as part of an error path.
    fn visit_on_error_path(&mut self, e: &'ast Expr) {
        self.error_path += 1;
        self.visit_expr(e);
        self.error_path -= 1;
    }

    /// Records the requeue `e` builds (an `Action::requeue` or a `ReconcilerAction`) in the current fn,
    /// marked conditional when it stands inside a branch.
    fn record_requeue(&mut self, e: &Expr) {
        let conditional = self.branches > 0;
        let on_error = self.error_path > 0;
        let after_change =
            self.block_writes.last() == Some(&true) || self.change_branches.last() == Some(&true);
        let r = self.fns.last().and_then(|f| self.requeue_of(e, f));
        if let (Some(mut r), Some(f)) = (r, self.fns.last_mut()) {
            r.conditional = conditional;
            r.on_error = on_error;
            r.after_change = after_change;
            f.model.requeues.push(r);
        }
    }

    fn requeue_of(&self, e: &Expr, ctx: &FnCtx) -> Option<Requeue> {
        let locals = |n: &str| ctx.vars.get(n).and_then(|v| v.init.clone());
        match e {
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else { return None };
                let t = compact(&p.path);
                if t.ends_with("Action::requeue") {
                    let arg = c.args.first()?;
                    let (secs, unresolved) = self.const_duration(arg, &locals);
                    return Some(Requeue {
                        span: self.span(c.span()),
                        secs,
                        unresolved,
                        conditional: false,
                        on_error: false,
                        after_change: false,
                        text: compact(c),
                    });
                }
                if (t == "Ok" || t.ends_with("::Ok")) && c.args.len() == 1 {
                    return self.requeue_of(&c.args[0], ctx);
                }
                None
            }
            Expr::Struct(s) if compact(&s.path).ends_with("ReconcilerAction") => {
                let f = s
                    .fields
                    .iter()
                    .find(|f| matches!(&f.member, syn::Member::Named(i) if i == "requeue_after"))?;
                let d = match &f.expr {
                    Expr::Call(c) if compact(&c.func) == "Some" => c.args.first()?,
                    _ => return None,
                };
                let (secs, unresolved) = self.const_duration(d, &locals);
                Some(Requeue {
                    span: self.span(f.span()),
                    secs,
                    unresolved,
                    conditional: false,
                    on_error: false,
                    after_change: false,
                    text: compact(f),
                })
            }
            _ => None,
        }
    }

    /// A requeue duration in seconds if this file makes it a constant; otherwise its text for the
    /// crate join, unless it is jittered (then it is deliberately not a constant).
    fn const_duration(
        &self,
        arg: &Expr,
        locals: &dyn Fn(&str) -> Option<Expr>,
    ) -> (Option<f64>, Option<String>) {
        let text = compact(arg);
        if text.contains("rand") || text.contains("jitter") {
            return (None, None);
        }
        match duration_secs(arg, &self.consts, locals) {
            Some(s) => (Some(s), None),
            None => (None, Some(text)),
        }
    }

    fn with_scope<F: FnOnce(&mut Self)>(&mut self, s: Scope, f: F) {
        self.scopes.push(s);
        f(self);
        self.scopes.pop();
    }
}

enum ControllerRoot {
    New {
        span: proc_macro2::Span,
        kind: Option<String>,
        has_predicate: bool,
        hides_finalizers: bool,
        config: ConcurrencyConfig,
    },
    Var(usize),
}

fn contains_ident(text: &str, name: &str) -> bool {
    let b = text.as_bytes();
    let mut start = 0;
    while let Some(i) = text[start..].find(name) {
        let i = start + i;
        let before =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.');
        let j = i + name.len();
        let after = j >= b.len() || !(b[j].is_ascii_alphanumeric() || b[j] == b'_');
        if before && after {
            return true;
        }
        start = j;
    }
    false
}

/// Code that recognises a 409 Conflict: `code == 409`, `is_conflict()`, `reason == "Conflict"`.
fn handles_conflict(code: &str) -> bool {
    code.contains("409")
        || code.contains("is_conflict")
        || code.contains("\"Conflict\"")
        || code.contains("CONFLICT")
}

fn has_backoff(stmt: &str) -> bool {
    stmt.contains("backoff(") || stmt.contains("StreamBackoff") || stmt.contains("default_backoff")
}

fn hands_to_controller(stmt: &str) -> bool {
    stmt.contains("for_stream")
        || stmt.contains("owns_stream")
        || stmt.contains("watches_stream")
        || stmt.contains("Controller::")
}

fn consumes(stmt: &str, name: Option<&str>) -> bool {
    let consumers = [
        ".for_each(",
        ".try_for_each(",
        ".next()",
        ".try_next()",
        ".for_each_concurrent(",
        ".collect::<",
        "spawn(",
    ];
    match name {
        None => consumers.iter().any(|c| stmt.contains(c)),
        Some(n) => {
            consumers.iter().any(|c| stmt.contains(&format!("{n}{c}")))
                || stmt.contains(&format!("spawn({n}"))
                || stmt.contains(&format!("pin_mut!({n})")) && stmt.contains("next()")
        }
    }
}

/// The last segment of a path as a string: `patch_status` of `api.patch_status`'s callee, `json` of `serde_json::json!`.
fn last_ident(p: &syn::Path) -> String {
    p.segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

/// Name prefixes of calls that change something: the kube write verbs and the helpers operators wrap them in
/// (`ensure_secret`, `patch_phase`, `add_finalizer`, `scale_desired`).
const WRITE_LIKE_PREFIXES: &[&str] = &[
    "patch", "apply", "create", "update", "ensure", "delete", "remove", "add_", "set_", "write",
    "scale", "replace", "upsert",
];

fn is_write_like(name: &str) -> bool {
    WRITE_METHODS.contains(&name) || WRITE_LIKE_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// An `if` condition that says the branch runs because something was just written or changed: a write-like call
/// in it (`if ensure_admin_secret(..).await? {`) or a flag named for it (`if require_status_update {`).
fn signals_change(cond: &Expr) -> bool {
    let text = compact(cond).to_ascii_lowercase();
    let flag = [
        "changed",
        "require_status_update",
        "updated",
        "modified",
        "created",
        "applied",
    ]
    .iter()
    .any(|w| text.contains(w));
    let calls = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '('))
        .filter_map(|w| w.split_once('(').map(|(name, _)| name))
        .any(|name| !name.is_empty() && is_write_like(name));
    flag || calls
}

/// `Err(..)` (or `Err(_) | …`) as a match arm's pattern.
fn is_err_pattern(p: &Pat) -> bool {
    match p {
        Pat::TupleStruct(t) => last_ident(&t.path) == "Err",
        Pat::Or(o) => o.cases.iter().all(is_err_pattern),
        Pat::Ident(i) => i.subpat.as_ref().is_some_and(|(_, p)| is_err_pattern(p)),
        _ => false,
    }
}

/// `if let Err(..) = …`: the branch runs when something failed. (`if x.is_err()` is left out: operators use it for
/// "not there yet", a wait rather than a retry.)
fn is_error_condition(cond: &Expr) -> bool {
    match cond {
        Expr::Let(l) => is_err_pattern(&l.pat),
        Expr::Paren(p) => is_error_condition(&p.expr),
        _ => false,
    }
}

fn macro_has_status_key(m: &syn::Macro) -> bool {
    let last = last_ident(&m.path);
    if last != "json" {
        return false;
    }
    // The body is `{ "k": v, ... }`: look at the top level keys of the outermost object.
    let toks: Vec<TokenTree> = m.tokens.clone().into_iter().collect();
    let obj = match toks.as_slice() {
        [TokenTree::Group(g)] if g.delimiter() == proc_macro2::Delimiter::Brace => g.stream(),
        _ => return false,
    };
    let toks: Vec<TokenTree> = obj.into_iter().collect();
    let mut at_key = true;
    for (i, t) in toks.iter().enumerate() {
        match t {
            TokenTree::Punct(p) if p.as_char() == ',' => at_key = true,
            TokenTree::Literal(l) if at_key => {
                if l.to_string() == "\"status\""
                    && toks.get(i + 1).is_some_and(|n| n.to_string() == ":")
                {
                    return true;
                }
                at_key = false;
            }
            _ => at_key = false,
        }
    }
    false
}

/// The name of the first function called in a closure body (`|o, c| reconcile(o, c)`).
fn first_called_name(e: &Expr) -> Option<String> {
    struct F(Option<String>);
    impl<'ast> Visit<'ast> for F {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if self.0.is_none()
                && let Expr::Path(p) = &*c.func
            {
                self.0 = p.path.segments.last().map(|s| s.ident.to_string());
            }
            visit::visit_expr_call(self, c);
        }
    }
    let mut f = F(None);
    f.visit_expr(e);
    f.0
}

/// The text of every statement of a function body, nested blocks and closures included, nested
/// item functions (which are functions of their own) not.
fn statement_texts(block: &syn::Block) -> Vec<String> {
    struct S(Vec<String>);
    impl<'ast> Visit<'ast> for S {
        fn visit_stmt(&mut self, s: &'ast Stmt) {
            self.0.push(compact(s));
            visit::visit_stmt(self, s);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut s = S(Vec::new());
    s.visit_block(block);
    s.0
}

/// Every value a function body can return: the tail (through if/match/blocks) and `return` exprs.
fn collect_returns(block: &syn::Block) -> Vec<Expr> {
    fn tails(e: &Expr, out: &mut Vec<Expr>) {
        match e {
            Expr::If(i) => {
                tails_block(&i.then_branch, out);
                if let Some((_, el)) = &i.else_branch {
                    tails(el, out);
                }
            }
            Expr::Match(m) => m.arms.iter().for_each(|a| tails(&a.body, out)),
            Expr::Block(b) => tails_block(&b.block, out),
            Expr::Paren(p) => tails(&p.expr, out),
            Expr::Return(_) => {}
            other => out.push(other.clone()),
        }
    }
    fn tails_block(b: &syn::Block, out: &mut Vec<Expr>) {
        if let Some(Stmt::Expr(e, None)) = b.stmts.last() {
            tails(e, out);
        }
    }
    struct R(Vec<Expr>);
    impl<'ast> Visit<'ast> for R {
        fn visit_expr_return(&mut self, r: &'ast syn::ExprReturn) {
            if let Some(e) = &r.expr {
                tails(e, &mut self.0);
            }
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_item_fn(&mut self, _: &'ast syn::ItemFn) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    }
    let mut out = Vec::new();
    tails_block(block, &mut out);
    let mut r = R(Vec::new());
    r.visit_block(block);
    out.extend(r.0);
    out
}

/// Collects what needs the whole file before the main walk: consts, CRD types, `Api<K>` fields.
struct PrePass<'x, 'a, 'ast> {
    ex: &'x mut Extractor<'a, 'ast>,
}

impl PrePass<'_, '_, '_> {
    /// Records `name` when its body calls a volatile source and it returns something that can carry the value
    /// (not `()`, `bool`, an `Action` or a duration).
    fn volatile_fn(&mut self, name: String, sig: &syn::Signature, block: &syn::Block) {
        // Trait methods every type has: a call `x.default()` or `T::new()` says nothing about which one runs.
        if matches!(
            name.as_str(),
            "default" | "new" | "from" | "into" | "clone" | "fmt"
        ) {
            return;
        }
        let ret = match &sig.output {
            syn::ReturnType::Default => return,
            syn::ReturnType::Type(_, t) => compact(t),
        };
        if ret == "bool"
            || ["Action", "Duration", "Instant"]
                .iter()
                .any(|t| ret.contains(t))
        {
            return;
        }
        let mut v = UnconditionalVolatile {
            branches: 0,
            found: None,
        };
        v.visit_block(block);
        if let Some((sp, src)) = v.found {
            let span = self.ex.span(sp);
            self.ex.volatile_fns.insert(name, (span, src));
        }
    }
}

/// The first volatile call of a function body that runs whatever the branch: one inside an `if` or `match` arm is
/// how a value is kept unless something changed (a condition's transition time), so it does not count.
struct UnconditionalVolatile {
    branches: usize,
    found: Option<(proc_macro2::Span, String)>,
}

impl<'ast> Visit<'ast> for UnconditionalVolatile {
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if self.found.is_none()
            && self.branches == 0
            && let Expr::Path(p) = &*c.func
            && p.path.segments.len() >= 2
        {
            let n = p.path.segments.len();
            let (ty, f) = (
                p.path.segments[n - 2].ident.to_string(),
                p.path.segments[n - 1].ident.to_string(),
            );
            if VOLATILE.iter().any(|(t, m)| *t == ty && *m == f) {
                let span = c
                    .func
                    .span()
                    .join(c.paren_token.span.close())
                    .unwrap_or_else(|| c.func.span());
                self.found = Some((span, format!("{ty}::{f}()")));
            }
        }
        visit::visit_expr_call(self, c);
    }

    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        self.visit_expr(&i.cond);
        self.branches += 1;
        self.visit_block(&i.then_branch);
        if let Some((_, e)) = &i.else_branch {
            self.visit_expr(e);
        }
        self.branches -= 1;
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        self.visit_expr(&m.expr);
        self.branches += 1;
        for arm in &m.arms {
            self.visit_expr(&arm.body);
        }
        self.branches -= 1;
    }

    fn visit_item_fn(&mut self, _: &'ast syn::ItemFn) {}
}

impl<'ast> Visit<'ast> for PrePass<'_, '_, '_> {
    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        let v = number(&c.expr, &self.ex.consts)
            .or_else(|| duration_secs(&c.expr, &self.ex.consts, &|_| None));
        if let Some(v) = v {
            self.ex.consts.insert(c.ident.to_string(), v);
        }
    }
    fn visit_item_static(&mut self, c: &'ast syn::ItemStatic) {
        if let Some(v) = duration_secs(&c.expr, &self.ex.consts, &|_| None) {
            self.ex.consts.insert(c.ident.to_string(), v);
        }
    }
    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        for f in &s.fields {
            if let (Some(name), Some(Some(kind))) = (&f.ident, api_kind_of_type(&f.ty)) {
                self.ex.api_fields.insert(name.to_string(), kind);
            }
        }
        let derives_cr = s
            .attrs
            .iter()
            .any(|a| a.path().is_ident("derive") && compact(&a.meta).contains("CustomResource"));
        if derives_cr {
            let mut kind = None;
            let mut has_status = false;
            for a in s.attrs.iter().filter(|a| a.path().is_ident("kube")) {
                let t = a.meta.to_token_stream().to_string();
                if let Some(k) = attr_value(&t, "kind") {
                    kind = Some(k);
                }
                if attr_value(&t, "status").is_some() {
                    has_status = true;
                }
            }
            if let Some(kind) = kind {
                let span = self.ex.span(s.ident.span());
                self.ex.model.crds.push(CrdDecl {
                    kind,
                    has_status,
                    span,
                });
            }
        }
        visit::visit_item_struct(self, s);
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_code(&f.attrs) {
            self.volatile_fn(f.sig.ident.to_string(), &f.sig, &f.block);
        }
        let ret = compact(&f.sig.output);
        if ret.starts_with("->Controller<") || ret.contains("::Controller<") {
            let body = compact(&f.block);
            self.ex.controller_builders.insert(
                f.sig.ident.to_string(),
                (
                    body.contains("predicate_filter"),
                    body.contains(".with_config("),
                ),
            );
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.volatile_fn(f.sig.ident.to_string(), &f.sig, &f.block);
    }
}

/// `kind = "Widget"` inside `kube(...)` attribute text.
fn attr_value(text: &str, key: &str) -> Option<String> {
    let mut rest = text;
    while let Some(i) = rest.find(key) {
        let before_ok = i == 0
            || !rest.as_bytes()[i - 1].is_ascii_alphanumeric() && rest.as_bytes()[i - 1] != b'_';
        let after = rest[i + key.len()..].trim_start();
        if before_ok && let Some(v) = after.strip_prefix('=') {
            let v = v.trim_start();
            if let Some(v) = v.strip_prefix('"') {
                return v
                    .split('"')
                    .next()
                    .map(|s| s.rsplit("::").next().unwrap_or(s).to_string());
            }
        }
        rest = &rest[i + key.len()..];
    }
    None
}

/// `#[cfg(test)]`, `#[test]`, `#[tokio::test]`: test code does odd things on purpose.
fn is_test_code(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let path = compact(a.path());
        path == "test"
            || path.ends_with("::test")
            || (path == "cfg" && compact(&a.meta).contains("cfg(test)"))
    })
}

impl<'ast> Visit<'ast> for Extractor<'_, 'ast> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_code(&m.attrs) {
            visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if is_test_code(&f.attrs) {
            return;
        }
        self.enter_fn(f.sig.ident.to_string(), None, &f.sig, f.sig.ident.span());
        visit::visit_item_fn(self, f);
        self.exit_fn(&f.block);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let self_ty = compact(&i.self_ty);
        for item in &i.items {
            if let syn::ImplItem::Fn(f) = item {
                self.enter_fn(
                    f.sig.ident.to_string(),
                    Some(self_ty.clone()),
                    &f.sig,
                    f.sig.ident.span(),
                );
                visit::visit_impl_item_fn(self, f);
                self.exit_fn(&f.block);
            } else {
                visit::visit_impl_item(self, item);
            }
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.enter_fn(f.sig.ident.to_string(), None, &f.sig, f.sig.ident.span());
            visit::visit_trait_item_fn(self, f);
            self.exit_fn(block);
        }
    }

    fn visit_stmt(&mut self, s: &'ast Stmt) {
        self.stmt_stack.push(s);
        visit::visit_stmt(self, s);
        self.stmt_stack.pop();
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.block_writes.push(false);
        let saved = self.guards;
        for (i, s) in b.stmts.iter().enumerate() {
            self.visit_stmt(s);
            // `if nothing_changed { return ... }` guards everything after it in this block.
            if let Stmt::Expr(Expr::If(ifx), _) = s
                && ifx.else_branch.is_none()
                && is_change_guard(&compact(&ifx.cond))
                && contains_return(&ifx.then_branch)
            {
                self.guards += 1;
            }
            if let Stmt::Local(l) = s
                && let Some(init) = &l.init
                && let Some((_, diverge)) = &init.diverge
                && contains_return(diverge)
            {
                // `let Some(x) = … else { return }`: a presence guard.
                self.guards += 1;
            }
            // A sync guard held across a later `.await` in the same block (CA305).
            if let Stmt::Local(l) = s
                && let Some(init) = &l.init
            {
                let t = compact(&init.expr);
                // The guard itself, not a block that takes and drops one inside.
                let is_chain = matches!(&*init.expr, Expr::MethodCall(_) | Expr::Try(_));
                let sync_lock = is_chain
                    && [".lock()", ".write()", ".read()"].iter().any(|l| {
                        t.ends_with(l)
                            || t.ends_with(&format!("{l}.unwrap()"))
                            || t.ends_with(&format!("{l}?"))
                            || t.contains(&format!("{l}.expect("))
                    })
                    && !t.contains(".await");
                if sync_lock && let Some(g) = pat_ident(&l.pat) {
                    let rest = &b.stmts[i + 1..];
                    let mut across = false;
                    for r in rest {
                        let rt = compact(r);
                        if rt.contains(&format!("drop({g})")) {
                            break;
                        }
                        if rt.contains(".await") {
                            across = true;
                            break;
                        }
                    }
                    if across && self.blocking_ok == 0 {
                        let span = self.span(l.span());
                        if let Some(f) = self.fns.last_mut() {
                            f.model.blocking.push(Site {
                                span,
                                what: format!("std Mutex guard `{g}` held across .await"),
                                in_fn: f.model.name.clone(),
                            });
                        }
                    }
                }
            }
        }
        self.guards = saved;
        self.block_writes.pop();
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        visit::visit_local(self, l);
        let mut names = Vec::new();
        pat_idents(&l.pat, &mut names);
        let Some(init) = &l.init else {
            return;
        };
        let expr = &*init.expr;
        let ty_api = match &l.pat {
            Pat::Type(pt) => api_kind_of_type(&pt.ty),
            _ => None,
        };
        let api = ty_api.or_else(|| {
            let mut calls = Vec::new();
            let root = Self::chain(expr, &mut calls);
            match root {
                Expr::Call(c) if calls.iter().all(|m| m.method == "clone") => {
                    self.api_constructor(c)
                }
                other if calls.is_empty() || calls.iter().all(|m| m.method == "clone") => {
                    self.api_receiver(other)
                }
                _ => None,
            }
        });
        let volatile = self.find_volatile(&[expr]);
        let from_param = self.param_in(&[expr]);
        let status_set = self.has_status(expr, 0) && names.len() == 1;
        let controller = if let Expr::Path(_) | Expr::MethodCall(_) | Expr::Call(_) = expr {
            let mut calls = Vec::new();
            let root = Self::chain(expr, &mut calls);
            match self.controller_root(root) {
                Some(ControllerRoot::New { span, .. }) => self
                    .model
                    .controllers
                    .iter()
                    .position(|c| c.span == to_span(self.path, span)),
                Some(ControllerRoot::Var(i)) => Some(i),
                None => None,
            }
        } else {
            None
        };
        let object_kind = self.fns.last().and_then(|f| f.model.object_kind.clone());
        if let Some(f) = self.fns.last_mut() {
            for n in &names {
                let mut v = Var {
                    init: (names.len() == 1).then(|| expr.clone()),
                    volatile: volatile.clone(),
                    from_param,
                    status_set,
                    controller,
                    ..Default::default()
                };
                if let Some(kind) = &api {
                    v.is_api = true;
                    v.kind = kind.clone().or_else(|| object_kind.clone());
                }
                f.vars.insert(n.clone(), v);
            }
        }
    }

    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        visit::visit_expr_assign(self, a);
        let Some(root) = root_var(&a.left) else {
            return;
        };
        let lhs = compact(&a.left);
        let volatile = self.find_volatile(&[&a.right]);
        let sets_status = lhs.ends_with(".status") && compact(&a.right) != "None";
        if let Some(f) = self.fns.last_mut()
            && let Some(v) = f.vars.get_mut(&root)
        {
            if let Some(vol) = volatile {
                v.volatile = Some(vol);
            }
            if sets_status {
                v.status_set = true;
            }
        }
        // `c = c.owns(..)` on a controller variable.
        if let Expr::MethodCall(_) = &*a.right {
            self.handle_chain(&a.right);
        }
    }

    fn visit_expr_try(&mut self, t: &'ast syn::ExprTry) {
        if let Some(k) = call_key(propagation_target(&t.expr)) {
            self.propagated.insert(k);
        }
        visit::visit_expr_try(self, t);
    }

    fn visit_expr_await(&mut self, a: &'ast syn::ExprAwait) {
        if let Some(k) = call_key(&a.base) {
            self.awaited.insert(k);
        }
        visit::visit_expr_await(self, a);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let method = m.method.to_string();
        if matches!(method.as_str(), "unwrap" | "expect")
            && let Some(k) = call_key(propagation_target(&m.receiver))
        {
            self.propagated.insert(k);
        }
        let mut calls = Vec::new();
        let root = Self::chain(&m.receiver, &mut calls);
        calls.push(m);
        self.handle_chain_parts(root, calls);
        self.handle_api_call(m);
        if is_write_like(&method) {
            self.mark_write();
        }
        self.record_volatile_args(method.clone(), m.args.iter());
        if let Some(f) = self.fns.last_mut() {
            match &*m.receiver {
                Expr::Path(p) if p.path.is_ident("self") => f.model.self_calls.push(method.clone()),
                _ => f.model.method_calls.push(method.clone()),
            }
        }
        // `annotations.insert(KEY, Utc::now()..)` makes `annotations` volatile, under that key.
        if !WRITE_METHODS.contains(&method.as_str())
            && let Some(root) = root_var(&m.receiver)
        {
            let args: Vec<&Expr> = m.args.iter().collect();
            if let Some((span, src, key)) = self.find_volatile(&args) {
                let key = key.or_else(|| match args.first() {
                    Some(Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    })) if args.len() > 1 => Some(s.value()),
                    Some(e) if args.len() > 1 => Some(
                        compact(e)
                            .trim_matches('"')
                            .trim_end_matches(".into()")
                            .trim_end_matches(".to_string()")
                            .trim_matches('"')
                            .to_string(),
                    ),
                    _ => None,
                });
                if let Some(f) = self.fns.last_mut()
                    && let Some(v) = f.vars.get_mut(&root)
                {
                    v.volatile = Some((span, src, key));
                }
            }
        }
        if method == "block_on" && self.blocking_ok == 0 {
            let span = self.span(m.method.span());
            if let Some(f) = self.fns.last_mut() {
                f.model.blocking.push(Site {
                    span,
                    what: "block_on".into(),
                    in_fn: f.model.name.clone(),
                });
            }
        }
        // CA402
        if method == "with_label_values" || method == "get_or_create" {
            for a in &m.args {
                self.check_labels(a);
            }
        }
        // The closure of an error-mapping method runs on the error path only.
        let error_args = match method.as_str() {
            "map_err" | "or_else" | "unwrap_or_else" | "inspect_err" => m.args.len(),
            "map_or_else" => 1,
            _ => 0,
        };
        self.visit_expr(&m.receiver);
        for (i, a) in m.args.iter().enumerate() {
            if i < error_args {
                self.visit_on_error_path(a);
            } else {
                self.visit_expr(a);
            }
        }
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        let mut spawn_blocking = false;
        let mut retry = false;
        if let Expr::Path(p) = &*c.func {
            self.record_call_name(&p.path);
            if is_write_like(&last_ident(&p.path)) {
                self.mark_write();
            }
            self.record_volatile_args(last_ident(&p.path), c.args.iter());
            let resolved = self.resolve_call_path(&p.path);
            let last = last_ident(&p.path);
            spawn_blocking = matches!(last.as_str(), "spawn_blocking" | "block_in_place");
            retry = last.to_ascii_lowercase().contains("retry");
            // CA305
            let blocking = resolved == "std::thread::sleep"
                || resolved.starts_with("std::fs::")
                || resolved.starts_with("std::process::Command")
                || resolved.starts_with("reqwest::blocking::")
                || resolved.ends_with("executor::block_on")
                || (last == "block_on" && p.path.segments.len() == 1);
            if blocking && self.blocking_ok == 0 {
                let span = self.span(c.span());
                let what = resolved.clone();
                if let Some(f) = self.fns.last_mut() {
                    f.model.blocking.push(Site {
                        span,
                        what,
                        in_fn: f.model.name.clone(),
                    });
                }
            }
            // CA203 and CA204 requeues
            if last == "requeue" && compact(&p.path).ends_with("Action::requeue") {
                self.record_requeue(&Expr::Call(c.clone()));
            }
            // CA205
            if self.is_kube_fn(&p.path, &["watcher", "metadata_watcher"]) {
                let span = self.span(c.span());
                let (stmt, bound) = match self.stmt_stack.last() {
                    Some(st) => {
                        let bound = match st {
                            Stmt::Local(l) => pat_ident(&l.pat),
                            _ => None,
                        };
                        (compact(*st), bound)
                    }
                    None => (String::new(), None),
                };
                if let Some(f) = self.fns.last_mut() {
                    f.watcher_candidates.push((span, bound, stmt));
                }
            }
            self.handle_alias_call(c, &resolved, &last);
            if last == "new"
                && compact(&p.path).ends_with("KeyValue::new")
                && let Some(v) = c.args.iter().nth(1)
            {
                self.check_label_value(v);
            }
        }
        if spawn_blocking {
            self.blocking_ok += 1;
        }
        if retry {
            self.retry_closure += 1;
        }
        let err_value = matches!(&*c.func, Expr::Path(p) if last_ident(&p.path) == "Err");
        self.error_path += usize::from(err_value);
        visit::visit_expr_call(self, c);
        self.error_path -= usize::from(err_value);
        if spawn_blocking {
            self.blocking_ok -= 1;
        }
        if retry {
            self.retry_closure -= 1;
        }
    }

    fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
        if compact(&s.path).ends_with("ReconcilerAction") {
            self.record_requeue(&Expr::Struct(s.clone()));
        }
        visit::visit_expr_struct(self, s);
    }

    fn visit_expr_macro(&mut self, m: &'ast syn::ExprMacro) {
        self.check_metric_macro(&m.mac);
        visit::visit_expr_macro(self, m);
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        self.check_metric_macro(&m.mac);
        visit::visit_stmt_macro(self, m);
    }

    fn visit_expr_if(&mut self, i: &'ast syn::ExprIf) {
        self.visit_expr(&i.cond);
        let guard = is_change_guard(&compact(&i.cond));
        if guard {
            self.guards += 1;
        }
        self.branches += 1;
        let on_error = is_error_condition(&i.cond);
        self.error_path += usize::from(on_error);
        self.change_branches.push(signals_change(&i.cond));
        self.visit_block(&i.then_branch);
        self.change_branches.pop();
        self.error_path -= usize::from(on_error);
        if let Some((_, e)) = &i.else_branch {
            self.visit_expr(e);
        }
        self.branches -= 1;
        if guard {
            self.guards -= 1;
        }
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        self.visit_expr(&m.expr);
        self.branches += 1;
        for arm in &m.arms {
            if let Some((_, g)) = &arm.guard {
                self.visit_expr(g);
            }
            if is_err_pattern(&arm.pat) {
                self.visit_on_error_path(&arm.body);
            } else {
                self.visit_expr(&arm.body);
            }
        }
        self.branches -= 1;
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.check_tenant_loop(f);
        self.visit_expr(&f.expr);
        // `for attempt in 1..=n { … 409 … }` is a bounded retry, not an iteration over objects.
        let retry = matches!(&*f.expr, Expr::Range(_)) && handles_conflict(&compact(&f.body));
        let scope = if retry { Scope::Loop } else { Scope::For };
        self.with_scope(scope, |s| s.visit_block(&f.body));
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        let is_let = matches!(&*w.cond, Expr::Let(_));
        if !is_let {
            self.check_poll_loop(w.while_token.span, &w.body);
        }
        self.visit_expr(&w.cond);
        self.with_scope(Scope::While, |s| s.visit_block(&w.body));
    }

    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        self.check_poll_loop(l.loop_token.span, &l.body);
        self.with_scope(Scope::Loop, |s| s.visit_block(&l.body));
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        let saved = self.branches;
        self.branches = 0;
        self.with_scope(Scope::Closure, |s| visit::visit_expr_closure(s, c));
        self.branches = saved;
    }

    fn visit_expr_async(&mut self, a: &'ast syn::ExprAsync) {
        self.with_scope(Scope::Closure, |s| visit::visit_expr_async(s, a));
    }
}

impl Extractor<'_, '_> {
    /// A call of a wrapper named in `[aliases]` counts as the kube call it wraps.
    fn handle_alias_call(&mut self, c: &syn::ExprCall, resolved: &str, last: &str) {
        let method = self
            .aliases
            .get(resolved)
            .or_else(|| self.aliases.get(last))
            .or_else(|| {
                self.aliases
                    .iter()
                    .find(|(k, _)| k.rsplit("::").next() == Some(last))
                    .map(|(_, v)| v)
            });
        let Some(method) = method.cloned() else {
            return;
        };
        let args: Vec<&Expr> = c.args.iter().collect();
        let body_has_status = matches!(method.as_str(), "patch" | "replace")
            && args.last().is_some_and(|b| self.has_status(b, 0));
        let kind = self.fns.last().and_then(|f| f.model.object_kind.clone());
        let k = key(c.func.span());
        let scope = self.current_scope();
        let call = ApiCall {
            method,
            span: to_span(self.path, c.span()),
            kind,
            body_has_status,
            awaited_in_iteration: self.awaited.contains(&k)
                && matches!(scope, Some(Scope::For | Scope::While)),
            in_retry: matches!(scope, Some(Scope::Loop | Scope::While)) || self.retry_closure > 0,
            propagated: self.propagated.contains(&k),
            on_error: self.error_path > 0,
            after_change_on_branch: self.after_change_on_branch(),
            text: compact(&c.func),
        };
        if let Some(f) = self.fns.last_mut() {
            f.model.api_calls.push(call);
        }
    }

    fn check_label_value(&mut self, v: &Expr) {
        let t = compact(v);
        let direct = is_unbounded_label(&t);
        let via_var = root_var(v)
            .and_then(|n| self.var(&n))
            .and_then(|var| var.init.as_ref())
            .is_some_and(|i| is_unbounded_label(&compact(i)));
        if direct || via_var {
            let span = self.span(v.span());
            let in_fn = self.fn_name();
            self.model.metric_labels.push(Site {
                span,
                what: t,
                in_fn,
            });
        }
    }

    fn check_labels(&mut self, arg: &Expr) {
        match arg {
            Expr::Reference(r) => self.check_labels(&r.expr),
            Expr::Array(a) => a.elems.iter().for_each(|e| self.check_label_value(e)),
            Expr::Struct(s) => s
                .fields
                .iter()
                .for_each(|f| self.check_label_value(&f.expr)),
            Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                if let Ok(a) = m.mac.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                ) {
                    a.iter().for_each(|e| self.check_labels(e));
                }
            }
            Expr::Tuple(t) => {
                if let Some(v) = t.elems.iter().nth(1) {
                    self.check_label_value(v);
                }
            }
            Expr::Path(p) if p.path.segments.len() == 1 => {
                if let Some(init) = self
                    .var(&p.path.segments[0].ident.to_string())
                    .and_then(|v| v.init.clone())
                    && matches!(init, Expr::Struct(_) | Expr::Array(_))
                {
                    self.check_labels(&init);
                }
            }
            other => self.check_label_value(other),
        }
    }

    fn check_metric_macro(&mut self, m: &syn::Macro) {
        let last = last_ident(&m.path);
        if !matches!(
            last.as_str(),
            "counter" | "gauge" | "histogram" | "increment_counter" | "increment_gauge"
        ) {
            return;
        }
        // metrics crate: `counter!("name", "label" => value, ...)`
        let toks: Vec<TokenTree> = m.tokens.clone().into_iter().collect();
        let mut parts: Vec<Vec<TokenTree>> = vec![Vec::new()];
        for t in toks {
            if matches!(&t, TokenTree::Punct(p) if p.as_char() == ',') {
                parts.push(Vec::new());
            } else if let Some(p) = parts.last_mut() {
                p.push(t);
            }
        }
        for part in parts {
            let pos = part.windows(2).position(|w| {
                matches!((&w[0], &w[1]), (TokenTree::Punct(a), TokenTree::Punct(b)) if a.as_char() == '=' && b.as_char() == '>')
            });
            if let Some(i) = pos {
                let value: TokenStream = part[i + 2..].iter().cloned().collect();
                if let Ok(e) = syn::parse2::<Expr>(value) {
                    self.check_label_value(&e);
                }
            }
        }
    }

    fn check_poll_loop(&mut self, span: proc_macro2::Span, body: &syn::Block) {
        let t = compact(body);
        let sleeps = t.contains("sleep(") || t.contains(".tick()");
        // A loop that writes, or handles 409, is a retry with a pause, not polling.
        let writes = [
            ".replace(",
            ".replace_status(",
            ".patch(",
            ".patch_status(",
            ".create(",
        ]
        .iter()
        .any(|w| t.contains(w));
        if !sleeps || writes || handles_conflict(&t) {
            return;
        }
        let Some(f) = self.fns.last() else { return };
        let reads = f.vars.iter().any(|(n, v)| {
            v.is_api
                && READ_METHODS
                    .iter()
                    .any(|m| t.contains(&format!("{n}.{m}(")))
        }) || (t.contains("Api::") && (t.contains(".list(") || t.contains(".get(")));
        if reads {
            let span = self.span(span);
            let in_fn = self.fn_name();
            self.model.poll_loops.push(Site {
                span,
                what: "loop".into(),
                in_fn,
            });
        }
    }

    fn check_tenant_loop(&mut self, f: &syn::ExprForLoop) {
        let body = compact(&f.body);
        let spawns = [
            "spawn(",
            ".push(",
            "JoinSet",
            "FuturesUnordered",
            "join_all",
        ]
        .iter()
        .any(|s| body.contains(s));
        let mut loop_vars = Vec::new();
        pat_idents(&f.pat, &mut loop_vars);
        if !spawns {
            return;
        }
        // Only loops over namespaces or tenants: one watcher per kind is how controllers are built.
        let iter_text =
            format!("{} {}", loop_vars.join(" "), compact(&f.expr)).to_ascii_lowercase();
        let tenantish = [
            "namespace",
            "tenant",
            "workspace",
            "team",
            "project",
            "cluster",
            "org",
        ]
        .iter()
        .any(|w| iter_text.contains(w))
            || loop_vars
                .iter()
                .any(|v| v == "ns" || v.starts_with("ns_") || v.ends_with("_ns"));
        let calls = namespaced_api_calls(&body);
        let ns_from_loop = calls.iter().any(|i| {
            let args: String = body[*i..].chars().take_while(|c| *c != ';').collect();
            loop_vars.iter().any(|v| contains_ident(&args, v))
        });
        if ns_from_loop {
            if let Some(span) = find_controller_build(&f.body) {
                let span = self.span(span);
                let in_fn = self.fn_name();
                if let Some(fc) = self.fns.last_mut() {
                    fc.model.tenant_controllers.push(Site {
                        span,
                        what: "Controller".into(),
                        in_fn,
                    });
                }
            }
            return;
        }
        if !tenantish {
            return;
        }
        // One call away: `spawn(run_tenant(client.clone(), ns))`.
        struct Calls<'v>(Vec<(String, proc_macro2::Span)>, &'v [String]);
        impl<'ast> Visit<'ast> for Calls<'_> {
            fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
                if let Expr::Path(p) = &*c.func
                    && let Some(last) = p.path.segments.last()
                {
                    let args = compact(&c.args);
                    if self.1.iter().any(|v| contains_ident(&args, v)) {
                        self.0.push((last.ident.to_string(), c.span()));
                    }
                }
                visit::visit_expr_call(self, c);
            }
        }
        let mut calls = Calls(Vec::new(), &loop_vars);
        calls.visit_block(&f.body);
        let list: Vec<(String, Span)> = calls
            .0
            .into_iter()
            .map(|(n, s)| (n, self.span(s)))
            .collect();
        if let Some(fc) = self.fns.last_mut() {
            fc.model.tenant_loop_calls.extend(list);
        }
    }
}

/// Byte offsets of `Api::namespaced(`/`Api::<K>::namespaced_with(` calls in compact text.
fn namespaced_api_calls(body: &str) -> Vec<usize> {
    body.match_indices("::namespaced")
        .filter(|(i, _)| {
            let start = i.saturating_sub(48);
            body.get(start..*i)
                .is_some_and(|before| before.contains("Api"))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The span of a `Controller::new(`/`Controller::for_stream(`/`watcher(` call in a block.
fn find_controller_build(b: &syn::Block) -> Option<proc_macro2::Span> {
    struct F(Option<proc_macro2::Span>);
    impl<'ast> Visit<'ast> for F {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if self.0.is_none()
                && let Expr::Path(p) = &*c.func
            {
                let t = compact(&p.path);
                if t.ends_with("Controller::new")
                    || t.contains("Controller::for_stream")
                    || t.ends_with("watcher")
                {
                    self.0 = Some(c.span());
                }
            }
            visit::visit_expr_call(self, c);
        }
    }
    let mut f = F(None);
    f.visit_block(b);
    f.0
}

/// Marks a function that builds a Controller/watcher from `Api::namespaced(_, param)`.
pub fn mark_namespaced_builders(model: &mut FileModel, file: &syn::File, path: &str) {
    struct V<'m> {
        model: &'m mut FileModel,
        path: String,
    }
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            let body = compact(&f.block);
            let calls = namespaced_api_calls(&body);
            if !calls.is_empty() {
                let params: Vec<String> = f
                    .sig
                    .inputs
                    .iter()
                    .filter_map(|i| match i {
                        FnArg::Typed(t) => pat_ident(&t.pat),
                        FnArg::Receiver(_) => None,
                    })
                    .collect();
                let ns_from_param = params.iter().any(|p| {
                    calls.iter().any(|i| {
                        let tail: String = body[*i..].chars().take(160).collect();
                        let args = tail.split(')').next().unwrap_or("");
                        contains_ident(args, p)
                    })
                });
                if ns_from_param && let Some(span) = find_controller_build(&f.block) {
                    let name = f.sig.ident.to_string();
                    let span = to_span(&self.path, span);
                    if let Some(m) = self.model.fns.iter_mut().find(|m| m.name == name) {
                        m.builds_namespaced_controller = Some(Site {
                            span,
                            what: "Controller".into(),
                            in_fn: name,
                        });
                    }
                }
            }
            visit::visit_item_fn(self, f);
        }
    }
    let mut v = V {
        model,
        path: path.to_string(),
    };
    v.visit_file(file);
}
