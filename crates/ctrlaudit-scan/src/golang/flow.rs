//! What locals hold as a function runs: their types, builder chains bound to them, volatile values, and the
//! volatile values assigned into an object until a write of it carries them.

use super::body::{Pending, Place, Walk};
use super::controllers;
use super::syntax::{self, Src, named_children, qualified, root_ident};
use tree_sitter::Node;

impl Walk<'_, '_> {
    pub(super) fn var_declaration(&mut self, s: Node<'_>) {
        for spec in syntax::specs(s) {
            let names = syntax::field_children(spec, "name");
            if let Some(t) = spec.child_by_field_name("type") {
                let ty = syntax::base_type(self.src, t);
                for n in &names {
                    self.locals
                        .insert(self.src.text(*n).to_string(), ty.clone());
                    self.note_package(self.src.text(*n), Some(t));
                    self.declare_type(self.src.text(*n), t);
                }
            }
            if let Some(v) = spec.child_by_field_name("value") {
                let values: Vec<Node> = named_children(v).collect();
                self.bind_clients(&names, &values);
                self.bind(&names, &values);
            }
        }
    }

    pub(super) fn assignment(&mut self, s: Node<'_>, place: &Place) {
        let (Some(left), Some(right)) = (
            s.child_by_field_name("left"),
            s.child_by_field_name("right"),
        ) else {
            return;
        };
        let lefts: Vec<Node> = named_children(left).collect();
        let rights: Vec<Node> = named_children(right).collect();
        self.bind_clients(&lefts, &rights);
        self.bind_result(s, &lefts, &rights, place);
        if s.kind() == "short_var_declaration" {
            self.bind(&lefts, &rights);
        } else if lefts.len() == 1
            && lefts[0].kind() == "identifier"
            && rights.len() == 1
            && let Some(steps) = self.chain_of(rights[0])
        {
            self.builders
                .insert(self.src.text(lefts[0]).to_string(), steps);
        }
        for (l, r) in lefts.iter().zip(&rights) {
            if l.kind() == "identifier" {
                continue;
            }
            self.label_set_entry(*l, *r);
            self.note_phase_set(s, *l, *r, place);
            // `c.syncHandler = c.sync`.
            if l.kind() == "selector_expression"
                && let Some(field) = l.child_by_field_name("field")
            {
                self.manager_options_set(*l);
                self.func_field(self.src.text(field), *r);
                let ty = l
                    .child_by_field_name("operand")
                    .and_then(|o| self.type_of(o));
                self.store_client(ty, self.src.text(field), *r);
            }
            let Some(var) = root_ident(self.src, *l) else {
                continue;
            };
            let path = self.src.compact(*l, 120);
            if path.starts_with(&format!("{var}.Status")) {
                self.status_set.insert(var.to_string());
            }
            // An unconditional assignment of a volatile value into an object: the next write of it carries it.
            if place.branch {
                continue;
            }
            if let Some((span, source)) = self.volatile_in(*r)
                && !stamped_once(self.src, *l)
            {
                self.pending.push(Pending {
                    var: var.to_string(),
                    span,
                    source,
                    key: Some(key_of(self.src, *l, var)),
                });
            }
        }
    }

    /// `x := …` and `var x = …`: the types and volatile values locals take.
    pub(super) fn bind(&mut self, names: &[Node<'_>], values: &[Node<'_>]) {
        // `job, ok := e.Object.(*v1.PaddleJob)`: the first name takes the asserted type.
        if let ([first, _, ..], [v]) = (names, values)
            && let Some(k) = self.kind_of(*v)
        {
            self.locals.insert(self.src.text(*first).to_string(), k);
        }
        // `f, err := os.CreateTemp(..)`: the first result's methods are taken as that package's, as for one.
        if let ([first, _, ..], [v]) = (names, values)
            && let Some(pkg) = self.result_package(*v)
        {
            self.local_packages
                .insert(self.src.text(*first).to_string(), pkg.to_string());
        }
        if names.len() != values.len() {
            return;
        }
        for (n, v) in names.iter().zip(values) {
            let name = self.src.text(*n).to_string();
            // `waiter := eks.NewClusterActiveWaiter(k)`: its methods are taken as that package's (see `callee`).
            if let Some(pkg) = self.result_package(*v) {
                self.local_packages.insert(name.clone(), pkg.to_string());
            }
            self.bind_type(&name, *v);
            self.bind_label_set(&name, *v);
            if let Some(k) = self.accessor_kind(*v) {
                self.typed_clients.insert(name.clone(), k);
            }
            if let Some(k) = self.kind_of(*v) {
                self.locals.insert(name.clone(), k);
            }
            if let Some(found) = self.volatile_in(*v) {
                self.volatile_locals.insert(name.clone(), found);
            }
            let text = self.text_of(*v);
            if !text.sources.is_empty() {
                self.text_locals.insert(name.clone(), text);
            }
            if let Some(steps) = self.chain_of(*v) {
                self.builders.insert(name, steps);
            }
        }
    }

