//! Values handed to Prometheus metric labels (`WithLabelValues(req.Name)`, `With(prometheus.Labels{"name":
//! obj.GetName()})`), with where their characters come from: an object's identity or an error's text (CA402).

use super::body::Walk;
use super::syntax::{self, strip_ref};
use crate::finding::Span;
use crate::sema::{LabelValue, TextExpr, TextSource};
use tree_sitter::Node;

/// What a function tells of metrics: the values it hands to labels, and the metrics whose series it deletes.
#[derive(Default)]
pub(super) struct MetricFacts {
    pub(super) values: Vec<LabelValue>,
    pub(super) dropped: Vec<String>,
}

/// The identity fields of an object and of a reconcile request.
const IDENTITY_FIELDS: &[&str] = &["Name", "Namespace", "UID", "NamespacedName"];
/// metav1.Object's identity getters.
const IDENTITY_GETTERS: &[&str] = &["GetName", "GetNamespace", "GetUID", "GetGenerateName"];

impl Walk<'_, '_> {
    /// Records the label values of a metric vector's `WithLabelValues(..)` / `With(labels)` call, and of a
    /// metrics wrapper's `Set(v, labels)` / `Observe(v, labels)` / `Inc(labels)` given a label set.
    pub(super) fn metric_labels(&mut self, func: Node<'_>, args: &[Node<'_>]) {
        if func.kind() != "selector_expression" {
            return;
        }
        let method = func
            .child_by_field_name("field")
            .map_or("", |f| self.src.text(f));
        // `vec.DeleteLabelValues(ns, name)`, `vec.Delete(prometheus.Labels{..})`, `vec.Reset()`: series go with
        // their object, or all at once before the live ones are set again.
        let drops = match method {
            "DeleteLabelValues" | "DeletePartialMatch" => true,
            "Delete" => args.first().is_some_and(|a| {
                let a = strip_ref(*a);
                self.is_label_set(a)
                    || (a.kind() == "identifier" && self.label_sets.contains_key(self.src.text(a)))
            }),
            "Reset" => args.is_empty(),
            _ => false,
        };
        if drops {
            if let Some(m) = self.metric_of(func) {
                self.model_labels.dropped.push(m);
            }
            return;
        }
        let set = match (method, args) {
            ("WithLabelValues" | "GetMetricWithLabelValues", _) => {
                let metric = self.metric_of(func);
                for v in args {
                    self.label_value(*v, metric.clone());
                }
                return;
            }
            ("With" | "GetMetricWith" | "MustCurryWith" | "CurryWith", [labels, ..]) => *labels,
            // A wrapper's own API (`PodUnstartedTime.Set(secs, map[string]string{podName: pod.Name})`): only with
            // a label set in the label's place, which a logger's or a cache's `Set` does not take.
            ("Set" | "Observe" | "Add", [_, labels]) | ("Inc" | "Dec", [labels]) => *labels,
            _ => return,
        };
        let set = strip_ref(set);
        // A label set in a local (`labels := prometheus.Labels{..}`, filled by `labels["name"] = obj.Name`).
        if set.kind() == "identifier"
            && let Some(values) = self.label_sets.get(self.src.text(set)).cloned()
        {
            let metric = self.metric_of(func);
            for (span, value) in values {
                self.push_label(span, value, None, metric.clone());
            }
            return;
        }
        // Only a label set (`prometheus.Labels{..}`, `map[string]string{..}`, or one handed to a helper that
        // refines it): a logger's `With(..)` is no metric.
        let values = self.label_literals(set, true);
        if values.is_empty() {
            return;
        }
        let metric = self.metric_of(func);
        for v in values {
            self.label_value(v, metric.clone());
        }
    }

    /// The metric a call's receiver names, by the last name of its path: `stats.poolCapacity`,
    /// `r.metrics.reconciles`; not a local (`h` of `if h, ok := m.metrics[k].(*prometheus.HistogramVec)`), whose
    /// name says nothing of which metric it is. Asked only of metric calls: it reads the whole function.
    fn metric_of(&self, func: Node<'_>) -> Option<String> {
        func.child_by_field_name("operand")
            .filter(|o| o.kind() != "identifier" || !declared_in_fn(self.src, *o))
            .map(|o| {
                let o = o.child_by_field_name("field").unwrap_or(o);
                self.src.text(o).to_string()
            })
    }

    fn label_value(&mut self, v: Node<'_>, metric: Option<String>) {
        let value = self.text_of(v);
        let bound_to = (v.kind() == "identifier")
            .then(|| self.text_locals.get(self.src.text(v)).cloned())
            .flatten();
        self.push_label(self.src.span(v), value, bound_to, metric);
    }

    fn push_label(
        &mut self,
        span: Span,
        value: TextExpr,
        bound_to: Option<TextExpr>,
        metric: Option<String>,
    ) {
        self.model_labels.values.push(LabelValue {
            span,
            value,
            bound_to,
            in_fn: self.f.name.clone(),
            formats_enum: false,
            metric,
        });
    }

    /// The values of the label-set literal `n` (`prometheus.Labels{..}` or `map[string]string{..}`), or, when
    /// `through_calls`, of those given to the call `n` (`RefineLabels(base, map[string]string{"name": req.Name})`).
    fn label_literals<'a>(&self, n: Node<'a>, through_calls: bool) -> Vec<Node<'a>> {
        let n = strip_ref(n);
        if self.is_label_set(n) {
            return syntax::keyed_elements(n)
                .into_iter()
                .map(|(_, v)| v)
                .collect();
        }
        if through_calls && n.kind() == "call_expression" {
            return n
                .child_by_field_name("arguments")
                .map(|a| {
                    syntax::named_children(a)
                        .flat_map(|x| self.label_literals(x, false))
                        .collect()
                })
                .unwrap_or_default();
        }
        Vec::new()
    }

    fn is_label_set(&self, lit: Node<'_>) -> bool {
        lit.kind() == "composite_literal"
            && lit.child_by_field_name("type").is_some_and(|t| {
                let t = self.src.text(t);
                t.ends_with("Labels") || t == "map[string]string"
            })
    }

    /// `labels := prometheus.Labels{..}`, `labels := Refine(map[string]string{..})`, `info := make(map[string]string)`:
    /// a label set a later `With(labels)` may take, with the values it holds so far.
    pub(super) fn bind_label_set(&mut self, name: &str, value: Node<'_>) {
        let value = strip_ref(value);
        let empty_map = value.kind() == "call_expression"
            && value
                .child_by_field_name("function")
                .is_some_and(|f| self.src.text(f) == "make")
            && value
                .child_by_field_name("arguments")
                .is_some_and(|a| self.src.text(a).starts_with("(map[string]string"));
        let values = self.label_literals(value, true);
        if values.is_empty() && !empty_map {
            return;
        }
        let entries = values
            .into_iter()
            .map(|v| (self.src.span(v), self.text_of(v)))
            .collect();
        self.label_sets.insert(name.to_string(), entries);
    }

    /// `labels["name"] = obj.Name` into a label set.
    pub(super) fn label_set_entry(&mut self, target: Node<'_>, value: Node<'_>) {
        if target.kind() != "index_expression" {
            return;
        }
        let Some(set) = target
            .child_by_field_name("operand")
            .filter(|o| o.kind() == "identifier")
            .map(|o| self.src.text(o).to_string())
        else {
            return;
        };
        if !self.label_sets.contains_key(&set) {
            return;
        }
        let entry = (self.src.span(value), self.text_of(value));
        if let Some(values) = self.label_sets.get_mut(&set) {
            values.push(entry);
        }
    }

    /// `return prometheus.Labels{"namespace": ns, ..}`: a helper that builds the label set a `With(..)` takes,
    /// whose values are judged by what its callers pass.
    pub(super) fn returned_labels(&mut self, ret: Node<'_>) {
        for r in syntax::named_children(ret).flat_map(|e| {
            if e.kind() == "expression_list" {
                syntax::named_children(e).collect()
            } else {
                vec![e]
            }
        }) {
            let r = strip_ref(r);
            let prometheus_labels = r.kind() == "composite_literal"
                && r.child_by_field_name("type")
                    .and_then(|t| syntax::qualified_type(self.src, t))
                    .is_some_and(|(pkg, name)| {
                        name == "Labels"
                            && self.imports.path_of(pkg).is_some_and(|p| {
                                p.starts_with("github.com/prometheus/client_golang/")
                            })
                    });
            if prometheus_labels {
                for v in self.label_literals(r, false) {
                    self.label_value(v, None);
                }
            }
        }
    }

    /// Where a Go text expression's characters come from.
    pub(super) fn text_of(&self, n: Node<'_>) -> TextExpr {
        let mut sources = Vec::new();
        syntax::any_node(n, &mut |x| {
            match x.kind() {
                "selector_expression" => {
                    let field = x
                        .child_by_field_name("field")
                        .map_or("", |f| self.src.text(f));
                    // `id.Name()` calls a method of that name: an object's identity is its `Name` field (or
                    // `GetName()`), never a `Name()` method.
                    let called = x.parent().is_some_and(|p| {
                        p.kind() == "call_expression"
                            && p.child_by_field_name("function") == Some(x)
                    });
                    if IDENTITY_FIELDS.contains(&field)
                        && !called
                        && x.child_by_field_name("operand")
                            .is_some_and(|o| self.is_object(o))
                    {
                        sources.push(TextSource::ObjectIdentity);
                    }
                }
                "call_expression" => {
                    let f = x.child_by_field_name("function");
                    let name = f
                        .and_then(|f| f.child_by_field_name("field"))
                        .map_or("", |m| self.src.text(m));
                    if IDENTITY_GETTERS.contains(&name) {
                        sources.push(TextSource::ObjectIdentity);
                    } else if name == "Error"
                        && x.child_by_field_name("arguments")
                            .is_some_and(|a| a.named_child_count() == 0)
                    {
                        sources.push(TextSource::ErrorText);
                    }
                }
                "identifier" => {
                    let name = self.src.text(x);
                    // `condition.Type` of a parameter is one of its fields, not the text the caller passed: the
                    // caller's `&cond` says nothing of it (its identity fields are judged above).
                    let field_of = x.parent().is_some_and(|p| {
                        p.kind() == "selector_expression"
                            && p.child_by_field_name("operand") == Some(x)
                    });
                    if let Some(t) = self.text_locals.get(name) {
                        sources.extend(t.sources.iter().cloned());
                    } else if let Some(i) = self.params.get(name).filter(|_| !field_of) {
                        sources.push(TextSource::Param(*i));
                    }
                }
                _ => {}
            }
            false
        });
        sources.dedup();
        TextExpr {
            display: self.src.compact(n, 80),
            sources,
            call: None,
            formats: Vec::new(),
        }
    }

    /// An expression that holds an object or a reconcile request: a local or parameter of a named type
    /// (`es *esv1.ExternalSecret`, `req ctrl.Request`), or its `ObjectMeta`.
    fn is_object(&self, o: Node<'_>) -> bool {
        let o = strip_ref(o);
        match o.kind() {
            "identifier" => self.local_type(self.src.text(o)).is_some_and(|t| {
                t.starts_with(|c: char| c.is_ascii_uppercase()) && !self.plain_structs.contains(t)
            }),
            "selector_expression" => o
                .child_by_field_name("field")
                .is_some_and(|f| matches!(self.src.text(f), "ObjectMeta" | "NamespacedName")),
            _ => false,
        }
    }
}

/// Is the identifier `id` a parameter or a variable of the function (or closure) it is in?
fn declared_in_fn(src: &syntax::Src<'_>, id: Node<'_>) -> bool {
    let name = src.text(id);
    let Some(f) = syntax::enclosing_fn(id) else {
        return false;
    };
    syntax::any_node(f, &mut |n| {
        let names = match n.kind() {
            "short_var_declaration" | "range_clause" => n.child_by_field_name("left"),
            "var_spec" | "parameter_declaration" => Some(n),
            _ => None,
        };
        names.is_some_and(|l| {
            syntax::named_children(l).any(|c| c.kind() == "identifier" && src.text(c) == name)
        })
    })
}
