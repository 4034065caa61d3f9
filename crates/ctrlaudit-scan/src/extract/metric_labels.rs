//! Values handed to metric labels (prometheus label sets, `metrics` crate macros), with where they come from.

use super::*;

impl<'ast> Extractor<'_, 'ast> {
    /// Records a value handed to a label, with the initialiser of the binding it names: whether that value is
    /// bounded is the rule's judgement.
    pub(super) fn check_label_value(&mut self, v: &Expr) {
        let value = lower::text(v);
        let bound_to = root_var(v)
            .and_then(|n| self.var(&n))
            .and_then(|var| var.init)
            .map(lower::text);
        let span = self.span(v.span());
        let in_fn = self.fn_name();
        let formats_enum = self.fns.last().is_some_and(|f| {
            !value.formats.is_empty() && value.formats.iter().all(|n| f.enum_vars.contains(n))
        });
        self.model.metric_label_values.push(LabelValue {
            span,
            value,
            bound_to,
            in_fn,
            formats_enum,
            metric: None,
        });
    }

    /// A metric vector's `with_label_values(&[..])` / a `Family`'s `get_or_create(&labels)`: the label values, for
    /// the metric named by the receiver's last name; `remove_label_values(&[..])` deletes one of its series.
    pub(super) fn check_metric_call(&mut self, method: &str, receiver: &Expr, args: &Args) {
        let metric = metric_name(receiver);
        match method {
            "with_label_values" | "get_or_create" => {
                let from = self.model.metric_label_values.len();
                for a in args {
                    self.check_labels(a);
                }
                for l in &mut self.model.metric_label_values[from..] {
                    l.metric.clone_from(&metric);
                }
            }
            "remove_label_values" => self.model.dropped_series.extend(metric),
            _ => {}
        }
    }

    pub(super) fn check_labels(&mut self, arg: &Expr) {
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
                    .and_then(|v| v.init)
                    && matches!(init, Expr::Struct(_) | Expr::Array(_))
                {
                    self.check_labels(init);
                }
            }
            other => self.check_label_value(other),
        }
    }

    pub(super) fn check_metric_macro(&mut self, m: &syn::Macro) {
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
}

type Args = syn::punctuated::Punctuated<Expr, syn::Token![,]>;

/// The last name of a metric's path: `RECONCILES` of `RECONCILES.with_label_values(..)`, `reconciles` of
/// `self.metrics.reconciles.with_label_values(..)`.
fn metric_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        Expr::Field(f) => match &f.member {
            syn::Member::Named(n) => Some(n.to_string()),
            syn::Member::Unnamed(_) => None,
        },
        Expr::Reference(r) => metric_name(&r.expr),
        Expr::Paren(p) => metric_name(&p.expr),
        _ => None,
    }
}
