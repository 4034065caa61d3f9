//! Where client values come from as a Go function runs (see `sema::ClientOrigin`): a client with no cache made
//! here, a parameter, a helper's result; where they go (struct fields, the module's functions, the return value);
//! and the kinds the manager's client is told never to read from its cache.

use super::body::Walk;
use super::syntax::{self, named_children, qualified};
use crate::sema::{CacheSite, Callee, ClientArg, ClientOrigin, ClientRef, ClientStore};
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

const CLIENT_PKG: &str = "sigs.k8s.io/controller-runtime/pkg/client";

/// What the function's locals hold, as far as clients go.
#[derive(Debug, Default)]
pub(super) struct ClientFlow {
    /// Locals holding a client with no cache (`c, err := client.New(cfg, opts)`).
    uncached: HashSet<String>,
    /// Locals holding a manager's informer cache (`c := mgr.GetCache()`).
    cache: HashSet<String>,
    /// Locals holding what a function of the module returned (`rc, err := scope.RemoteClient()`).
    returned: HashMap<String, Callee>,
    /// Locals holding a list of objects (`[]client.Object{&corev1.Secret{}}`, grown by `append`): their kinds.
    object_lists: HashMap<String, Vec<String>>,
    /// `client.CacheOptions{DisableFor: ..}` and managers whose client caches every kind (see
    /// `FileModel::caches`).
    pub(super) caches: Vec<CacheSite>,
    /// Locals holding a manager's options literal (`opts := ctrl.Options{..}`) → whether they leave the client's
    /// options out (no `Client:` key, no `opts.Client = ..` since): its client then caches every kind.
    manager_options: HashMap<String, bool>,
}

impl ClientFlow {
    /// The module's function whose result local `name` holds.
    pub(super) fn returned_by(&self, name: &str) -> Option<Callee> {
        self.returned.get(name).cloned()
    }
}

/// Where controller-runtime's manager and its options are declared.
const MANAGER_PKGS: &[&str] = &[
    "sigs.k8s.io/controller-runtime",
    "sigs.k8s.io/controller-runtime/pkg/manager",
];

impl Walk<'_, '_> {
    /// What a value is made from, as far as clients go.
    fn client_origin(&self, v: Node<'_>) -> Option<ClientOrigin> {
        match v.kind() {
            "parenthesized_expression" => self.client_origin(v.named_child(0)?),
            "identifier" => {
                let name = self.src.text(v);
                if self.clients.uncached.contains(name) {
                    return Some(ClientOrigin::Uncached);
                }
                if self.clients.cache.contains(name) {
                    return Some(ClientOrigin::Cache);
                }
                if let Some(&i) = self.params.get(name) {
                    return Some(ClientOrigin::Param(i));
                }
                self.clients
                    .returned
                    .get(name)
                    .map(|c| ClientOrigin::Returned(c.clone()))
            }
            "call_expression" => {
                let f = v.child_by_field_name("function")?;
                let made_uncached = qualified(self.src, f).is_some_and(|(pkg, name)| {
                    self.imports.is(pkg, CLIENT_PKG) && matches!(name, "New" | "NewWithWatch")
                }) || (f.kind() == "selector_expression"
                    && f.child_by_field_name("field")
                        .is_some_and(|m| self.src.text(m) == "GetAPIReader"));
                // `client.New(cfg, client.Options{Cache: &client.CacheOptions{Reader: mgr.GetCache()}})`: reads
                // are served by that cache (OpenKruise's client per controller).
                if made_uncached && self.reads_through_cache(v) {
                    return Some(ClientOrigin::Cache);
                }
                if made_uncached {
                    return Some(ClientOrigin::Uncached);
                }
                if f.kind() == "selector_expression"
                    && f.child_by_field_name("field")
                        .is_some_and(|m| self.src.text(m) == "GetCache")
                {
                    return Some(ClientOrigin::Cache);
                }
                self.callee(f).map(ClientOrigin::Returned)
            }
            "selector_expression" => {
                let field = self.src.text(v.child_by_field_name("field")?).to_string();
                let ty = self.type_of(v.child_by_field_name("operand")?)?;
                Some(ClientOrigin::Field(ty, field))
            }
            _ => None,
        }
    }

    /// The options of `client.New(cfg, opts)` give it a cache to read from (`Cache: &client.CacheOptions{Reader:
    /// ..}`).
    fn reads_through_cache(&self, call: Node<'_>) -> bool {
        call.child_by_field_name("arguments")
            .and_then(|a| named_children(a).nth(1))
            .map(syntax::strip_ref)
            .filter(|o| o.kind() == "composite_literal")
            .and_then(|o| syntax::keyed_value(self.src, o, "Cache"))
            .map(syntax::strip_ref)
            .is_some_and(|c| {
                c.kind() == "composite_literal"
                    && syntax::keyed_value(self.src, c, "Reader").is_some()
            })
    }

