//! Small questions asked of syntax trees: names in paths and patterns, the kind a type names, returns, attributes.

use super::*;

/// Methods whose result is a yes/no answer about their receiver.
const PREDICATES: &[&str] = &[
    "all",
    "any",
    "contains",
    "contains_key",
    "ends_with",
    "eq",
    "ge",
    "gt",
    "is_after",
    "is_before",
    "is_empty",
    "is_err",
    "is_none",
    "is_none_or",
    "is_ok",
    "is_positive",
    "is_negative",
    "is_some",
    "is_some_and",
    "is_zero",
    "le",
    "lt",
    "ne",
    "starts_with",
];

/// An expression whose value is a yes/no answer: a comparison, a negation, a predicate method, or a `map`, closure
/// or block whose result is one. A volatile value it reads (`Timestamp::now()` against a certificate's expiry) does
/// not flow out of it.
pub(super) fn yields_plain(e: &Expr) -> bool {
    use syn::BinOp;
    match e {
        Expr::Binary(b) => matches!(
            b.op,
            BinOp::Lt(_)
                | BinOp::Le(_)
                | BinOp::Gt(_)
                | BinOp::Ge(_)
                | BinOp::Eq(_)
                | BinOp::Ne(_)
                | BinOp::And(_)
                | BinOp::Or(_)
        ),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Not(_)),
        Expr::Paren(p) => yields_plain(&p.expr),
        Expr::Block(b) => block_yields_plain(&b.block),
        Expr::Closure(c) => yields_plain(&c.body),
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            PREDICATES.contains(&name.as_str())
                || (matches!(name.as_str(), "map" | "and_then" | "map_or" | "map_or_else")
                    && m.args.last().is_some_and(yields_plain))
        }
        _ => false,
    }
}

fn block_yields_plain(b: &syn::Block) -> bool {
    matches!(b.stmts.last(), Some(Stmt::Expr(e, None)) if yields_plain(e))
}

