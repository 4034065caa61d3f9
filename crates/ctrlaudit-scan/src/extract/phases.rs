//! Phases as data (`sema::PhaseSet`, `CallCtx::phase_arm`, `ApiCall::leaves_phase`): the enum variants a match
//! arm takes and a `phase`/`state` field is set to, so that the crate join tells a step that moves the object to
//! its next phase from a pass that stays where it is.

use super::*;

impl<'ast> Extractor<'_, 'ast> {
    /// Visits an arm with its enum variants as the phase it runs in (see `CallCtx::phase_arm`).
    pub(super) fn in_phase_arm<T>(&mut self, pat: &Pat, visit: impl FnOnce(&mut Self) -> T) -> T {
        let typed = typed_variants(pat);
        let frame = !typed.is_empty();
        if frame {
            self.phase_arms.push((typed, false));
        }
        let out = visit(self);
        if frame {
            self.phase_arms.pop();
        }
        out
    }

    /// `Status { phase: Some(Phase::Running), .. }`.
    pub(super) fn note_phase_fields(&mut self, s: &syn::ExprStruct) {
        for f in &s.fields {
            if let syn::Member::Named(n) = &f.member {
                self.note_phase_set(&n.to_string(), &f.expr);
            }
        }
    }

    /// `status.phase = Phase::Running`.
    pub(super) fn note_phase_assign(&mut self, a: &syn::ExprAssign) {
        if let Expr::Field(f) = &*a.left
            && let syn::Member::Named(n) = &f.member
        {
            self.note_phase_set(&n.to_string(), &a.right);
        }
    }

    /// A `return` other than a failure's (`return Err(..)`, an error path): what follows it in the function may
    /// not run on a routine pass (see `PhaseSet::unconditional`).
    pub(super) fn note_return(&mut self, r: &syn::ExprReturn) {
        let fails = r.expr.as_deref().is_some_and(|e| {
            matches!(e, Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if last_ident(&p.path) == "Err"))
        });
        if !fails
            && self.error_path == 0
            && self.current_scope() != Some(Scope::Closure)
            && let Some(f) = self.fns.last_mut()
        {
            f.returned_early = true;
        }
    }

    /// A phase or state field (`phase`, `state`, `stage`, `*_phase`, `*_state`) set to an enum variant, by a
    /// struct literal's field or an assignment: recorded for the crate join, and marks the enclosing phase arm as
    /// one that moves the object on when it sets another variant of the enum it matched.
    pub(super) fn note_phase_set(&mut self, field: &str, value: &Expr) {
        let f = field.to_ascii_lowercase();
        let phase_field = matches!(f.as_str(), "phase" | "state" | "stage")
            || f.ends_with("_phase")
            || f.ends_with("_state");
        if !phase_field {
            return;
        }
        let Some(to) = variant_value(value) else {
            return;
        };
        // The innermost arm on the same enum is the phase this code runs in.
        if let Some((arm, moved)) = self
            .phase_arms
            .iter_mut()
            .rev()
            .find(|(arm, _)| arm.iter().any(|v| enum_of(v) == enum_of(&to)))
            && leaves_phase(arm, &to)
        {
            *moved = true;
        }
        let Some(f) = self.fns.last_mut() else {
            return;
        };
        let unconditional = self.branches == 0 && !f.returned_early;
        f.model.phase_sets.push(PhaseSet { to, unconditional });
    }
}

/// The variants an arm's pattern matches, as `Type::Variant`, through `Some(..)`, `&` and `|`; `None` beside
/// variants of one enum as that enum's `None` (an object with no phase yet): `Some(Phase::Pending) | None` →
/// `Phase::Pending`, `Phase::None`.
fn typed_variants(p: &Pat) -> Vec<String> {
    let mut v = pattern_variants(p);
    if let Some(i) = v.iter().position(|x| x == "None") {
        let enums: HashSet<&str> = v
            .iter()
            .filter_map(|x| x.split_once("::").map(|(e, _)| e))
            .collect();
        let only = (enums.len() == 1)
            .then(|| enums.into_iter().next())
            .flatten();
        match only.map(|e| format!("{e}::None")) {
            Some(none) => v[i] = none,
            None => {
                v.remove(i);
            }
        }
    }
    v
}

fn pattern_variants(p: &Pat) -> Vec<String> {
    match p {
        Pat::Path(x) if x.path.segments.len() >= 2 => vec![type_variant(&x.path)],
        Pat::Ident(i) if i.ident == "None" && i.subpat.is_none() => vec!["None".to_string()],
        Pat::TupleStruct(t) if t.path.segments.len() >= 2 => vec![type_variant(&t.path)],
        Pat::TupleStruct(t) if t.path.is_ident("Some") && t.elems.len() == 1 => {
            t.elems.iter().flat_map(pattern_variants).collect()
        }
        Pat::Struct(s) if s.path.segments.len() >= 2 => vec![type_variant(&s.path)],
        Pat::Or(o) => o.cases.iter().flat_map(pattern_variants).collect(),
        Pat::Reference(r) => pattern_variants(&r.pat),
        Pat::Paren(x) => pattern_variants(&x.pat),
        _ => Vec::new(),
    }
}

/// `Type::Variant` of a path's last two segments.
fn type_variant(p: &syn::Path) -> String {
    let n = p.segments.len();
    format!("{}::{}", p.segments[n - 2].ident, p.segments[n - 1].ident)
}

/// The enum variant an expression is, through `Some(..)`, `.into()`, `.clone()` and `&`: `Some(Phase::Running)`
/// → `Phase::Running`. Both segments capitalised, as a type and its variant are (not `Utc::now`); not `Self::X`,
/// whose type the pattern side would not spell the same way.
fn variant_value(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() >= 2 => {
            let n = p.path.segments.len();
            let ty = p.path.segments[n - 2].ident.to_string();
            let var = p.path.segments[n - 1].ident.to_string();
            let capital = |s: &str| s.starts_with(|c: char| c.is_ascii_uppercase());
            (capital(&ty) && capital(&var) && ty != "Self").then(|| type_variant(&p.path))
        }
        Expr::Call(c)
            if c.args.len() == 1
                && matches!(&*c.func, Expr::Path(f) if f.path.is_ident("Some")) =>
        {
            c.args.first().and_then(variant_value)
        }
        Expr::MethodCall(m)
            if m.args.is_empty()
                && matches!(m.method.to_string().as_str(), "into" | "clone" | "to_owned") =>
        {
            variant_value(&m.receiver)
        }
        Expr::Reference(r) => variant_value(&r.expr),
        Expr::Paren(x) => variant_value(&x.expr),
        _ => None,
    }
}
