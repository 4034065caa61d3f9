//! Values handed to Prometheus metric labels (`WithLabelValues(req.Name)`, `With(prometheus.Labels{"name":
//! obj.GetName()})`), with where their characters come from: an object's identity or an error's text (CA402).

use super::body::Walk;
use super::syntax::{self, strip_ref};
use crate::sema::{LabelValue, TextExpr, TextSource};
use tree_sitter::Node;

/// The identity fields of an object and of a reconcile request.
const IDENTITY_FIELDS: &[&str] = &["Name", "Namespace", "UID", "NamespacedName"];
/// metav1.Object's identity getters.
const IDENTITY_GETTERS: &[&str] = &["GetName", "GetNamespace", "GetUID", "GetGenerateName"];

impl Walk<'_, '_> {
    /// Records the label values of a metric vector's `WithLabelValues(..)` / `With(labels)` call.
    pub(super) fn metric_labels(&mut self, func: Node<'_>, args: &[Node<'_>]) {
        if func.kind() != "selector_expression" {
            return;
        }
        let method = func
            .child_by_field_name("field")
            .map_or("", |f| self.src.text(f));
        let values: Vec<Node> = match method {
            "WithLabelValues" | "GetMetricWithLabelValues" => args.to_vec(),
            "With" | "GetMetricWith" | "MustCurryWith" | "CurryWith" => {
                // Only a label set (`prometheus.Labels{..}`, `map[string]string{..}`): a logger's `With(..)` is
                // no metric.
                let Some(lit) = args.first().map(|a| strip_ref(*a)) else {
                    return;
                };
                let labels = lit.kind() == "composite_literal"
                    && lit.child_by_field_name("type").is_some_and(|t| {
                        let t = self.src.text(t);
                        t.ends_with("Labels") || t == "map[string]string"
                    });
                if !labels {
                    return;
                }
                syntax::keyed_elements(lit)
                    .into_iter()
                    .map(|(_, v)| v)
                    .collect()
            }
            _ => return,
        };
        for v in values {
            let value = self.text_of(v);
            let bound_to = (v.kind() == "identifier")
                .then(|| self.text_locals.get(self.src.text(v)).cloned())
                .flatten();
            self.model_labels.push(LabelValue {
                span: self.src.span(v),
                value,
                bound_to,
                in_fn: self.f.name.clone(),
                formats_enum: false,
            });
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
                    if IDENTITY_FIELDS.contains(&field)
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
                    if let Some(t) = self.text_locals.get(name) {
                        sources.extend(t.sources.iter().cloned());
                    } else if let Some(i) = self.params.get(name) {
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
            "identifier" => self
                .local_type(self.src.text(o))
                .is_some_and(|t| t.starts_with(|c: char| c.is_ascii_uppercase())),
            "selector_expression" => o
                .child_by_field_name("field")
                .is_some_and(|f| matches!(self.src.text(f), "ObjectMeta" | "NamespacedName")),
            _ => false,
        }
    }
}