/// The call whose error an enclosing `?`/`unwrap()` propagates, through `.await` and error mapping.
pub(super) fn propagation_target(e: &Expr) -> &Expr {
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
pub(super) fn root_var(e: &Expr) -> Option<String> {
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
pub(super) fn path_segments(p: &syn::Path) -> Vec<String> {
    p.segments.iter().map(|s| s.ident.to_string()).collect()
}
/// The `K` in `Api<K>`, `&Api<K>`, `Arc<Api<K>>`.
pub(super) fn api_kind_of_type(ty: &Type) -> Option<Option<String>> {
    // Most types name no `Api`: they are not printed to find out (a type from a macro's tokens still is).
    if !may_name_api(ty) {
        return None;
    }
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
/// An argument whose tokens name at most one variable and nothing else (see [`plain_arg`]).
pub(super) enum PlainArg<'e> {
    /// A literal that holds no text (a number, `true`, a byte string): nothing flows through it.
    Inert,
    /// `obj`, `&obj`, `&mut obj`.
    Var(&'e proc_macro2::Ident),
}
/// The argument as a variable or an inert literal, when it is only that: what it carries is known without
/// printing and searching its tokens. Attributes and text literals (`"{now}"` names bindings) are not plain.
pub(super) fn plain_arg(e: &Expr) -> Option<PlainArg<'_>> {
    match e {
        Expr::Lit(l) if l.attrs.is_empty() => {
            (!matches!(l.lit, syn::Lit::Str(_) | syn::Lit::Verbatim(_))).then_some(PlainArg::Inert)
        }
        Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => {
            p.path.get_ident().map(PlainArg::Var)
        }
        Expr::Reference(r) if r.attrs.is_empty() => plain_arg(&r.expr),
        _ => None,
    }
}
/// Whether `ty` names an `Api` type somewhere, or may (a macro's tokens are not looked into).
fn may_name_api(ty: &Type) -> bool {
    struct Finds(bool);
    impl Visit<'_> for Finds {
        fn visit_ident(&mut self, i: &proc_macro2::Ident) {
            self.0 |= i == "Api";
        }
        fn visit_macro(&mut self, _: &syn::Macro) {
            self.0 = true;
        }
        fn visit_type(&mut self, t: &Type) {
            match t {
                Type::Verbatim(_) => self.0 = true,
                _ if !self.0 => visit::visit_type(self, t),
                _ => {}
            }
        }
    }
    let mut f = Finds(false);
    f.visit_type(ty);
    f.0
}
/// The object type of a reconcile-shaped first parameter: `Arc<K>`, `&K`, `K`.
pub(super) fn object_kind_of_type(ty: &Type) -> Option<String> {
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
pub(super) fn first_type_argument_kind(args: &syn::PathArguments) -> Option<String> {
    match args {
        syn::PathArguments::AngleBracketed(a) => a.args.first().and_then(|g| match g {
            syn::GenericArgument::Type(t) => object_kind_of_type(t),
            _ => None,
        }),
        _ => None,
    }
}
pub(super) fn pat_ident(p: &Pat) -> Option<String> {
    match p {
        Pat::Ident(i) => Some(i.ident.to_string()),
        Pat::Type(t) => pat_ident(&t.pat),
        Pat::Reference(r) => pat_ident(&r.pat),
        _ => None,
    }
}
pub(super) fn pat_idents(p: &Pat, out: &mut Vec<String>) {
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
pub(super) fn contains_return(e: &impl ToTokens) -> bool {
    let c = compact(e);
    c.contains("return") || c.contains("continue") || c.contains("break")
}
pub(super) fn contains_ident(text: &str, name: &str) -> bool {
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
/// The last segment of a path as a string: `patch_status` of `api.patch_status`'s callee, `json` of `serde_json::json!`.
pub(super) fn last_ident(p: &syn::Path) -> String {
    p.segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}
/// `Err(..)` (or `Err(_) | …`) as a match arm's pattern.
/// Does this arm end by failing: `return Err(..)` among its statements, or `Err(..)` as its value?
pub(super) fn arm_fails(e: &Expr) -> bool {
    let is_err = |e: &Expr| matches!(e, Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if last_ident(&p.path) == "Err"));
    let returns_err =
        |e: &Expr| matches!(e, Expr::Return(r) if r.expr.as_deref().is_some_and(is_err));
    match e {
        Expr::Block(b) => block_fails(&b.block),
        other => is_err(other) || returns_err(other),
    }
}

/// [`arm_fails`] for a block.
pub(super) fn block_fails(b: &syn::Block) -> bool {
    b.stmts.iter().any(|s| match s {
        Stmt::Expr(e, _) => arm_fails(e) && !matches!(e, Expr::Block(_)),
        _ => false,
    })
}

/// The variants a pattern takes, by last path segment: `A::B | A::C(_)` gives `B`, `C`.
pub(super) fn variant_names(p: &Pat) -> Vec<String> {
    match p {
        Pat::Path(x) if x.path.segments.len() >= 2 => vec![last_ident(&x.path)],
        Pat::TupleStruct(t) if t.path.segments.len() >= 2 => vec![last_ident(&t.path)],
        Pat::Struct(s) if s.path.segments.len() >= 2 => vec![last_ident(&s.path)],
        Pat::Or(o) => o.cases.iter().flat_map(variant_names).collect(),
        _ => Vec::new(),
    }
}

/// `Type::Variant`, `Type::Variant(..)`, `Type::Variant { .. }`, alone or in an `|`.
pub(super) fn is_variant_pattern(p: &Pat) -> bool {
    match p {
        Pat::Path(x) => x.path.segments.len() >= 2,
        Pat::TupleStruct(t) => t.path.segments.len() >= 2,
        Pat::Struct(s) => s.path.segments.len() >= 2,
        Pat::Or(o) => o.cases.iter().any(is_variant_pattern),
        _ => false,
    }
}

pub(super) fn is_err_pattern(p: &Pat) -> bool {
    match p {
        Pat::TupleStruct(t) => last_ident(&t.path) == "Err",
        Pat::Or(o) => o.cases.iter().all(is_err_pattern),
        Pat::Ident(i) => i.subpat.as_ref().is_some_and(|(_, p)| is_err_pattern(p)),
        _ => false,
    }
}
/// A finalizer's `Event::Cleanup(obj)` arm (kube-rs `finalizer::Event`, or a crate's own enum of that shape).
pub(super) fn is_cleanup_pattern(p: &Pat) -> bool {
    match p {
        Pat::TupleStruct(t) => last_ident(&t.path) == "Cleanup",
        Pat::Struct(s) => last_ident(&s.path) == "Cleanup",
        Pat::Path(p) => last_ident(&p.path) == "Cleanup",
        Pat::Or(o) => o.cases.iter().all(is_cleanup_pattern),
        _ => false,
    }
}

/// Whether an `if` condition asks if the object is being deleted: `Some(true)` when the then-branch runs on
/// deletion (`deletion_timestamp.is_some()`, `if let Some(_) = meta.deletion_timestamp`), `Some(false)` when the
/// else-branch does (`deletion_timestamp.is_none()`), `None` when it is not about deletion.
pub(super) fn deletion_condition(cond: &Expr, text: &str) -> Option<bool> {
    if !text.contains("deletion_timestamp") {
        return None;
    }
    // Only a condition that is about deletion alone: `a && deletion_timestamp…` says little about either branch.
    if text.contains("&&") || text.contains("||") {
        return None;
    }
    let negated = matches!(cond, Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)));
    let none = text.contains("is_none()");
    Some(negated == none)
}

/// `if let Err(..) = …`: the branch runs when something failed. (`if x.is_err()` is left out: operators use it for
/// "not there yet", a wait rather than a retry.)
pub(super) fn is_error_condition(cond: &Expr) -> bool {
    match cond {
        Expr::Let(l) => is_err_pattern(&l.pat),
        Expr::Paren(p) => is_error_condition(&p.expr),
        // A let chain, `if !todo.is_empty() && let Err(e) = apply(..).await`: the branch runs on the failure.
        Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
            is_error_condition(&b.left) || is_error_condition(&b.right)
        }
        _ => false,
    }
}
/// The name of the first function called in a closure body (`|o, c| reconcile(o, c)`).
pub(super) fn first_called_name(e: &Expr) -> Option<String> {
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
pub(super) fn statement_texts(block: &syn::Block) -> Vec<String> {
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
/// The values a function body ends with: its tail, through if/match/blocks.
pub(super) fn collect_tails(block: &syn::Block) -> Vec<Expr> {
    let mut out = Vec::new();
    tails_block(block, &mut out);
    out
}
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
/// Every value a function body can return: the tail (through if/match/blocks) and `return` exprs.
pub(super) fn collect_returns(block: &syn::Block) -> Vec<Expr> {
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
    let mut out = collect_tails(block);
    let mut r = R(Vec::new());
    r.visit_block(block);
    out.extend(r.0);
    out
}
/// `kind = "Widget"` inside `kube(...)` attribute text.
pub(super) fn attr_value(text: &str, key: &str) -> Option<String> {
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
/// The extent of a call, from its first token to its closing parenthesis, without printing the call (and every
/// argument, closures and async blocks included) back to tokens as `Spanned::span` does.
pub(super) fn call_extent(c: &syn::ExprCall) -> proc_macro2::Span {
    let start = match &*c.func {
        Expr::Path(p) if c.attrs.is_empty() && p.attrs.is_empty() => match (&p.qself, &p.path) {
            (Some(q), _) => Some(q.lt_token.span),
            (None, path) => match &path.leading_colon {
                Some(colon) => Some(colon.spans[0]),
                None => path.segments.first().map(|s| s.ident.span()),
            },
        },
        _ => None,
    };
    match start {
        Some(s) => s.join(c.paren_token.span.close()).unwrap_or(s),
        None => c.span(),
    }
}

/// `#[cfg(test)]`, `#[test]`, `#[tokio::test]`: test code does odd things on purpose.
pub(super) fn is_test_code(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let path = a.path();
        path.segments.last().is_some_and(|s| s.ident == "test")
            || (path.is_ident("cfg") && compact(&a.meta).contains("cfg(test)"))
    })
}

/// A plain identifier: `phase`, not `0`, `self.x` or an empty string.
pub(super) fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The bindings a format string names inline: `year` and `month` in `"{year:04}-{month:02}"`.
pub(super) fn inline_format_args(lit: &str) -> impl Iterator<Item = &str> {
    lit.split('{')
        .skip(1)
        .filter_map(|p| p.split(['}', ':']).next())
        .filter(|n| is_ident(n))
}

/// The types of a turbofish, by last path segment: `[ARecord]` of `::<ARecord>`, `[Pod]` of `::<core::v1::Pod>`;
/// what is not a plain path (a reference, a tuple) is `_`.
pub(super) fn turbofish(
    args: &syn::punctuated::Punctuated<syn::GenericArgument, syn::Token![,]>,
) -> Vec<String> {
    args.iter()
        .filter_map(|a| match a {
            syn::GenericArgument::Type(Type::Path(t)) => Some(
                t.path
                    .segments
                    .last()
                    .map_or_else(|| "_".to_string(), |s| s.ident.to_string()),
            ),
            syn::GenericArgument::Type(_) => Some("_".to_string()),
            _ => None,
        })
        .collect()
}

/// Whether a token is the punctuation character `c` (without printing it: a group prints all it holds).
pub(super) fn is_punct(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}