    pub(super) fn chain_of(&self, v: Node<'_>) -> Option<Vec<controllers::Step>> {
        controllers::unfinished_chain(self.src, self.imports, v, &self.builders)
    }

    /// The first volatile source in an expression (`time.Now()`, `metav1.Now()`, `uuid.NewString()`, a local
    /// holding one), except inside `meta.SetStatusCondition`, which keeps a condition's transition time unless its
    /// status changes.
    pub(super) fn volatile_in(&self, n: Node<'_>) -> Option<(crate::finding::Span, String)> {
        let mut found = None;
        syntax::any_node(n, &mut |x| {
            if x.kind() == "identifier"
                && let Some(v) = self.volatile_locals.get(self.src.text(x))
            {
                found = Some(v.clone());
                return true;
            }
            if x.kind() != "call_expression" {
                return false;
            }
            let Some((pkg, f)) = x
                .child_by_field_name("function")
                .and_then(|f| qualified(self.src, f))
            else {
                return false;
            };
            let volatile = (self.imports.is(pkg, "time") && f == "Now")
                || (self.imports.is(pkg, "k8s.io/apimachinery/pkg/apis/meta/v1")
                    && matches!(f, "Now" | "NowMicro"))
                || (self.imports.is(pkg, "github.com/google/uuid")
                    && matches!(f, "New" | "NewString" | "NewRandom"))
                || (self.imports.is(pkg, "k8s.io/apimachinery/pkg/util/uuid") && f == "NewUUID");
            if volatile {
                found = Some((self.src.span(x), self.src.compact(x, 60)));
            }
            volatile
        });
        found
    }
}

/// The key an assignment writes under: an annotation or label key, or the field path (`Status.LastSync`).
/// `obj.Annotations[k] = time.Now()…` after `if obj.Annotations[k] != "" { return … }`: the function returned
/// before when the key was set, so the stamp is written once, when it was missing.
fn stamped_once(src: &Src<'_>, lhs: Node<'_>) -> bool {
    let Some(index) = (lhs.kind() == "index_expression")
        .then(|| lhs.child_by_field_name("index"))
        .flatten()
    else {
        return false;
    };
    let looked_up = format!("[{}]", src.text(index));
    let Some(body) = syntax::enclosing_fn(lhs) else {
        return false;
    };
    syntax::any_node(body, &mut |n| {
        n.kind() == "if_statement"
            && n.end_byte() <= lhs.start_byte()
            && src.text(n).split('{').next().is_some_and(|head| {
                head.contains(&looked_up) && !head.contains("== \"\"") && !head.contains("!ok")
            })
            && n.child_by_field_name("consequence").is_some_and(|c| {
                super::statements(c)
                    .last()
                    .is_some_and(|l| l.kind() == "return_statement")
            })
    })
}

pub(super) fn key_of(src: &Src<'_>, lhs: Node<'_>, var: &str) -> String {
    if lhs.kind() == "index_expression"
        && let Some(i) = lhs.child_by_field_name("index")
    {
        return src.text(i).trim_matches('"').to_string();
    }
    let t = src.compact(lhs, 120);
    t.strip_prefix(var)
        .and_then(|r| r.strip_prefix('.'))
        .unwrap_or(&t)
        .to_string()
}
