//! Metric label values and the series a file deletes (CA402).

use crate::finding::Span;
use crate::sema::TextExpr;

/// A value handed to a metric label (`with_label_values(&[..])`, a label set, `counter!("x", "k" => v)`).
#[derive(Debug, Clone)]
pub struct LabelValue {
    pub span: Span,
    /// The value: `obj.name_any()`.
    pub value: TextExpr,
    /// When the value is a binding, its initialiser: `let n = obj.name_any();` gives `obj.name_any()`.
    pub bound_to: Option<TextExpr>,
    /// Name of the function the value is in.
    pub in_fn: String,
    /// The bindings the value formats (`format!("{phase:?}")`) that the function matches against enum variants
    /// (`match phase { Phase::Completed => .. }`): their text is one of a few.
    pub formats_enum: bool,
    /// The metric it labels, by the last name of its path (`stats.poolCapacity` → `poolCapacity`), when known.
    pub metric: Option<String>,
}
