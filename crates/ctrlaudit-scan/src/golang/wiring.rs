//! How a client-go controller's calls reach its sync handler: a workqueue worker's take and release, method
//! values stored in a field or handed to a function, and the accessors of a clientset chain (client-go's own,
//! never a method of the module).

use super::body::Walk;
use crate::sema::{Callee, RETRIED};
use tree_sitter::Node;

impl<'t> Walk<'_, 't> {
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

    /// A method or function value (`c.sync`, not called) stored in field `field`: what a call of the field runs.
    pub(super) fn func_field(&mut self, field: &str, value: Node<'_>) {
        // A bare name that is no parameter or local of this function: a function of the package
        // (`upgradeStack: upgrade0_11_0`).
        let function_name = value.kind() == "identifier" && {
            let name = self.src.text(value);
            !self.params.contains_key(name) && !self.locals.contains_key(name)
        };
        if (value.kind() == "selector_expression" || function_name)
            && let Some(callee) = self.callee(value)
        {
            self.func_fields.push((field.to_string(), callee));
        }
    }

    /// `c.queue.Get()` (no argument) or `c.queue.Done(item)`: a client-go workqueue's take and release, with the
    /// queue they are called on. Both on one operand make a worker; each alone is too common a name to say so.
    /// So does a take in a loop from something named a queue (`c.delayQueue.GetOrWaitWithDone(ctx.Done())`, a
    /// module's own delaying queue, `Pop`): a loop that takes items off a queue handles each one.
    pub(super) fn queue_method(
        &self,
        func: Node<'_>,
        args: &[Node<'_>],
        in_loop: bool,
    ) -> Option<(String, &'static str)> {
        if func.kind() != "selector_expression" {
            return None;
        }
        let on = self.src.text(func.child_by_field_name("operand")?);
        let field = self.src.text(func.child_by_field_name("field")?);
        // One of several queues (`c.clusterEventQueues[idx]`, a queue per worker) is a queue too.
        let named_queue = on.rsplit('.').next().is_some_and(|n| {
            let n = n.split('[').next().unwrap_or(n).to_ascii_lowercase();
            n.ends_with("queue") || (on.ends_with(']') && n.ends_with("queues"))
        });
        let m = match (field, args.len()) {
            ("Get", 0) => "Get",
            ("Done", 1) => "Done",
            (f, _) if in_loop && named_queue && (f.starts_with("GetOrWait") || f == "Pop") => {
                "Take"
            }
            _ => return None,
        };
        Some((on.to_string(), m))
    }

    /// `retry.RetryOnConflict(backoff, r.updateStatus)`, `retry.RetryOnConflict(backoff, r.update(ctx, req))`: the
    /// module's function that is, or that returns, what the retry runs. Recorded as handed to
    /// [`RETRIED`]: its calls are retried on conflict too.
    pub(super) fn retried_functions(&mut self, args: &[Node<'_>]) {
        for (i, a) in args.iter().enumerate().skip(1) {
            let passed = match a.kind() {
                "call_expression" => a
                    .child_by_field_name("function")
                    .and_then(|f| self.callee(f)),
                "identifier" | "selector_expression" => self.callee(*a),
                _ => None,
            };
            if let Some(p) = passed {
                self.f
                    .func_args
                    .push((Callee::Path(RETRIED.to_string()), i, p));
            }
        }
    }

    /// A call of the module's own code, as the crate join resolves it; `None` for the standard library,
    /// Kubernetes' libraries and builtins.
    pub(super) fn callee(&self, func: Node<'_>) -> Option<Callee> {
        match func.kind() {
            "identifier" => {
                let name = self.src.text(func);
                (!super::body::BUILTINS.contains(&name)).then(|| Callee::Path(name.to_string()))
            }
            "selector_expression" => {
                let op = func.child_by_field_name("operand")?;
                let m = self
                    .src
                    .text(func.child_by_field_name("field")?)
                    .to_string();
                if op.kind() == "identifier" {
                    let x = self.src.text(op);
                    if self.recv.as_deref() == Some(x) {
                        return Some(Callee::SelfMethod(m));
                    }
                    // A parameter or variable declared with another module's type: none of the module's methods.
                    let package = self.local_packages.get(x);
                    if package.is_some_and(|p| self.imports.is_external(p)) {
                        return None;
                    }
                    if let Some(typed) = self.typed_callee(op, &m) {
                        return Some(typed);
                    }
                    // Of another package of the module, type unnamed: that package's method.
                    if let Some(pkg) = package {
                        let path = self.imports.path_of(pkg)?;
                        return Some(Callee::TypedMethod(path.to_string(), m));
                    }
                    if let Some(path) = self.imports.path_of(x) {
                        if self.imports.is_external(x) {
                            return None;
                        }
                        // By its import path: the join finds the module's package of that path
                        // (`FileModel::package`), and none for another module's.
                        return Some(Callee::Path(format!("{path}::{m}")));
                    }
                } else if let Some(typed) = self.typed_callee(op, &m) {
                    return Some(typed);
                } else if let Some(path) = self
                    .result_package(op)
                    .and_then(|p| self.imports.path_of(p))
                {
                    return Some(Callee::TypedMethod(path.to_string(), m));
                }
                Some(Callee::Method(m))
            }
            _ => None,
        }
    }

    /// `<-ticker.C`: a wait, recorded as the call `time::<-ticker.C` (see `syntax::timer_receive`).
    pub(super) fn timer_receive(&mut self, n: Node<'_>, place: &super::body::Place) {
        if let Some(text) = super::syntax::timer_receive(self.src, n) {
            self.f.resolved_calls.push(crate::sema::ResolvedCall {
                callee: Callee::Path(format!("time::{text}")),
                at: self.src.pos(n),
                off_runtime: place.detached,
                repeats_write: false,
                never_retries: false,
                kept: false,
            });
        }
    }

    /// `ec2.NewSubnetAvailableWaiter(c)`: a value a package's function returns, whose methods (`.Wait(..)`) are
    /// taken as that package's: another module's are none of the module's own of the same name. The package's
    /// name in the file, when it is an import.
    pub(super) fn result_package(&self, op: Node<'_>) -> Option<&'t str> {
        if op.kind() != "call_expression" {
            return None;
        }
        let (pkg, _) = super::syntax::qualified(self.src, op.child_by_field_name("function")?)?;
        self.imports.path_of(pkg).is_some().then_some(pkg)
    }

    /// `w watch.Interface`, `c *eks.Client`: the package whose type `name` is declared with, for `callee`.
    pub(super) fn note_package(&mut self, name: &str, ty: Option<Node<'_>>) {
        let Some(t) = ty else { return };
        if let Some((pkg, _)) = super::syntax::qualified_type(self.src, super::syntax::pointee(t)) {
            self.local_packages
                .insert(name.to_string(), pkg.to_string());
        }
    }
}

/// A package-level `var` that holds a function (`var updateDeploymentAndWait = mon.UpdateCephDeploymentAndWait`,
/// kept in a variable so tests can swap it) or a table of them (`upgrades = []versionUpgrade{{upgradeStack:
/// upgrade0_11_0}}`): recorded as function values stored under the variable's or the field's name
/// (`FileModel::func_fields`), so a call of that name runs the function.
pub(super) fn package_func_values(
    src: &super::syntax::Src<'_>,
    imports: &super::Imports,
    decl: Node<'_>,
    out: &mut Vec<(String, Callee)>,
) {
    for spec in super::syntax::specs(decl) {
        let names = super::syntax::field_children(spec, "name");
        let Some(values) = spec.child_by_field_name("value") else {
            continue;
        };
        let values: Vec<Node> = super::syntax::named_children(values).collect();
        if names.len() == values.len() {
            for (n, v) in names.iter().zip(&values) {
                if let Some(c) = func_value(src, imports, *v) {
                    out.push((src.text(*n).to_string(), c));
                }
            }
        }
        for v in values {
            let mut stack = vec![v];
            while let Some(n) = stack.pop() {
                if n.kind() == "keyed_element"
                    && let [key, value] = super::syntax::named_children(n).collect::<Vec<_>>()[..]
                    && let Some(c) =
                        func_value(src, imports, super::syntax::unwrap_literal_element(value))
                {
                    let key = super::syntax::unwrap_literal_element(key);
                    out.push((src.text(key).to_string(), c));
                }
                stack.extend(super::syntax::named_children(n));
            }
        }
    }
}

/// What a value names when it is a function of the module: a bare name (`upgrade0_11_0`; the join finds none
/// when it names no function) or one of another package of the module by its import path
/// (`mon.UpdateCephDeploymentAndWait`).
fn func_value(
    src: &super::syntax::Src<'_>,
    imports: &super::Imports,
    v: Node<'_>,
) -> Option<Callee> {
    match v.kind() {
        "identifier" => {
            let name = src.text(v);
            (!matches!(name, "nil" | "true" | "false") && !super::body::BUILTINS.contains(&name))
                .then(|| Callee::Path(name.to_string()))
        }
        "selector_expression" => {
            let pkg = src.text(v.child_by_field_name("operand")?);
            let m = src.text(v.child_by_field_name("field")?);
            let path = imports.path_of(pkg)?;
            (!imports.is_external(pkg) && m.starts_with(|c: char| c.is_ascii_uppercase()))
                .then(|| Callee::Path(format!("{path}::{m}")))
        }
        _ => None,
    }
}
