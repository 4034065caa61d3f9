//! Lowering of Rust expressions into `sema`'s typed values: durations and numbers as [`Value`], label values and
//! returned text as [`TextExpr`]. The only place that knows how Rust spells a duration or an object's name.

use crate::sema::{Callee, Op, TextExpr, TextSource, Value};
use quote::ToTokens;
use std::fmt::Write as _;
use syn::{BinOp, Expr, Lit};

/// Compact token text of a syntax node, for messages: `Utc::now()` rather than `Utc :: now ()`. A space stays
/// only between two word characters, so that `match watcher` does not become `matchwatcher`.
pub fn compact(node: &impl ToTokens) -> String {
    let mut c = Compactor::default();
    // Printing into the filter: the tokens' text is never held whole. Writing to a `String` cannot fail.
    let _ = write!(c, "{}", node.to_token_stream());
    c.out
}

/// The filter of [`compact`] over the printed tokens, a piece at a time: of a run of spaces only the last can be
/// written, and only between two word characters.
#[derive(Default)]
struct Compactor {
    out: String,
    last: Option<char>,
    /// Spaces were read since the last character written.
    space: bool,
}

impl std::fmt::Write for Compactor {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        for c in s.chars() {
            if c == ' ' {
                self.space = true;
                continue;
            }
            if self.space && self.last.is_some_and(word) && word(c) {
                self.out.push(' ');
            }
            self.space = false;
            self.out.push(c);
            self.last = Some(c);
        }
        Ok(())
    }
}

/// The bindings of the function an expression may name, each with its initialiser.
pub type Locals<'a> = &'a dyn Fn(&str) -> Option<&'a Expr>;

/// No locals.
pub fn no_locals<'e>(_: &str) -> Option<&'e Expr> {
    None
}

/// A name that says its value is randomised.
fn is_random(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("rand") || n.contains("jitter")
}

