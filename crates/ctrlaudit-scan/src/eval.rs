//! Small constant evaluation: durations and numbers written the ways controller authors write them.

use quote::ToTokens;
use std::collections::HashMap;
use syn::{BinOp, Expr, Lit};

/// Compact token text of a syntax node: `Utc::now()` rather than `Utc :: now ()`. A space stays
/// only between two word characters, so that `match watcher` does not become `matchwatcher`.
pub fn compact(node: &impl ToTokens) -> String {
    let raw = node.to_token_stream().to_string();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let chars: Vec<char> = raw.chars().collect();
    let mut out = String::with_capacity(raw.len());
    for (i, c) in chars.iter().enumerate() {
        if *c == ' ' {
            let prev = out.chars().last();
            let next = chars.get(i + 1).copied();
            if prev.is_some_and(word) && next.is_some_and(word) {
                out.push(' ');
            }
        } else {
            out.push(*c);
        }
    }
    out
}

/// Evaluates a numeric expression made of literals, consts, casts and arithmetic.
pub fn number(expr: &Expr, consts: &HashMap<String, f64>) -> Option<f64> {
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse::<u64>().ok().map(|v| v as f64),
            Lit::Float(f) => f.base10_parse::<f64>().ok(),
            _ => None,
        },
        Expr::Paren(p) => number(&p.expr, consts),
        Expr::Group(g) => number(&g.expr, consts),
        Expr::Cast(c) => number(&c.expr, consts),
        Expr::Path(p) => {
            let name = p.path.segments.last()?.ident.to_string();
            consts.get(&name).copied()
        }
        // `RETRY_DELAY.as_secs()`, `a.min(b)` of two constants.
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "as_secs" | "as_secs_f64" | "as_secs_f32" => {
                duration_secs(&m.receiver, consts, &|_| None)
            }
            "as_millis" => duration_secs(&m.receiver, consts, &|_| None).map(|s| s * 1e3),
            "min" => Some(number(&m.receiver, consts)?.min(number(m.args.first()?, consts)?)),
            "max" => Some(number(&m.receiver, consts)?.max(number(m.args.first()?, consts)?)),
            _ => None,
        },
        Expr::Binary(b) => {
            let l = number(&b.left, consts)?;
            let r = number(&b.right, consts)?;
            match b.op {
                BinOp::Add(_) => Some(l + r),
                BinOp::Sub(_) => Some(l - r),
                BinOp::Mul(_) => Some(l * r),
                BinOp::Div(_) if r != 0.0 => Some(l / r),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Evaluates a `Duration` expression to seconds: `Duration::from_secs(5)`, `from_millis(500)`,
/// `Duration::new(1, 0)`, a const, `5 * 60` inside. `None` when computed at run time or jittered.
pub fn duration_secs(
    expr: &Expr,
    consts: &HashMap<String, f64>,
    locals: &dyn Fn(&str) -> Option<Expr>,
) -> Option<f64> {
    match expr {
        Expr::Paren(p) => duration_secs(&p.expr, consts, locals),
        Expr::Group(g) => duration_secs(&g.expr, consts, locals),
        Expr::Reference(r) => duration_secs(&r.expr, consts, locals),
        Expr::Path(p) if p.path.segments.len() == 1 => {
            let name = p.path.segments[0].ident.to_string();
            if let Some(v) = consts.get(&name) {
                return Some(*v);
            }
            let init = locals(&name)?;
            duration_secs(&init, consts, &|_| None)
        }
        Expr::Path(p) => {
            let name = p.path.segments.last()?.ident.to_string();
            match name.as_str() {
                "ZERO" => Some(0.0),
                "SECOND" => Some(1.0),
                "MILLISECOND" => Some(0.001),
                _ => consts.get(&name).copied(),
            }
        }
        Expr::Call(c) => {
            let Expr::Path(p) = &*c.func else {
                return None;
            };
            let f = p.path.segments.last()?.ident.to_string();
            // A bare name may be a local or a parameter that `locals` knows: `from_secs(secs)`.
            let arg = |i: usize| {
                let a = c.args.iter().nth(i)?;
                number(a, consts).or_else(|| match a {
                    Expr::Path(p) => number(&locals(&p.path.get_ident()?.to_string())?, consts),
                    _ => None,
                })
            };
            match f.as_str() {
                "from_secs" | "from_secs_f64" | "from_secs_f32" => arg(0),
                "from_millis" => arg(0).map(|v| v / 1e3),
                "from_micros" => arg(0).map(|v| v / 1e6),
                "from_nanos" => arg(0).map(|v| v / 1e9),
                "from_mins" => arg(0).map(|v| v * 60.0),
                "from_hours" => arg(0).map(|v| v * 3600.0),
                "new" if compact(&p.path).ends_with("Duration::new") => {
                    Some(arg(0)? + arg(1).unwrap_or(0.0) / 1e9)
                }
                // `Duration::seconds(5)` (chrono/time)
                "seconds" => arg(0),
                "minutes" => arg(0).map(|v| v * 60.0),
                _ => None,
            }
        }
        Expr::Binary(b) => {
            // Duration * n, Duration + Duration
            let l = duration_secs(&b.left, consts, locals);
            let r = duration_secs(&b.right, consts, locals);
            match (l, r, &b.op) {
                (Some(l), Some(r), BinOp::Add(_)) => Some(l + r),
                (Some(l), None, BinOp::Mul(_)) => Some(l * number(&b.right, consts)?),
                (None, Some(r), BinOp::Mul(_)) => Some(r * number(&b.left, consts)?),
                (Some(l), None, BinOp::Div(_)) => {
                    let d = number(&b.right, consts)?;
                    (d != 0.0).then(|| l / d)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// An upper bound of a duration that is computed but capped: `Duration::from_secs(left.min(5).max(1))` is at
/// most 5 s, whatever `left` is. `None` when nothing caps it.
pub fn duration_at_most(expr: &Expr, consts: &HashMap<String, f64>) -> Option<f64> {
    if let Some(s) = duration_secs(expr, consts, &|_| None) {
        return Some(s);
    }
    match expr {
        Expr::Call(c) => {
            let Expr::Path(p) = &*c.func else {
                return None;
            };
            let scale = match p.path.segments.last()?.ident.to_string().as_str() {
                "from_secs" | "from_secs_f64" | "from_secs_f32" | "seconds" => 1.0,
                "from_millis" => 1e-3,
                _ => return None,
            };
            Some(number_at_most(c.args.first()?, consts)? * scale)
        }
        Expr::MethodCall(m) if m.method == "min" => {
            let cap = duration_at_most(m.args.first()?, consts);
            let own = duration_at_most(&m.receiver, consts);
            cap.into_iter().chain(own).reduce(f64::min)
        }
        _ => None,
    }
}

/// [`duration_at_most`] for a number: `x.min(5)` is at most 5; `.max(1)` after it keeps the cap.
fn number_at_most(expr: &Expr, consts: &HashMap<String, f64>) -> Option<f64> {
    if let Some(v) = number(expr, consts) {
        return Some(v);
    }
    match expr {
        Expr::Paren(p) => number_at_most(&p.expr, consts),
        // `if converged { 300 } else { 10 }`: the shorter one while the condition says so.
        Expr::If(i) => {
            let then = match i.then_branch.stmts.last()? {
                syn::Stmt::Expr(e, None) => number_at_most(e, consts)?,
                _ => return None,
            };
            Some(then.min(number_at_most(&i.else_branch.as_ref()?.1, consts)?))
        }
        Expr::Block(b) => match b.block.stmts.last()? {
            syn::Stmt::Expr(e, None) => number_at_most(e, consts),
            _ => None,
        },
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "min" => {
                let cap = number_at_most(m.args.first()?, consts);
                let own = number_at_most(&m.receiver, consts);
                cap.into_iter().chain(own).reduce(f64::min)
            }
            "max" => {
                Some(number_at_most(&m.receiver, consts)?.max(number(m.args.first()?, consts)?))
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(src: &str) -> Option<f64> {
        let e: Expr = syn::parse_str(src).expect("expr");
        let mut consts = HashMap::new();
        consts.insert("REQUEUE_SECS".to_string(), 10.0);
        duration_secs(&e, &consts, &|_| None)
    }

    #[test]
    fn durations() {
        assert_eq!(secs("Duration::from_secs(5)"), Some(5.0));
        assert_eq!(secs("std::time::Duration::from_secs(5 * 60)"), Some(300.0));
        assert_eq!(secs("Duration::from_millis(500)"), Some(0.5));
        assert_eq!(secs("Duration::from_secs(REQUEUE_SECS)"), Some(10.0));
        assert_eq!(secs("Duration::from_secs(ctx.backoff())"), None);
        assert_eq!(secs("Duration::from_secs(2) * 3"), Some(6.0));
    }

    #[test]
    fn a_capped_duration_is_at_most_its_cap() {
        let consts = HashMap::from([("RETRY".to_string(), 5.0)]);
        let at_most = |src: &str| duration_at_most(&syn::parse_str(src).expect("expr"), &consts);
        assert_eq!(
            at_most("Duration::from_secs(deadline.saturating_sub(now()).min(RETRY).max(1))"),
            Some(5.0)
        );
        assert_eq!(
            at_most("Duration::from_secs(deadline.saturating_sub(now()))"),
            None
        );
        assert_eq!(at_most("Duration::from_secs(RETRY)"), Some(5.0));
        assert_eq!(secs("Duration::from_secs(REQUEUE_SECS.min(3))"), Some(3.0));
    }

    #[test]
    fn a_parameter_takes_the_value_it_was_given() {
        let e: Expr = syn::parse_str("Duration::from_secs(secs)").expect("expr");
        let consts = HashMap::from([("SHORT".to_string(), 5.0)]);
        let given = |n: &str| (n == "secs").then(|| syn::parse_str("SHORT").expect("expr"));
        assert_eq!(duration_secs(&e, &consts, &given), Some(5.0));
        assert_eq!(duration_secs(&e, &consts, &|_| None), None);
    }
}
