//! `ctrl.Result` requeues (what each `return` of a reconcile asks for) and the numbers and durations they are
//! built from, lowered to `sema::Value`.

use super::Imports;
use super::body::{Place, Walk};
use super::syntax::{self, Src, named_children, qualified};
use crate::sema::{Op, Requeue, Value};
use std::collections::HashMap;
use tree_sitter::Node;

impl Walk<'_, '_> {
    /// A `return` of a function that returns `ctrl.Result`: the requeue it asks for, if any.
    pub(super) fn returned(&mut self, s: Node<'_>, place: &Place, wrote_before: bool) {
        if !self.f.returns_action {
            return;
        }
        let values: Vec<Node> = named_children(s)
            .find(|c| c.kind() == "expression_list")
            .map(|l| named_children(l).collect())
            .unwrap_or_default();
        let requeue = values.first().and_then(|first| {
            // With a non-nil error controller-runtime ignores the Result and backs off itself.
            if values.get(1).is_some_and(|e| self.src.text(*e) != "nil") {
                return None;
            }
            // `return utils.RequeueAfterInterval(20 * time.Second)`, a helper of the module that returns the
            // Result (and a nil error) itself: the join reads the requeue from the helper's returns.
            if first.kind() == "call_expression" {
                return self.requeue_via(*first, place, wrote_before);
            }
            if first.kind() == "identifier" {
                // The requeue a local was bound to, asked for where it is returned.
                let bound = self.result_locals.get(self.src.text(*first))?;
                return Some(Requeue {
                    conditional: place.branch,
                    on_error: place.on_error,
                    after_change: wrote_before,
                    after_write: wrote_before,
                    ..bound.clone()
                });
            }
            self.requeue(*first, place, wrote_before)
        });
        if let Some(r) = &requeue {
            self.f.requeues.push(r.clone());
        }
        self.f.returns.push(requeue);
    }