/// Lowers a numeric or duration expression; a bare name bound by `locals` is replaced by its initialiser (one
/// level: `let secs = if ok { 300 } else { 10 }; Duration::from_secs(secs)`).
pub fn value(expr: &Expr, locals: Locals<'_>) -> Value {
    let lower = |e: &Expr| Box::new(value(e, locals));
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i
                .base10_parse::<u64>()
                .map_or(Value::Unknown, |v| Value::Num(v as f64)),
            Lit::Float(f) => f.base10_parse::<f64>().map_or(Value::Unknown, Value::Num),
            _ => Value::Unknown,
        },
        Expr::Paren(p) => value(&p.expr, locals),
        Expr::Group(g) => value(&g.expr, locals),
        Expr::Reference(r) => value(&r.expr, locals),
        Expr::Cast(c) => value(&c.expr, locals),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => value(e, locals),
            _ => Value::Unknown,
        },
        Expr::If(i) => {
            let then = match i.then_branch.stmts.last() {
                Some(syn::Stmt::Expr(e, None)) => lower(e),
                _ => Box::new(Value::Unknown),
            };
            let otherwise = i
                .else_branch
                .as_ref()
                .map_or(Box::new(Value::Unknown), |(_, e)| lower(e));
            Value::Choice { then, otherwise }
        }
        Expr::Path(p) => {
            let segs = super::path_segments(&p.path);
            let Some(last) = segs.last() else {
                return Value::Unknown;
            };
            if segs.iter().any(|s| is_random(s)) {
                return Value::Jittered;
            }
            if segs.len() == 1 {
                if let Some(init) = locals(last) {
                    return value(init, &no_locals);
                }
                return Value::Name {
                    name: last.clone(),
                    qualified: false,
                };
            }
            match last.as_str() {
                "ZERO" => Value::Secs(0.0),
                "SECOND" => Value::Secs(1.0),
                "MILLISECOND" => Value::Secs(0.001),
                _ => Value::Name {
                    name: last.clone(),
                    qualified: true,
                },
            }
        }
        Expr::Binary(b) => {
            let op = match b.op {
                BinOp::Add(_) => Op::Add,
                BinOp::Sub(_) => Op::Sub,
                BinOp::Mul(_) => Op::Mul,
                BinOp::Div(_) => Op::Div,
                _ => return opaque(expr),
            };
            Value::Binary {
                op,
                left: lower(&b.left),
                right: lower(&b.right),
            }
        }
        Expr::Call(c) => {
            let Expr::Path(p) = &*c.func else {
                return opaque(expr);
            };
            let segs = super::path_segments(&p.path);
            if segs.iter().any(|s| is_random(s)) {
                return Value::Jittered;
            }
            let last = segs.last().map(String::as_str).unwrap_or_default();
            let arg = |i: usize| c.args.iter().nth(i).map_or(Box::new(Value::Unknown), lower);
            let scale = match last {
                "from_secs" | "from_secs_f64" | "from_secs_f32" | "seconds" => Some(1.0),
                "from_millis" => Some(1e-3),
                "from_micros" => Some(1e-6),
                "from_nanos" => Some(1e-9),
                "from_mins" | "minutes" => Some(60.0),
                "from_hours" => Some(3600.0),
                _ => None,
            };
            if let Some(scale) = scale {
                return Value::FromUnit { scale, arg: arg(0) };
            }
            if last == "new" && segs.len() >= 2 && segs[segs.len() - 2] == "Duration" {
                return Value::DurationNew {
                    secs: arg(0),
                    nanos: arg(1),
                };
            }
            Value::Call {
                callee: path_callee(&segs),
                receiver: None,
                args: c.args.iter().map(|a| value(a, locals)).collect(),
            }
        }
        Expr::MethodCall(m) => {
            let method = m.method.to_string();
            if is_random(&method) {
                return Value::Jittered;
            }
            let first = || m.args.first().map_or(Box::new(Value::Unknown), lower);
            match method.as_str() {
                "as_secs" | "as_secs_f64" | "as_secs_f32" => Value::AsUnit {
                    scale: 1.0,
                    of: lower(&m.receiver),
                },
                "as_millis" => Value::AsUnit {
                    scale: 1e3,
                    of: lower(&m.receiver),
                },
                "min" => Value::Min(lower(&m.receiver), first()),
                "max" => Value::Max(lower(&m.receiver), first()),
                "unwrap_or" => Value::OrDefault {
                    of: lower(&m.receiver),
                    default: first(),
                },
                "unwrap_or_else" if matches!(m.args.first(), Some(Expr::Closure(c)) if c.inputs.is_empty()) =>
                {
                    let Some(Expr::Closure(c)) = m.args.first() else {
                        return Value::Unknown;
                    };
                    Value::OrDefault {
                        of: lower(&m.receiver),
                        default: lower(&c.body),
                    }
                }
                _ => Value::Call {
                    callee: Callee::Method(method),
                    receiver: Some(lower(&m.receiver)),
                    args: m.args.iter().map(|a| value(a, locals)).collect(),
                },
            }
        }
        _ => opaque(expr),
    }
}

/// An expression the evaluator does not follow: unknown, unless some name in it says it is randomised
/// (`rng.gen_range(..) % 10`, `match jitter { .. }`).
fn opaque(expr: &Expr) -> Value {
    fn random(tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => is_random(&i.to_string()),
            proc_macro2::TokenTree::Group(g) => random(g.stream()),
            _ => false,
        })
    }
    if random(expr.to_token_stream()) {
        Value::Jittered
    } else {
        Value::Unknown
    }
}

/// A called path as the crate join resolves it: by its last two segments (`requeue::delay`, `Self::label`).
fn path_callee(segs: &[String]) -> Callee {
    Callee::Path(segs[segs.len().saturating_sub(2)..].join("::"))
}

