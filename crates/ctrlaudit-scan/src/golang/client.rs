//! controller-runtime client calls as typed API operations: which verb and subresource, the object's kind, and
//! whether the status it carries is dropped.

use super::body::{Place, Walk};
use super::syntax::{self, Src, named_children, qualified, root_ident, strip_ref};
use crate::sema::{ApiArgCall, ApiCall, ApiMethod, Callee};
use std::collections::HashSet;
use tree_sitter::Node;

/// The most items a list may ask for and still cost about what a get does (see `ApiCall::one_page`).
const SMALL_PAGE: u64 = 10;
impl Walk<'_, '_> {
    /// A controller-runtime client call: `r.Get(ctx, key, &obj)`, `r.Client.Update(ctx, obj)`,
    /// `r.Status().Patch(ctx, obj, patch)`; or a client-go clientset call (see `clientset_call`).
    pub(super) fn api_call(
        &self,
        func: Node<'_>,
        args: &[Node<'_>],
        place: &Place,
    ) -> Option<ApiCall> {
        if func.kind() != "selector_expression" {
            return None;
        }
        if let Some(call) = self.create_or_update_read(func, args, place) {
            return Some(call);
        }
        let recv = func.child_by_field_name("operand")?;
        let method = self.src.text(func.child_by_field_name("field")?);
        if let Some(call) = self.clientset_call(func, recv, method, args, place) {
            return Some(call);
        }
        let status = match recv.kind() {
            "identifier" | "selector_expression" if self.is_client(recv) => false,
            "call_expression" if self.is_client_accessor(recv) => false,
            "call_expression" => {
                let f = recv.child_by_field_name("function")?;
                if !f
                    .child_by_field_name("operand")
                    .is_some_and(|o| self.is_client(o) || self.is_client_accessor(o))
                {
                    return None;
                }
                let name = f
                    .child_by_field_name("field")
                    .map(|x| self.src.text(x))
                    .unwrap_or("");
                let a = self.src.text(recv.child_by_field_name("arguments")?);
                match (name, a) {
                    ("Status", "()") => true,
                    ("SubResource", "(\"status\")") => true,
                    _ => return None,
                }
            }
            _ => return None,
        };
        let (min_args, m) = match (method, status) {
            ("Get", false) => (3, ApiMethod::Get),
            ("List", false) => (2, ApiMethod::List),
            ("Create", false) => (2, ApiMethod::Create),
            ("Update", false) => (2, ApiMethod::Replace),
            ("Update", true) => (2, ApiMethod::ReplaceStatus),
            ("Patch", false) => (3, ApiMethod::Patch),
            ("Patch", true) => (3, ApiMethod::PatchStatus),
            ("Apply", false) => (2, ApiMethod::Patch),
            ("Delete", false) => (2, ApiMethod::Delete),
            ("DeleteAllOf", false) => (2, ApiMethod::DeleteCollection),
            _ => return None,
        };
        if args.len() < min_args || !is_context(self.src, args[0]) {
            return None;
        }
        // client-go's typed clients take a name and options (`Get(ctx, name, metav1.GetOptions{})`).
        if args.iter().any(|a| {
            self.src.text(*a).contains("metav1.") && self.src.text(*a).contains("Options{")
        }) {
            return None;
        }
        let obj = object_arg(&m, args)?;
        let mut kind = self.kind_of(obj);
        if m == ApiMethod::List {
            kind = kind.and_then(|k| k.strip_suffix("List").map(str::to_string));
        }
        let ssa = method == "Apply"
            || args.get(2).is_some_and(|p| {
                qualified(self.src, *p).is_some_and(|(pkg, f)| {
                    self.imports
                        .is(pkg, "sigs.k8s.io/controller-runtime/pkg/client")
                        && f == "Apply"
                })
            });
        let var = root_ident(self.src, obj);
        let body_has_status = matches!(m, ApiMethod::Replace | ApiMethod::Patch)
            && (var.is_some_and(|v| self.status_set.contains(v))
                || literal_sets_status(self.src, obj));
        let (cached, client) = self.read_client(recv);
        Some(ApiCall {
            body_has_status,
            server_side_apply: ssa,
            cached: m.is_read() && cached,
            client,
            ..self.typed_call(func, m, kind, place)
        })
    }

    /// What a read through client `recv` is served by, as far as this file tells: the cache unless the client
    /// is known here to have none (a local from `client.New`) or is named for the API reader or for having no
    /// cache; with the reference the join judges further (see `client_ref`).
    fn read_client(&self, recv: Node<'_>) -> (bool, Option<crate::sema::ClientRef>) {
        let recv_text = self.src.text(recv).to_ascii_lowercase();
        let (uncached_here, client) = self.client_ref(recv);
        let cached =
            !uncached_here && !recv_text.contains("apireader") && !recv_text.contains("uncached");
        (cached, client)
    }

    /// `controllerutil.CreateOrUpdate(ctx, c, obj, mutate)` (or `CreateOrPatch`): it first GETs `obj` through
    /// client `c`, which is what a read rule judges (from the cache or not, as any read of `c`). Its create or
    /// write after the mutate is left out: it runs only when the object is missing or the mutate changed it.
    fn create_or_update_read(
        &self,
        func: Node<'_>,
        args: &[Node<'_>],
        place: &Place,
    ) -> Option<ApiCall> {
        let (pkg, name) = qualified(self.src, func)?;
        if !self.imports.is(
            pkg,
            "sigs.k8s.io/controller-runtime/pkg/controller/controllerutil",
        ) || !matches!(name, "CreateOrUpdate" | "CreateOrPatch")
            || args.len() < 4
            || !is_context(self.src, args[0])
            || !self.is_client(args[1])
        {
            return None;
        }
        let (cached, client) = self.read_client(args[1]);
        Some(ApiCall {
            cached,
            client,
            ..self.typed_call(func, ApiMethod::Get, self.kind_of(args[2]), place)
        })
    }

    /// A client-go typed clientset call: `cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})`,
    /// `c.AppsV1().Deployments(ns).UpdateStatus(ctx, d, opts)`. It goes to the API server every time: a clientset
    /// has no cache (a lister is what reads an informer's).
    fn clientset_call(
        &self,
        func: Node<'_>,
        resource: Node<'_>,
        method: &str,
        args: &[Node<'_>],
        place: &Place,
    ) -> Option<ApiCall> {
        // client-go's scale client (`sc.Scales(ns).Get(ctx, groupResource, name, opts)`): a GET of a workload's
        // scale subresource, from the API server every time.
        if method == "Get"
            && args.len() == 4
            && is_context(self.src, args[0])
            && dynamic_step(self.src, resource, "Scales").is_some()
        {
            return Some(self.typed_call(func, ApiMethod::Get, Some("Scale".into()), place));
        }
        let accessor_kind = match resource.kind() {
            // A typed client held in a variable: `secrets := cs.CoreV1().Secrets(ns)`, or a parameter typed
            // `corev1client.SecretInterface`.
            "identifier" => self
                .typed_clients
                .get(self.src.text(resource))
                .cloned()
                .map(Some),
            // client-go's dynamic client (`dyn.Resource(gvr).Namespace(ns).Get(..)`): uncached too; the kind is
            // in a GroupVersionResource.
            _ if is_dynamic_resource(self.src, resource) => Some(None),
            _ => self.accessor_kind(resource).map(Some),
        };
        // Any other receiver handed apimachinery's options literal (`x.Get(ctx, name, metav1.GetOptions{})`) is
        // client-go's calling convention: a module's facade over a dynamic or generated client, a metadata
        // client. controller-runtime's client and listers take no such options, so the call goes to the API
        // server; its kind is unknown.
        let accessor_kind =
            accessor_kind.or_else(|| self.takes_meta_options(method, args).then_some(None));
        let accessor_kind = accessor_kind?;
        let status_arg = || {
            args.last()
                .is_some_and(|a| self.src.text(*a) == "\"status\"")
        };
        let (min_args, m, obj) = match method {
            "Get" => (3, ApiMethod::Get, None),
            "List" => (2, ApiMethod::List, None),
            "Create" => (3, ApiMethod::Create, args.get(1)),
            "Update" => (3, ApiMethod::Replace, args.get(1)),
            "UpdateStatus" => (3, ApiMethod::ReplaceStatus, args.get(1)),
            "Patch" if status_arg() => (5, ApiMethod::PatchStatus, None),
            "Patch" => (5, ApiMethod::Patch, None),
            "Apply" => (3, ApiMethod::Patch, None),
            "ApplyStatus" => (3, ApiMethod::PatchStatus, None),
            "Delete" => (3, ApiMethod::Delete, None),
            "DeleteCollection" => (3, ApiMethod::DeleteCollection, None),
            _ => return None,
        };
        if args.len() < min_args || !is_context(self.src, args[0]) {
            return None;
        }
        let kind = obj.and_then(|o| self.kind_of(*o)).or(accessor_kind);
        let body_has_status = m == ApiMethod::Replace
            && obj
                .and_then(|o| root_ident(self.src, *o))
                .is_some_and(|v| self.status_set.contains(v));
        let ssa = method.starts_with("Apply");
        // `List(ctx, metav1.ListOptions{Limit: 1})`: a page of a few items (to learn the collection's
        // resourceVersion), which costs what a get does.
        let one_page = m == ApiMethod::List
            && args.get(1).is_some_and(|o| {
                syntax::keyed_value(self.src, strip_ref(*o), "Limit")
                    .and_then(|v| self.src.text(v).parse::<u64>().ok())
                    .is_some_and(|n| n <= SMALL_PAGE)
            });
        Some(ApiCall {
            body_has_status,
            server_side_apply: ssa,
            one_page,
            ..self.typed_call(func, m, kind, place)
        })
    }

    /// Is the options argument of client-go's `method` an apimachinery options literal
    /// (`metav1.GetOptions{..}` as the third argument of `Get(ctx, name, opts)`)?
    fn takes_meta_options(&self, method: &str, args: &[Node<'_>]) -> bool {
        let (at, ty) = match method {
            "Get" => (2, "GetOptions"),
            "List" => (1, "ListOptions"),
            "Create" => (2, "CreateOptions"),
            "Update" | "UpdateStatus" => (2, "UpdateOptions"),
            "Patch" => (4, "PatchOptions"),
            "Delete" => (2, "DeleteOptions"),
            _ => return false,
        };
        args.get(at)
            .map(|a| strip_ref(*a))
            .filter(|a| a.kind() == "composite_literal")
            .and_then(|a| a.child_by_field_name("type"))
            .and_then(|t| syntax::qualified_type(self.src, t))
            .is_some_and(|(pkg, name)| {
                name == ty && self.imports.is(pkg, "k8s.io/apimachinery/pkg/apis/meta/v1")
            })
    }

    /// The kind a clientset's resource accessor serves: `cs.CoreV1().Pods(ns)` → `Pod` (`<Plural>(ns)` or
    /// `<Plural>()` on `<Group>V<n>()`).
    pub(super) fn accessor_kind(&self, resource: Node<'_>) -> Option<String> {
        let plural_fn = (resource.kind() == "call_expression")
            .then(|| resource.child_by_field_name("function"))
            .flatten()
            .filter(|f| f.kind() == "selector_expression")?;
        let plural = self.src.text(plural_fn.child_by_field_name("field")?);
        let group = plural_fn.child_by_field_name("operand")?;
        let group_fn = (group.kind() == "call_expression")
            .then(|| group.child_by_field_name("function"))
            .flatten()?;
        let group_name = group_fn
            .child_by_field_name("field")
            .map_or("", |f| self.src.text(f));
        if !is_group_version(group_name)
            || group
                .child_by_field_name("arguments")
                .is_none_or(|a| a.named_child_count() != 0)
            || !plural.starts_with(|c: char| c.is_ascii_uppercase())
        {
            return None;
        }
        Some(singular(plural))
    }

    /// The kind a client-go typed client's type serves: `corev1client.SecretInterface` → `Secret`, a generated
    /// clientset's `monitoringv1.PrometheusInterface` → `Prometheus` (an interface of a `…/typed/<group>/<version>`
    /// package). A group's interface (`CoreV1Interface`) is not one resource's client.
    pub(super) fn typed_client_kind(&self, ty: Node<'_>) -> Option<String> {
        let (pkg, name) = syntax::qualified_type(self.src, ty)?;
        let path = self.imports.path_of(pkg)?;
        let kind = name.strip_suffix("Interface")?;
        (path.contains("/typed/")
            && kind.starts_with(|c: char| c.is_ascii_uppercase())
            && !is_group_version(kind)
            && !kind.ends_with("Expansion"))
        .then(|| kind.to_string())
    }

    /// A call of `method` at `func`, placed where the walk is: no status in its body, not server-side apply,
    /// not cached, until the caller says otherwise.
    fn typed_call(
        &self,
        func: Node<'_>,
        method: ApiMethod,
        kind: Option<String>,
        place: &Place,
    ) -> ApiCall {
        // A chain over several lines (`r.client.CoreV1().\n\tPods(ns).\n\tGet(..)`) is anchored on its method's line:
        // the line a reader names for the call.
        let mut span = self.src.span(func);
        if let Some(m) = func.child_by_field_name("field") {
            let m = self.src.span(m);
            (span.line, span.column) = (m.line, m.column);
        }
        ApiCall {
            method,
            span,
            kind,
            body_has_status: false,
            awaited_in_iteration: false,
            in_retry: place.in_retry,
            // Until the walk finds it dropped (see `body::block`).
            propagated: true,
            on_error: place.on_error,
            after_change_on_branch: false,
            on_branch: place.branch,
            on_deletion: place.deletion,
            guard: place.guard.clone(),
            then_writes_on_branch: false,
            leaves_phase: self.after_phase_move(place),
            server_side_apply: false,
            one_page: false,
            unversioned: false,
            cached: false,
            client: None,
            text: self.src.compact(func, 80),
            via_producer: None,
        }
    }

    /// Is `recv` a controller-runtime client (or reader)? The receiver of a reconciler method, which embeds one
    /// (`r.Get`); a local or parameter typed as one (`c client.Client`); a field or variable named for one
    /// (`r.Client`, `r.kubeClient`, `r.APIReader`). Anything else with a `Patch(ctx, obj, …)` method — flux's
    /// `SerialPatcher`, cluster-api's patch helper, a cloud actuator — is not the API server's client: what it
    /// sends is its own business.
    pub(super) fn is_client(&self, recv: Node<'_>) -> bool {
        let name = match recv.kind() {
            "identifier" => {
                let name = self.src.text(recv);
                if self.recv.as_deref() == Some(name) || self.holds_uncached_client(name) {
                    return true;
                }
                if let Some(t) = self.locals.get(name) {
                    return CLIENT_TYPES.contains(&t.as_str());
                }
                name
            }
            "selector_expression" => recv
                .child_by_field_name("field")
                .map_or("", |f| self.src.text(f)),
            _ => return false,
        };
        let lower = name.to_ascii_lowercase();
        lower.contains("client") || lower.contains("reader") || lower.contains("writer")
    }

    /// A call of the module's function handed a client and objects of one known kind
    /// (`kubeutil.PatchResource(original, restore, r.kbClient)`): if the join finds the function to be a thin
    /// wrapper of one API call, this is that call, of that kind, made here (see `Unit::wrapped_calls`).
    pub(super) fn object_handed_with_client(
        &mut self,
        callee: &Callee,
        func: Node<'_>,
        args: &[Node<'_>],
        place: &Place,
    ) {
        // Once per deletion is not what the rules judge a call site for.
        if place.deletion
            || !args.iter().any(|a| {
                (matches!(a.kind(), "identifier" | "selector_expression") && self.is_client(*a))
                    || self.is_client_accessor(*a)
            })
        {
            return;
        }
        let kinds: HashSet<String> = args.iter().filter_map(|a| self.kind_of(*a)).collect();
        let Ok([kind]) = <[String; 1]>::try_from(kinds.into_iter().collect::<Vec<_>>()) else {
            return;
        };
        let call = self
            .typed_call(func, ApiMethod::Get, Some(kind), place)
            .with_method(());
        self.f.api_arg_calls.push(ApiArgCall {
            callee: callee.clone(),
            passes_api: true,
            call,
        });
    }

    /// Is `n` a getter of a client (`mgr.GetClient()`, `r.GetClient()`, `mgr.GetAPIReader()`, `c.Client()`): a call
    /// with no arguments of a method named for one.
    fn is_client_accessor(&self, n: Node<'_>) -> bool {
        n.kind() == "call_expression"
            && n.child_by_field_name("arguments")
                .is_some_and(|a| a.named_child_count() == 0)
            && n.child_by_field_name("function")
                .filter(|f| f.kind() == "selector_expression")
                .and_then(|f| f.child_by_field_name("field"))
                .is_some_and(|m| {
                    let m = self.src.text(m).to_ascii_lowercase();
                    m.contains("client") || m.contains("reader")
                })
    }

    /// The kind of an object expression: `&appv1.Widget{}`, a local of that type, `new(appv1.Widget)`.
    pub(super) fn kind_of(&self, obj: Node<'_>) -> Option<String> {
        let obj = strip_ref(obj);
        match obj.kind() {
            "composite_literal" => obj
                .child_by_field_name("type")
                .map(|t| syntax::base_type(self.src, t)),
            "identifier" => {
                let name = self.src.text(obj);
                self.locals
                    .get(name)
                    .or_else(|| self.range_kinds.get(name))
                    .cloned()
            }
            // `&jobs.Items[i]`, `activeJobs[i]`: an item of a list or an element of a typed slice.
            "index_expression" => {
                let of = obj.child_by_field_name("operand")?;
                match of.kind() {
                    "identifier" => self
                        .local_elems
                        .get(self.src.text(of))
                        .map(|r| r.name.clone()),
                    _ => self.items_kind(of),
                }
            }
            // `e.Object.(*v1.PaddleJob)`.
            "type_assertion_expression" => obj
                .child_by_field_name("type")
                .map(|t| syntax::base_type(self.src, t)),
            "call_expression" => {
                let f = obj.child_by_field_name("function")?;
                let args = obj.child_by_field_name("arguments")?;
                match self.src.text(f) {
                    "new" => named_children(args)
                        .next()
                        .map(|t| syntax::base_type(self.src, t)),
                    _ if f.kind() == "selector_expression"
                        && f.child_by_field_name("field")
                            .is_some_and(|x| self.src.text(x) == "DeepCopy") =>
                    {
                        self.kind_of(f.child_by_field_name("operand")?)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// `dyn.Resource(gvr)` or `dyn.Resource(gvr).Namespace(ns)`: a dynamic client's resource interface.
fn is_dynamic_resource(src: &Src<'_>, n: Node<'_>) -> bool {
    match dynamic_step(src, n, "Namespace") {
        Some(inner) => dynamic_step(src, inner, "Resource").is_some(),
        None => dynamic_step(src, n, "Resource").is_some(),
    }
}

/// `x.<name>(one argument)`: its operand `x`.
fn dynamic_step<'a>(src: &Src<'_>, n: Node<'a>, name: &str) -> Option<Node<'a>> {
    if n.kind() != "call_expression"
        || n.child_by_field_name("arguments")
            .is_none_or(|a| a.named_child_count() != 1)
    {
        return None;
    }
    let f = n
        .child_by_field_name("function")
        .filter(|f| f.kind() == "selector_expression")?;
    (f.child_by_field_name("field")
        .is_some_and(|x| src.text(x) == name))
    .then(|| f.child_by_field_name("operand"))
    .flatten()
}

/// A clientset's API group accessor: `CoreV1`, `AppsV1`, `BatchV1beta1`, `SchedulingV1alpha1`.
pub(super) fn is_group_version(name: &str) -> bool {
    let Some((group, version)) = name.rsplit_once('V') else {
        return false;
    };
    let level = version.trim_start_matches(|c: char| c.is_ascii_digit());
    let numbered = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    group.starts_with(|c: char| c.is_ascii_uppercase())
        && level.len() < version.len()
        && (level.is_empty()
            || ["alpha", "beta"]
                .iter()
                .any(|l| level.strip_prefix(l).is_some_and(numbered)))
}

/// The kind a clientset's resource accessor names: `Pods` → `Pod`, `Proxies` → `Proxy`, `Ingresses` →
/// `Ingress`, `Endpoints` → `Endpoints`.
fn singular(plural: &str) -> String {
    if plural == "Endpoints" {
        return plural.to_string();
    }
    if let Some(stem) = plural.strip_suffix("ies") {
        return format!("{stem}y");
    }
    for suffix in ["sses", "shes", "ches", "xes"] {
        if plural.ends_with(suffix) {
            return plural[..plural.len() - 2].to_string();
        }
    }
    plural.strip_suffix('s').unwrap_or(plural).to_string()
}

/// The object a client call reads into or writes: `Get(ctx, key, obj)`, `List(ctx, list)`, `Update(ctx, obj)`.
/// controller-runtime's client interfaces, by type name.
const CLIENT_TYPES: &[&str] = &[
    "Client",
    "Reader",
    "Writer",
    "StatusClient",
    "StatusWriter",
    "SubResourceWriter",
    "SubResourceClient",
    "WithWatch",
];

pub(super) fn object_arg<'a>(m: &ApiMethod, args: &[Node<'a>]) -> Option<Node<'a>> {
    match m {
        ApiMethod::Get => args.get(2).copied(),
        _ => args.get(1).copied(),
    }
}

/// A composite literal object that sets `Status` (`&appv1.Widget{…, Status: …}`).
pub(super) fn literal_sets_status(src: &Src<'_>, obj: Node<'_>) -> bool {
    syntax::keyed_value(src, obj, "Status").is_some()
}

/// The first argument is a context: `ctx`, `reqCtx`, `context.TODO()`, a context kept in a struct
/// (`c.clusterInfo.Context`, `r.opManagerContext`) or a method's (`cmd.Context()`).
pub(super) fn is_context(src: &Src<'_>, a: Node<'_>) -> bool {
    let t = src.text(a).to_ascii_lowercase();
    // `context` itself: a parameter named after the package it shadows.
    t.contains("ctx") || t.contains("context")
}