    /// `x := v`, `x, err := v`, `x = v`, `var x = v`: what each local now holds.
    pub(super) fn bind_clients(&mut self, names: &[Node<'_>], values: &[Node<'_>]) {
        let pairs: Vec<(Node, Node)> = match (names, values) {
            ([first, ..], [v]) => vec![(*first, *v)],
            _ if names.len() == values.len() => {
                names.iter().copied().zip(values.iter().copied()).collect()
            }
            _ => return,
        };
        for (n, v) in pairs.into_iter().filter(|(n, _)| n.kind() == "identifier") {
            let name = self.src.text(n).to_string();
            self.clients.uncached.remove(&name);
            self.clients.cache.remove(&name);
            self.clients.returned.remove(&name);
            match self.client_origin(v) {
                Some(ClientOrigin::Uncached) => {
                    self.clients.uncached.insert(name.clone());
                }
                Some(ClientOrigin::Cache) => {
                    self.clients.cache.insert(name.clone());
                }
                Some(ClientOrigin::Returned(c)) => {
                    self.clients.returned.insert(name.clone(), c);
                }
                _ => {}
            }
            self.clients.manager_options.remove(&name);
            if let Some(default_client) = self.manager_options_literal(v) {
                self.clients
                    .manager_options
                    .insert(name.clone(), default_client);
            }
            if let Some(kinds) = self.object_list(v) {
                self.clients.object_lists.insert(name, kinds);
            }
        }
    }

    /// `ctrl.Options{..}` (or `manager.Options{..}`): whether it leaves the client's options out.
    fn manager_options_literal(&self, v: Node<'_>) -> Option<bool> {
        let v = syntax::strip_ref(v);
        let (pkg, name) = v
            .child_by_field_name("type")
            .filter(|_| v.kind() == "composite_literal")
            .and_then(|t| syntax::qualified_type(self.src, t))?;
        (name == "Options" && MANAGER_PKGS.iter().any(|p| self.imports.is(pkg, p)))
            .then(|| syntax::keyed_value(self.src, v, "Client").is_none())
    }

    /// `opts.Client = client.Options{..}`: the options `opts` holds set the client's after all.
    pub(super) fn manager_options_set(&mut self, target: Node<'_>) {
        if let (Some(o), Some(f)) = (
            target.child_by_field_name("operand"),
            target.child_by_field_name("field"),
        ) && self.src.text(f) == "Client"
            && let Some(v) = self.clients.manager_options.get_mut(self.src.text(o))
        {
            *v = false;
        }
    }