    /// `rr := ctrl.Result{RequeueAfter: 5 * time.Second}`, declared once and returned from several places
    /// (`return rr, nil`): each return asks for that requeue. Any other assignment to the local (`rr =
    /// ctrl.Result{}`, `rr.RequeueAfter = d`) leaves what it holds unknown here.
    pub(super) fn bind_result(
        &mut self,
        s: Node<'_>,
        lefts: &[Node<'_>],
        rights: &[Node<'_>],
        place: &Place,
    ) {
        for (i, l) in lefts.iter().enumerate() {
            let Some(var) = syntax::root_ident(self.src, *l) else {
                continue;
            };
            let bound = (s.kind() == "short_var_declaration" && l.kind() == "identifier")
                .then(|| rights.get(i).filter(|_| lefts.len() == rights.len()))
                .flatten()
                .and_then(|r| self.requeue(*r, place, false));
            match bound {
                Some(r) => self.result_locals.insert(var.to_string(), r),
                None => self.result_locals.remove(var),
            };
        }
    }

    /// A call of a function of the module as what a `return` hands back (`return requeueAfter(10 *
    /// time.Second)`): a requeue whose duration the join reads from that function's returns, with these
    /// arguments for its parameters (`Requeue::via`).
    fn requeue_via(&self, call: Node<'_>, place: &Place, wrote_before: bool) -> Option<Requeue> {
        let func = call.child_by_field_name("function")?;
        if qualified(self.src, func).is_some_and(|(pkg, _)| self.imports.is_external(pkg)) {
            return None;
        }
        let via = self.callee(func)?;
        let via_args = call
            .child_by_field_name("arguments")
            .map(|a| {
                named_children(a)
                    .map(|x| lower_value(self.src, self.imports, x))
                    .collect()
            })
            .unwrap_or_default();
        Some(Requeue {
            via: Some(via),
            via_args,
            ..self.requeue_at(call, place, wrote_before)
        })
    }

    /// A requeue written at `n`, on the path `place` says, of no duration yet.
    fn requeue_at(&self, n: Node<'_>, place: &Place, wrote_before: bool) -> Requeue {
        Requeue {
            span: self.src.span(n),
            secs: None,
            duration: None,
            conditional: place.branch,
            on_error: place.on_error,
            in_err_value: false,
            after_change: wrote_before,
            after_write: wrote_before,
            variants: Vec::new(),
            via: None,
            via_args: Vec::new(),
            text: self.src.compact(n, 80),
        }
    }

    /// `ctrl.Result{RequeueAfter: d}` as a requeue. `Requeue: true` alone is not one: it goes through the
    /// rate limiter, which backs off per object.
    pub(super) fn requeue(
        &self,
        lit: Node<'_>,
        place: &Place,
        wrote_before: bool,
    ) -> Option<Requeue> {
        // `return &ctrl.Result{RequeueAfter: d}, nil` from a helper returning `*ctrl.Result`.
        let lit = syntax::strip_ref(lit);
        if lit.kind() != "composite_literal"
            || lit
                .child_by_field_name("type")
                .is_none_or(|t| syntax::base_type(self.src, t) != "Result")
        {
            return None;
        }
        let after = syntax::keyed_value(self.src, lit, "RequeueAfter")?;
        let value = lower_value(self.src, self.imports, after);
        let secs = value.secs(&HashMap::new(), &crate::sema::unbound);
        Some(Requeue {
            secs,
            duration: (secs.is_none() && !value.is_jittered()).then_some(value),
            ..self.requeue_at(lit, place, wrote_before)
        })
    }
}

/// A Go number or duration expression as a [`Value`]: `30 * time.Second`, `time.Duration(n) * time.Minute`,
/// a constant's name.
pub(super) fn lower_value(src: &Src<'_>, imports: &Imports, n: Node<'_>) -> Value {
    match n.kind() {
        "int_literal" | "float_literal" => {
            let t = src.text(n).replace('_', "");
            let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                i64::from_str_radix(h, 16).ok().map(|x| x as f64)
            } else {
                t.parse::<f64>().ok()
            };
            v.map_or(Value::Unknown, Value::Num)
        }
        "parenthesized_expression" => n
            .named_child(0)
            .map_or(Value::Unknown, |i| lower_value(src, imports, i)),
        "identifier" => Value::Name {
            name: src.text(n).to_string(),
            qualified: false,
        },
        "selector_expression" => match qualified(src, n) {
            Some((pkg, unit)) if imports.is(pkg, "time") => match unit {
                "Nanosecond" => Value::Secs(1e-9),
                "Microsecond" => Value::Secs(1e-6),
                "Millisecond" => Value::Secs(1e-3),
                "Second" => Value::Secs(1.0),
                "Minute" => Value::Secs(60.0),
                "Hour" => Value::Secs(3600.0),
                _ => Value::Unknown,
            },
            Some((_, name)) => Value::Name {
                name: name.to_string(),
                qualified: true,
            },
            None => Value::Unknown,
        },
        "binary_expression" => {
            let op = match n.child_by_field_name("operator").map(|o| src.text(o)) {
                Some("*") => Op::Mul,
                Some("+") => Op::Add,
                Some("-") => Op::Sub,
                Some("/") => Op::Div,
                _ => return Value::Unknown,
            };
            let (Some(l), Some(r)) = (
                n.child_by_field_name("left"),
                n.child_by_field_name("right"),
            ) else {
                return Value::Unknown;
            };
            Value::Binary {
                op,
                left: Box::new(lower_value(src, imports, l)),
                right: Box::new(lower_value(src, imports, r)),
            }
        }
        "call_expression" => {
            let Some(f) = n.child_by_field_name("function") else {
                return Value::Unknown;
            };
            let args: Vec<Node> = n
                .child_by_field_name("arguments")
                .map(|a| named_children(a).collect())
                .unwrap_or_default();
            match qualified(src, f) {
                // A conversion to a count of nanoseconds, multiplied by a unit around it.
                Some((pkg, "Duration")) if imports.is(pkg, "time") && args.len() == 1 => {
                    lower_value(src, imports, args[0])
                }
                Some((pkg, _))
                    if imports.is(pkg, "math/rand")
                        || imports.is(pkg, "math/rand/v2")
                        || (imports.is(pkg, "k8s.io/apimachinery/pkg/util/wait")) =>
                {
                    Value::Jittered
                }
                _ => Value::Unknown,
            }
        }
        _ => Value::Unknown,
    }
}