/// A function returning a value computes it this way (`err.retry_after()`, `requeue::delay(..)`): the callee,
/// when the expression is one call.
pub fn callee(expr: &Expr) -> Option<Callee> {
    match expr {
        Expr::MethodCall(m) => Some(Callee::Method(m.method.to_string())),
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) => {
                let segs = super::path_segments(&p.path);
                Some(path_callee(&segs))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Lowers a text expression: where its characters come from, and what it formats.
pub fn text(expr: &Expr) -> TextExpr {
    let mut sources = Vec::new();
    text_sources(expr, &mut sources, 0);
    let call = match expr {
        // A method with arguments computes from them, not from what the receiver's type returns.
        Expr::MethodCall(m) if !m.args.is_empty() => None,
        other => callee(other),
    };
    let formats = match expr {
        Expr::Macro(m) if m.mac.path.is_ident("format") => format_of(&m.mac)
            .map(|(fmt, args)| {
                let mut names: Vec<String> = super::inline_format_args(&fmt)
                    .map(str::to_string)
                    .collect();
                names.extend(args.iter().filter_map(|a| match a {
                    Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
                    _ => None,
                }));
                names
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    TextExpr {
        display: compact(expr),
        sources,
        call,
        formats,
    }
}

/// The format string and the arguments of a formatting macro (`format!`, `format_args!`, `write!` without its
/// target is not one).
fn format_of(mac: &syn::Macro) -> Option<(String, Vec<Expr>)> {
    let args = mac
        .parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
        .ok()?;
    let mut it = args.into_iter();
    let fmt = match it.next()? {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => s.value(),
        _ => return None,
    };
    Some((fmt, it.collect()))
}

/// How deep text lowering follows nested expressions; label values are short.
const MAX_TEXT_DEPTH: usize = 32;

fn text_sources(expr: &Expr, out: &mut Vec<TextSource>, depth: usize) {
    if depth > MAX_TEXT_DEPTH {
        return;
    }
    let mut push = |s: TextSource| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    match expr {
        Expr::MethodCall(m) => {
            let method = m.method.to_string();
            let identity = matches!(method.as_str(), "name_any" | "name_unchecked")
                || (m.args.is_empty() && matches!(method.as_str(), "namespace" | "uid"));
            if identity && m.args.is_empty() {
                push(TextSource::ObjectIdentity);
            }
            // `e.to_string()`: an error binding's message.
            if method == "to_string"
                && matches!(&*m.receiver, Expr::Path(p)
                    if p.path.get_ident().is_some_and(|i| matches!(i.to_string().as_str(), "e" | "err" | "error")))
            {
                push(TextSource::ErrorText);
            }
            text_sources(&m.receiver, out, depth + 1);
            m.args.iter().for_each(|a| text_sources(a, out, depth + 1));
        }
        // `obj.metadata.name`, `meta.metadata.uid`.
        Expr::Field(f) => {
            if let syn::Member::Named(field) = &f.member
                && matches!(field.to_string().as_str(), "name" | "uid" | "namespace")
                && matches!(&*f.base, Expr::Field(b) if matches!(&b.member, syn::Member::Named(m) if m == "metadata"))
                    | matches!(&*f.base, Expr::Path(p) if p.path.is_ident("metadata"))
            {
                push(TextSource::ObjectIdentity);
            }
            text_sources(&f.base, out, depth + 1);
        }
        Expr::Macro(m) => {
            if let Some((fmt, args)) = format_of(&m.mac) {
                for piece in fmt.split('{').skip(1) {
                    let Some(inner) = piece.split('}').next() else {
                        continue;
                    };
                    if let Some((name, spec)) = inner.split_once(':')
                        && spec.ends_with('?')
                    {
                        push(TextSource::Debug {
                            of_self: name == "self",
                        });
                    }
                }
                // `format!("{:?}", self)`: the receiver's own Debug text.
                if fmt.contains("{:?}")
                    && args
                        .iter()
                        .any(|a| matches!(a, Expr::Path(p) if p.path.is_ident("self")))
                {
                    push(TextSource::Debug { of_self: true });
                }
                args.iter().for_each(|a| text_sources(a, out, depth + 1));
            }
        }
        Expr::Reference(r) => text_sources(&r.expr, out, depth + 1),
        Expr::Paren(p) => text_sources(&p.expr, out, depth + 1),
        Expr::Unary(u) => text_sources(&u.expr, out, depth + 1),
        Expr::Try(t) => text_sources(&t.expr, out, depth + 1),
        Expr::Await(a) => text_sources(&a.base, out, depth + 1),
        Expr::Call(c) => c.args.iter().for_each(|a| text_sources(a, out, depth + 1)),
        Expr::Binary(b) => {
            text_sources(&b.left, out, depth + 1);
            text_sources(&b.right, out, depth + 1);
        }
        Expr::Array(a) => a.elems.iter().for_each(|e| text_sources(e, out, depth + 1)),
        Expr::Tuple(t) => t.elems.iter().for_each(|e| text_sources(e, out, depth + 1)),
        Expr::Block(b) => {
            if let Some(syn::Stmt::Expr(e, None)) = b.block.stmts.last() {
                text_sources(e, out, depth + 1);
            }
        }
        Expr::Closure(c) => text_sources(&c.body, out, depth + 1),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lower(src: &str) -> Value {
        value(&syn::parse_str(src).expect("expr"), &no_locals)
    }
    fn secs(src: &str) -> Option<f64> {
        let consts = HashMap::from([("REQUEUE_SECS".to_string(), 10.0)]);
        lower(src).secs(&consts, &crate::sema::unbound)
    }
    fn sources(src: &str) -> Vec<TextSource> {
        text(&syn::parse_str(src).expect("expr")).sources
    }

    #[test]
    fn durations() {
        assert_eq!(secs("Duration::from_secs(5)"), Some(5.0));
        assert_eq!(secs("std::time::Duration::from_secs(5 * 60)"), Some(300.0));
        assert_eq!(secs("Duration::from_millis(500)"), Some(0.5));
        assert_eq!(secs("Duration::from_secs(REQUEUE_SECS)"), Some(10.0));
        assert_eq!(secs("Duration::from_secs(ctx.backoff())"), None);
        assert_eq!(secs("Duration::from_secs(2) * 3"), Some(6.0));
        assert_eq!(secs("Duration::new(1, 500_000_000)"), Some(1.5));
        assert_eq!(secs("Duration::from_secs(REQUEUE_SECS.min(3))"), Some(3.0));
    }

    #[test]
    fn a_local_is_read_through_its_initialiser_and_randomness_is_kept() {
        let init: Expr = syn::parse_str("if ok { 300 } else { 10 }").expect("expr");
        let locals = |n: &str| (n == "secs").then_some(&init);
        let v = value(
            &syn::parse_str("Duration::from_secs(secs)").expect("expr"),
            &locals,
        );
        assert!(v.is_chosen());
        assert!(lower("Duration::from_secs(rand::random::<u64>() % 10)").is_jittered());
        assert!(lower("base + jitter(5)").is_jittered());
    }

    #[test]
    fn text_sources_are_typed() {
        assert_eq!(sources("obj.name_any()"), vec![TextSource::ObjectIdentity]);
        assert_eq!(
            sources("&obj.metadata.uid"),
            vec![TextSource::ObjectIdentity]
        );
        assert_eq!(sources("e.to_string()"), vec![TextSource::ErrorText]);
        // Ends like an error's text but is a phase: bounded.
        assert!(sources("phase.to_string()").is_empty());
        assert!(sources("\"reconcile\"").is_empty());
        assert_eq!(
            sources("format!(\"{}/{}\", ns, obj.name_any())"),
            vec![TextSource::ObjectIdentity]
        );
        assert_eq!(
            sources("format!(\"{self:?}\").to_lowercase()"),
            vec![TextSource::Debug { of_self: true }]
        );
        assert_eq!(
            sources("format!(\"{:?}\", phase)"),
            vec![TextSource::Debug { of_self: false }]
        );
    }

    #[test]
    fn a_format_of_bindings_names_them() {
        let t = |s: &str| text(&syn::parse_str(s).expect("expr")).formats;
        assert_eq!(t("format!(\"{phase:?}\")"), vec!["phase"]);
        assert_eq!(t("format!(\"{:?}\", phase)"), vec!["phase"]);
        assert!(t("format!(\"{}\", e.to_string())").is_empty());
        assert!(t("obj.name_any()").is_empty());
    }
}