    /// `ctrl.NewManager(cfg, opts)` / `manager.New(cfg, opts)` with options that leave the client's out: this
    /// manager's client reads every kind from its cache, whatever another manager's `DisableFor` says.
    pub(super) fn manager_built(&mut self, func: Node<'_>, args: &[Node<'_>]) {
        let is_new = qualified(self.src, func).is_some_and(|(pkg, f)| {
            (f == "NewManager" && self.imports.is(pkg, MANAGER_PKGS[0]))
                || (f == "New" && self.imports.is(pkg, MANAGER_PKGS[1]))
        });
        let Some(opts) = args.get(1).filter(|_| is_new) else {
            return;
        };
        let default_client = match opts.kind() {
            "identifier" => self.clients.manager_options.get(self.src.text(*opts)) == Some(&true),
            _ => self.manager_options_literal(*opts) == Some(true),
        };
        if default_client {
            self.clients.caches.push(CacheSite {
                line: func.start_position().row + 1,
                disabled: Vec::new(),
                unstructured: false,
            });
        }
    }

    /// The kinds of a list of objects: a slice literal of them, `append` to one, or a local holding one.
    fn object_list(&self, v: Node<'_>) -> Option<Vec<String>> {
        match v.kind() {
            "composite_literal" => {
                let ty = v.child_by_field_name("type")?;
                if ty.kind() != "slice_type" {
                    return None;
                }
                let body = v.child_by_field_name("body")?;
                Some(
                    named_children(body)
                        .filter_map(|e| self.kind_of(syntax::unwrap_literal_element(e)))
                        .collect(),
                )
            }
            "call_expression"
                if v.child_by_field_name("function")
                    .is_some_and(|f| self.src.text(f) == "append") =>
            {
                let mut args = named_children(v.child_by_field_name("arguments")?);
                let mut kinds = self.object_list(args.next()?).unwrap_or_default();
                kinds.extend(args.filter_map(|a| self.kind_of(a)));
                Some(kinds)
            }
            "identifier" => self.clients.object_lists.get(self.src.text(v)).cloned(),
            _ => None,
        }
    }

    /// `field: v` in a struct literal, `x.field = v`: a client stored where the type's methods will use it.
    pub(super) fn store_client(&mut self, ty: Option<String>, field: &str, v: Node<'_>) {
        if let Some(ty) = ty
            && let Some(from) = self.client_origin(v)
        {
            self.f.client_stores.push(ClientStore {
                ty,
                field: field.to_string(),
                from,
            });
        }
    }

    /// The struct type a value is of, by its own name: the receiver's, else what `kind_of` reads (a local's or
    /// parameter's, a literal's).
    pub(super) fn type_of(&self, v: Node<'_>) -> Option<String> {
        let receiver = (v.kind() == "identifier")
            .then(|| self.receiver_type(self.src.text(v)))
            .flatten();
        receiver.map(str::to_string).or_else(|| self.kind_of(v))
    }

    /// A call of the module's function handing it a client with no cache, or a parameter passed on.
    pub(super) fn client_args(&mut self, callee: &Callee, args: &[Node<'_>]) {
        for (index, a) in args.iter().enumerate() {
            if let Some(from) = self.client_origin(*a) {
                self.f.client_args.push(ClientArg {
                    callee: callee.clone(),
                    index,
                    from,
                });
            }
        }
    }

    /// `return c, nil`: a function that returns a client with no cache (or another function's result).
    pub(super) fn returned_client(&mut self, s: Node<'_>) {
        let Some(first) = named_children(s)
            .find(|c| c.kind() == "expression_list")
            .and_then(|l| l.named_child(0))
        else {
            return;
        };
        match self.client_origin(first) {
            Some(o @ (ClientOrigin::Uncached | ClientOrigin::Cache)) => {
                self.f.returns_client = Some(o)
            }
            Some(o @ ClientOrigin::Returned(_)) if self.f.returns_client.is_none() => {
                self.f.returns_client = Some(o);
            }
            _ => {}
        }
    }

    /// A local made by `client.New` or `GetAPIReader()`, whatever its name (`c`, `rd`).
    pub(super) fn holds_uncached_client(&self, name: &str) -> bool {
        self.clients.uncached.contains(name)
    }

    /// The client a call is made on: known to have no cache here (a local from `client.New`), or a reference
    /// only the join can judge.
    pub(super) fn client_ref(&self, recv: Node<'_>) -> (bool, Option<ClientRef>) {
        match recv.kind() {
            "identifier" => {
                let name = self.src.text(recv);
                if self.clients.uncached.contains(name) {
                    return (true, None);
                }
                if self.clients.cache.contains(name) {
                    return (false, Some(ClientRef::Cache));
                }
                if let Some(returned) = self.clients.returned.get(name) {
                    return (false, Some(ClientRef::Returned(returned.clone())));
                }
                (false, self.params.get(name).map(|&i| ClientRef::Param(i)))
            }
            "selector_expression" => {
                let field = recv.child_by_field_name("field");
                let ty = recv
                    .child_by_field_name("operand")
                    .and_then(|o| self.type_of(o));
                let r = field
                    .zip(ty)
                    .map(|(f, ty)| ClientRef::Field(ty, self.src.text(f).to_string()));
                (false, r)
            }
            // `mgr.GetCache().Get(..)`: the informer cache itself.
            "call_expression" if self.client_origin(recv) == Some(ClientOrigin::Cache) => {
                (false, Some(ClientRef::Cache))
            }
            // `r.GetClient()`: what the module's getter returns, when the join traces it to a client with none.
            "call_expression" => (
                false,
                recv.child_by_field_name("function")
                    .and_then(|f| self.callee(f))
                    .map(ClientRef::Returned),
            ),
            _ => (false, None),
        }
    }

    /// `client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}` (or a local list of them): the kinds
    /// the manager's client reads from the API server every time; `Unstructured: true`, which caches unstructured
    /// objects too.
    pub(super) fn cache_options(&mut self, lit: Node<'_>) {
        // controller-runtime before v0.15 said it with `client.NewDelegatingClientInput{CacheUnstructured: true}`.
        let Some(unstructured_key) = lit
            .child_by_field_name("type")
            .and_then(|t| syntax::qualified_type(self.src, t))
            .filter(|(pkg, _)| self.imports.is(pkg, CLIENT_PKG))
            .and_then(|(_, name)| match name {
                "CacheOptions" => Some("Unstructured"),
                "NewDelegatingClientInput" => Some("CacheUnstructured"),
                _ => None,
            })
        else {
            return;
        };
        let unstructured = syntax::keyed_value(self.src, lit, unstructured_key)
            .is_some_and(|v| self.src.text(v) != "false");
        let disabled =
            syntax::keyed_value(self.src, lit, "DisableFor").and_then(|v| self.object_list(v));
        if disabled.is_some() || unstructured {
            self.clients.caches.push(CacheSite {
                line: lit.start_position().row + 1,
                disabled: disabled.unwrap_or_default(),
                unstructured,
            });
        }
    }
}
