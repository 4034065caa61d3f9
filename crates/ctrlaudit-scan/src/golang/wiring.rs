//! How a client-go controller's calls reach its sync handler: a workqueue worker's take and release, method
//! values stored in a field or handed to a function, and the accessors of a clientset chain (client-go's own,
//! never a method of the module).

use super::body::Walk;
use tree_sitter::Node;

impl Walk<'_, '_> {
    /// A clientset's accessor in a chain (`cs.CoreV1()`, `cs.CoreV1().Namespaces()`): client-go's, never a
    /// method of the module that happens to share the name.
    pub(super) fn is_clientset_accessor(&self, func: Node<'_>) -> bool {
        if func.kind() != "selector_expression" {
            return false;
        }
        let field = |n: Node<'_>| {
            n.child_by_field_name("field")
                .map_or("", |f| self.src.text(f))
                .to_string()
        };
        if super::client::is_group_version(&field(func)) {
            return true;
        }
        func.child_by_field_name("operand")
            .filter(|o| o.kind() == "call_expression")
            .and_then(|o| o.child_by_field_name("function"))
            .filter(|f| f.kind() == "selector_expression")
            .is_some_and(|f| super::client::is_group_version(&field(f)))
    }

    /// A method value (`c.sync`, not called) stored in field `field`: what a call of the field runs.
    pub(super) fn func_field(&mut self, field: &str, value: Node<'_>) {
        if value.kind() == "selector_expression"
            && let Some(callee) = self.callee(value)
        {
            self.func_fields.push((field.to_string(), callee));
        }
    }

    /// `c.queue.Get()` (no argument) or `c.queue.Done(item)`: a client-go workqueue's take and release, with the
    /// queue they are called on. Both on one operand make a worker; each alone is too common a name to say so.
    pub(super) fn queue_method(
        &self,
        func: Node<'_>,
        args: &[Node<'_>],
    ) -> Option<(String, &'static str)> {
        if func.kind() != "selector_expression" {
            return None;
        }
        let on = self.src.text(func.child_by_field_name("operand")?);
        let field = self.src.text(func.child_by_field_name("field")?);
        let m = match (field, args.len()) {
            ("Get", 0) => "Get",
            ("Done", 1) => "Done",
            _ => return None,
        };
        Some((on.to_string(), m))
    }
}
