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
        // `ds, err = c.Get(..)`, `ds, err := ..`: whatever the names held, they now hold a call's results.
        for l in lefts.iter().filter(|l| l.kind() == "identifier") {
            self.built.remove(self.src.text(*l));
        }
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
                if s.kind() == "assignment_statement" {
                    self.bind_built(self.src.text(*l), *r);
                }
                continue;
            }
            self.built_meta_set(*l);
            // `pod.ResourceVersion = ""` before a PUT: an unconditional update, never a 409 (as kube-rs's
            // `resource_version = None`).
            if l.kind() == "selector_expression"
                && l.child_by_field_name("field")
                    .is_some_and(|f| self.src.text(f) == "ResourceVersion")
                && self.src.text(*r) == "\"\""
            {
                self.f.clears_resource_version = true;
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
            // `desired.Status = live.Status`, `desired.Status.Replicas = live.Status.Replicas` with both of one
            // type: the status the object has, kept in the one about to be sent, is no status written. (A child's
            // phase copied into its parent's status is: another type.)
            let kept_from_live = path.strip_prefix(var).is_some_and(|field| {
                let value = self.src.compact(*r, 120);
                let same_type = |other: &str| {
                    self.locals
                        .get(var)
                        .is_some_and(|t| self.locals.get(other) == Some(t))
                };
                value != path
                    && value
                        .strip_suffix(field)
                        .is_some_and(|other| other != var && same_type(other))
            });
            if path.starts_with(&format!("{var}.Status")) && !kept_from_live {
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
            self.bind_built(&name, *v);
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

impl Walk<'_, '_> {
    /// `ds := &apps.DaemonSet{ObjectMeta: .., Spec: ..}`: an object built here, with no resourceVersion, until it is
    /// read into or given one (see `ApiCall::unversioned`). An empty literal (`obj := &v1.Foo{}`) is there to be
    /// read into, and is not counted.
    fn bind_built(&mut self, name: &str, v: Node<'_>) {
        let lit = syntax::strip_ref(v);
        let built = lit.kind() == "composite_literal"
            && !syntax::keyed_elements(lit).is_empty()
            && !self.src.text(lit).contains("ResourceVersion")
            && self.kind_of(v).is_some();
        if built {
            self.built.insert(name.to_string());
        } else {
            self.built.remove(name);
        }
    }

    /// `ds.ResourceVersion = old.ResourceVersion`, `ds.ObjectMeta = old.ObjectMeta`, `*ds = *old`: the object
    /// now carries a resourceVersion.
    fn built_meta_set(&mut self, l: Node<'_>) {
        if self.built.is_empty() {
            return;
        }
        let Some(var) = root_ident(self.src, l) else {
            return;
        };
        let path = self.src.compact(l, 120);
        if path.contains("ResourceVersion") || path.ends_with("ObjectMeta") || path.starts_with('*')
        {
            self.built.remove(var);
        }
    }

    /// A call that may give a built object a resourceVersion: a read into it (`r.Get(ctx, key, ds)`), a copy
    /// into it (`old.DeepCopyInto(ds)`), a setter (`ds.SetResourceVersion(v)`).
    pub(super) fn built_used(&mut self, func: Node<'_>, args: &[Node<'_>]) {
        if self.built.is_empty() || func.kind() != "selector_expression" {
            return;
        }
        let Some(field) = func.child_by_field_name("field") else {
            return;
        };
        let m = self.src.text(field);
        let on = func.child_by_field_name("operand");
        if (m.contains("ResourceVersion") || m == "SetObjectMeta")
            && let Some(var) = on.and_then(|o| root_ident(self.src, o))
        {
            self.built.remove(var);
        }
        if matches!(
            m,
            "Get" | "List" | "DeepCopyInto" | "Into" | "Decode" | "Unmarshal"
        ) {
            for a in args {
                if let Some(var) = root_ident(self.src, *a) {
                    self.built.remove(var);
                }
            }
        }
    }

    /// Is `call` a PUT of an object built here from a literal (see `ApiCall::unversioned`)?
    pub(super) fn unversioned(&self, call: &crate::sema::ApiCall, args: &[Node<'_>]) -> bool {
        use crate::sema::ApiMethod;
        if !matches!(call.method, ApiMethod::Replace | ApiMethod::ReplaceStatus) {
            return false;
        }
        super::client::object_arg(&call.method, args)
            .map(syntax::strip_ref)
            .filter(|o| o.kind() == "identifier")
            .is_some_and(|o| self.built.contains(self.src.text(o)))
    }
}
