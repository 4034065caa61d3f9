//! The crate-level join: files of one crate (a unit) seen together, so that a reconcile in one
//! file, the CRD type in another and a helper in a third are judged as one controller.

mod api_calls;
mod clients;
mod dead_code;
mod generics;
mod reach;
mod resolve;
mod types;
mod values;

use super::sema::{ApiCall, Bindings, CallPath, FileModel, FnModel, Requeue, Value, unbound};
use crate::config::Config;
pub use generics::{Instantiations, join};
use std::collections::{BTreeMap, HashMap, HashSet};

/// See [`Unit::resolve_method`].
const MAX_METHOD_TARGETS: usize = 2;
/// How many implementations of one interface a call through it is followed to (see `Unit::interface_dispatch`):
/// a plugin registry (Flagger's routers, one per mesh) runs one of a few dozen; each implements every method of
/// the interface, so none is reached by a name it only shares.
const MAX_IMPLEMENTATIONS: usize = 24;

/// Built-in kinds whose API has a status subresource (status written through the main resource is dropped).
pub const BUILTIN_WITH_STATUS: &[&str] = &[
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Pod",
    "Job",
    "CronJob",
    "Service",
    "Node",
    "Namespace",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "HorizontalPodAutoscaler",
    "Ingress",
    "PodDisruptionBudget",
    "CertificateSigningRequest",
    "CustomResourceDefinition",
    "APIService",
    "ResourceQuota",
    "ReplicationController",
    "NetworkPolicy",
];

/// Kinds without `metadata.generation`: a generation predicate filters nothing there.
pub const NO_GENERATION: &[&str] = &[
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Endpoints",
    "Event",
    "Lease",
    "Namespace",
    "Node",
];

/// A function in the unit: (file index, function index).
pub type FnId = (usize, usize);

/// Who hands a function another, at which argument, and what (see `Unit::handed_sites`).
type HandedSites = Vec<(FnId, usize, crate::sema::Callee)>;

/// One crate's file models, joined.
#[derive(Debug)]
pub struct Unit<'m> {
    pub files: Vec<&'m FileModel>,
    /// Kinds declared by CRD YAML in the unit, with whether they have the status subresource.
    pub yaml_kinds: HashMap<String, bool>,
    pub config: &'m Config,
    by_name: HashMap<&'m str, Vec<FnId>>,
    /// Functions of `impl` blocks by name: where a method call on a non-`self` receiver may land.
    by_method: HashMap<&'m str, Vec<FnId>>,
    /// Method names defined on many types, with the definitions that implement an interface the unit declares
    /// with that method (see [`Self::interface_dispatch`]): computed once, as every call resolution asks.
    dispatched: HashMap<&'m str, Vec<FnId>>,
    /// Every file's consts, for durations that name a const of another file.
    consts: HashMap<String, f64>,
    /// A Go package's view of the consts (its directory's own over everyone's): two packages of one module
    /// each declare their `pollingPeriod`, and a requeue means its own package's.
    package_consts: HashMap<&'m str, HashMap<String, f64>>,
    /// Calls of dependencies' thin wrappers, read as the API call each wraps (see [`Self::api_calls`]).
    wrapped: HashMap<FnId, Vec<ApiCall>>,
    /// Calls of the crate's own thin wrappers, likewise (see [`Self::wrapper_calls`]).
    wrapped_local: HashMap<FnId, Vec<ApiCall>>,
    /// Variants a function never sees: every call of it is a catch-all arm of a caller that took them before
    /// (see `FnModel::dispatches`).
    dead_variants: HashMap<FnId, HashSet<String>>,
    /// Functions only called from arms that can never run (see `dead_variants`).
    dead_fns: HashSet<FnId>,
    /// The crates the unit's manifest depends on, as paths name them (see [`Self::with_dependencies`]).
    dependencies: HashSet<String>,
    /// Calls on what a function returns that the join found to be an `Api` (see `ApiCall::via_producer`), with
    /// its kind.
    confirmed: HashMap<FnId, Vec<ApiCall>>,
    /// Go clients with no cache (see [`Self::reads_cache`]).
    uncached: clients::UncachedClients,
    /// Method values stored in fields (`FileModel::func_fields`) by the package directory and the field's name,
    /// with the file that stores them: looked up for every method call the unit cannot otherwise resolve.
    func_fields: HashMap<(&'m str, &'m str), Vec<(usize, &'m crate::sema::Callee)>>,
    /// Go types, for methods called on a value of a declared type (see `Unit::resolve_on_type`).
    types: types::TypeIndex<'m>,
    /// Call sites by the function they may land on (see `call_sites`), once asked.
    call_sites: std::sync::OnceLock<HashMap<FnId, Vec<FnId>>>,
    /// Functions handed to others as arguments, by the function handed them (see `handed_sites`), once asked.
    handed_sites: std::sync::OnceLock<HashMap<FnId, HandedSites>>,
    /// The functions a timer runs (see `periodic_roots`), once asked: every root set asks for them.
    periodic_roots: std::sync::OnceLock<Vec<FnId>>,
}

impl<'m> Unit<'m> {
    /// Joins a crate's files (see [`join`], which instantiates generic kinds first) whose manifest names these
    /// dependencies (as paths spell them: `helm_kit`): a call `helm_kit::apply(..)` is that crate's `apply`, never
    /// a function of this crate with the same name.
    pub fn with_dependencies(
        files: Vec<&'m FileModel>,
        yaml_kinds: HashMap<String, bool>,
        config: &'m Config,
        mut dependencies: HashSet<String>,
    ) -> Self {
        // A module of the crate named like a dependency is the module: only the other names mark another crate.
        dependencies.retain(|d| !files.iter().any(|f| !f.library && module_of(&f.path) == d));
        let mut by_name: HashMap<&str, Vec<FnId>> = HashMap::new();
        let mut by_method: HashMap<&str, Vec<FnId>> = HashMap::new();
        let consts: HashMap<String, f64> = files
            .iter()
            .flat_map(|f| f.consts.iter().cloned())
            .collect();
        let mut package_consts: HashMap<&str, HashMap<String, f64>> = HashMap::new();
        for f in files.iter().filter(|f| f.lang == crate::sema::Lang::Go) {
            package_consts
                .entry(package_dir(&f.path))
                .or_insert_with(|| consts.clone())
                .extend(f.consts.iter().cloned());
        }
        for (fi, f) in files.iter().enumerate() {
            for (ni, func) in f.fns.iter().enumerate() {
                by_name
                    .entry(func.name.as_str())
                    .or_default()
                    .push((fi, ni));
                // A test double's methods (`fake.Cloud.ListRoutes`) are what a name or an interface never runs
                // in the controller; a call on its declared type still reaches them (`TypeIndex`).
                if func.self_ty.is_some()
                    && !(f.lang == crate::sema::Lang::Go
                        && is_test_double_package(package_dir(&f.path)))
                {
                    by_method
                        .entry(func.name.as_str())
                        .or_default()
                        .push((fi, ni));
                }
            }
        }
        let mut func_fields: HashMap<(&str, &str), Vec<(usize, &crate::sema::Callee)>> =
            HashMap::new();
        for (fi, f) in files.iter().enumerate() {
            for (field, c) in &f.func_fields {
                func_fields
                    .entry((package_dir(&f.path), field.as_str()))
                    .or_default()
                    .push((fi, c));
            }
        }
        let types = types::TypeIndex::new(&files);
        let mut unit = Self {
            types,
            files,
            yaml_kinds,
            config,
            by_name,
            by_method,
            dispatched: HashMap::new(),
            consts,
            package_consts,
            wrapped: HashMap::new(),
            wrapped_local: HashMap::new(),
            confirmed: HashMap::new(),
            dead_variants: HashMap::new(),
            dead_fns: HashSet::new(),
            dependencies,
            uncached: Default::default(),
            call_sites: std::sync::OnceLock::new(),
            handed_sites: std::sync::OnceLock::new(),
            periodic_roots: std::sync::OnceLock::new(),
            func_fields,
        };
        unit.dispatched = unit.interface_dispatch();
        unit.dead_variants = unit.dispatched_away();
        unit.dead_fns = unit.only_called_from_dead_arms();
        unit.confirmed = unit.confirmed_calls();
        unit.wrapped = unit.wrapped_calls(true);
        unit.wrapped_local = unit.wrapped_calls(false);
        unit.uncached = unit.uncached_clients();
        unit
    }

    pub fn func(&self, id: FnId) -> &'m FnModel {
        &self.files[id.0].fns[id.1]
    }

    /// A requeue's duration in seconds, with the crate's consts for what one file could not evaluate, and through
    /// the function that builds it when it is a call (`from_file` is where the requeue is).
    pub fn requeue_secs(&self, r: &Requeue, from_file: usize) -> Option<f64> {
        self.requeue_secs_within(r, from_file, 0)
    }

    /// An upper bound of a requeue's duration when it is computed but capped (`left.min(RETRY)`), with the
    /// crate's consts.
    pub fn requeue_at_most(&self, r: &Requeue) -> Option<f64> {
        r.duration.as_ref()?.secs_at_most(&self.consts)
    }

    /// The duration is chosen by a condition (`from_secs(if converged { 300 } else { 10 })`): its shortest value
    /// holds only while that condition says so.
    pub fn requeue_is_chosen(&self, r: &Requeue) -> bool {
        r.duration.as_ref().is_some_and(Value::is_chosen)
    }

    fn requeue_secs_within(&self, r: &Requeue, from_file: usize, depth: usize) -> Option<f64> {
        self.requeue_secs_with(r, from_file, depth, &unbound)
    }

    /// `args` gives the enclosing helper's parameters their arguments at the call being followed.
    fn requeue_secs_with(
        &self,
        r: &Requeue,
        from_file: usize,
        depth: usize,
        args: Bindings<'_>,
    ) -> Option<f64> {
        if let Some(via) = &r.via {
            // A builder of Actions (no API call, not async: `requeue::short_retry()`, `after_secs(5)`) whose every
            // return is the same constant requeue; helpers of helpers, a few deep. A reconcile step that returns an
            // Action is judged where its own requeues are.
            let [target] = self.resolve_callee(via, from_file)[..] else {
                return None;
            };
            let f = self.func(target);
            if depth > 3
                || !f.returns_action
                || f.is_async
                || !f.api_calls.is_empty()
                || f.returns.is_empty()
            {
                return None;
            }
            let bind = |name: &str| {
                let i = f.params.iter().position(|p| p == name)?;
                let passed = r.via_args.get(i)?;
                // A caller's own parameter passed on: what the caller was given.
                match passed {
                    Value::Name {
                        name,
                        qualified: false,
                    } => args(name).or_else(|| Some(passed.clone())),
                    _ => Some(passed.clone()),
                }
            };
            let mut secs = f.returns.iter().map(|ret| {
                ret.as_ref()
                    .and_then(|ret| self.requeue_secs_with(ret, target.0, depth + 1, &bind))
            });
            let first = secs.next().flatten()?;
            return secs.all(|s| s == Some(first)).then_some(first);
        }
        r.secs.or_else(|| {
            let d = r.duration.as_ref()?;
            d.secs(self.consts_of(from_file), args)
                .or_else(|| self.duration_or_default(d, from_file))
        })
    }

    /// The consts a file's code sees: its Go package's own first, else the unit's.
    pub(crate) fn consts_of(&self, file: usize) -> &HashMap<String, f64> {
        self.package_consts
            .get(package_dir(&self.files[file].path))
            .unwrap_or(&self.consts)
    }

    /// Is `file` (a span's file) one of the dependencies' files?
    pub fn is_library_file(&self, file: &str) -> bool {
        self.files.iter().any(|f| f.library && f.path == file)
    }

    /// Does `kind` have the status subresource? `None` when the unit does not say.
    pub fn kind_has_status(&self, kind: &str, from_file: usize) -> Option<bool> {
        if let Some(c) = self.files[from_file].crds.iter().find(|c| c.kind == kind) {
            return Some(c.has_status);
        }
        let all: Vec<bool> = self
            .files
            .iter()
            .flat_map(|f| f.crds.iter())
            .filter(|c| c.kind == kind)
            .map(|c| c.has_status)
            .collect();
        if !all.is_empty() {
            // Two declarations that disagree: say nothing rather than guess.
            return if all.iter().all(|b| *b == all[0]) {
                Some(all[0])
            } else {
                None
            };
        }
        if let Some(s) = self.yaml_kinds.get(kind) {
            return Some(*s);
        }
        BUILTIN_WITH_STATUS.contains(&kind).then_some(true)
    }

    /// The functions a Controller's reconcile may be (see [`Unit::reconcile_of`]); none when it is not known.
    pub fn reconcile_fns(&self, file: usize, c: &crate::sema::ControllerModel) -> Vec<FnId> {
        self.reconcile_of(file, c)
            .map(|name| self.resolve(&name, file))
            .unwrap_or_default()
    }

    /// The reconcile a Controller runs, by name: the front end's, or `T::Reconcile` when the reconciler is what a
    /// constructor of the module returns and every function the call may be is declared to return a `T` (or
    /// `*T`) that has a `Reconcile` method.
    pub fn reconcile_of(&self, file: usize, c: &crate::sema::ControllerModel) -> Option<String> {
        let run = c.run.as_ref()?;
        let name = run.reconcile.clone()?;
        let Some(from) = run.reconciler_from.as_ref().filter(|_| name == "Reconcile") else {
            return Some(name);
        };
        let types: HashSet<&str> = self
            .resolve_callee(from, file)
            .into_iter()
            .filter_map(|id| {
                let (_, results) = self.func(id).signature.split_once("->")?;
                let first = results.split(',').next()?.trim_start_matches('*');
                first
                    .chars()
                    .all(|ch| ch.is_alphanumeric() || ch == '_')
                    .then_some(first)
            })
            .collect();
        let typed = match types.into_iter().collect::<Vec<_>>()[..] {
            [t] if self
                .by_method
                .get("Reconcile")
                .into_iter()
                .flatten()
                .any(|id| self.func(*id).self_ty.as_deref() == Some(t)) =>
            {
                format!("{t}::Reconcile")
            }
            _ => name,
        };
        Some(typed)
    }

    /// Functions handed to `Controller::run` as reconcile, and client-go workqueue workers
    /// (`FnModel::works_queue`). Only when the unit has neither (a library of reconcilers, a partial scan),
    /// reconcile-shaped async functions instead: returning an `Action` does not make a function a reconcile
    /// when the crate says which one is.
    pub fn reconcile_roots(&self) -> Vec<FnId> {
        let mut roots = BTreeMap::new();
        for (fi, f) in self.files.iter().enumerate().filter(|(_, f)| !f.library) {
            for c in &f.controllers {
                for id in self.reconcile_fns(fi, c) {
                    roots.insert(id, ());
                }
            }
        }
        // client-go controllers: a workqueue's worker runs each queued object through its sync handler.
        // knative.dev/pkg's generated reconcilers (Tekton, Knative) fetch each queued object from their lister and
        // run the module's `ReconcileKind(ctx, *T) reconciler.Event` on it, or `FinalizeKind` while it is deleted;
        // crossplane-runtime's managed reconciler connects and observes on each pass; a volume provisioner's claim
        // queue provisions and deletes.
        for (fi, f) in self.files.iter().enumerate().filter(|(_, f)| !f.library) {
            for (ni, func) in f.fns.iter().enumerate() {
                if func.works_queue
                    || is_knative_reconcile(func)
                    || is_crossplane_observe(func)
                    || is_volume_provisioner(func)
                    || is_kooper_handler(func)
                {
                    roots.insert((fi, ni), ());
                }
            }
        }
        // A reconciler's method handed on as a value (`dc.Register(ctx, gvr, c.Reconcile)`): a dynamic controller's
        // registry runs it for each queued request, as the manager runs a Controller's reconcile.
        for (fi, f) in self.files.iter().enumerate().filter(|(_, f)| !f.library) {
            for (_, _, passed) in f.fns.iter().flat_map(|func| func.func_args.iter()) {
                if passed.name() != "Reconcile" {
                    continue;
                }
                // Whose it is is not known when `Reconcile` is defined on many types (and an interface's dispatch
                // names only the reconcilers that implement it): each is a root, as each is some Controller's.
                let mut found = self.resolve_callee(passed, fi);
                found.extend(self.by_method.get("Reconcile").into_iter().flatten());
                for id in found {
                    roots.insert(id, ());
                }
            }
        }
        // What a timer runs (`wait.Until(c.monitor, ..)`, the body of a loop over a ticker) runs every period.
        for &id in self.periodic_roots() {
            roots.insert(id, ());
        }
        if !roots.is_empty() {
            return roots.into_keys().collect();
        }
        let policies = self.error_policies();
        // A function the crate calls itself is a step of something else (a reconcile's helper, a deletion
        // handler), not what a Controller runs.
        let called: HashSet<&str> = self
            .files
            .iter()
            .flat_map(|f| f.fns.iter())
            .flat_map(|f| f.calls.iter().filter(|c| c.ctx.path != CallPath::Error))
            .map(|c| c.callee.name())
            .collect();
        for (fi, f) in self.files.iter().enumerate().filter(|(_, f)| !f.library) {
            for (ni, func) in f.fns.iter().enumerate() {
                let id = (fi, ni);
                if func.is_async
                    && func.returns_action
                    && func.object_kind.is_some()
                    && !policies.contains(&id)
                    && !called.contains(func.name.as_str())
                {
                    roots.insert(id, ());
                }
            }
        }
        roots.into_keys().collect()
    }

    /// The kinds the unit's Controllers reconcile: each Controller's own kind, else the object kind of the reconcile
    /// it runs; with no Controller, the kinds of the reconcile-shaped roots. Empty when none is known.
    pub fn reconciled_kinds(&self) -> HashSet<String> {
        let mut kinds: HashSet<String> = self
            .files
            .iter()
            .flat_map(|f| f.controllers.iter())
            .filter_map(|c| c.kind.clone())
            .collect();
        kinds.extend(
            self.reconcile_roots()
                .into_iter()
                .filter_map(|id| self.func(id).object_kind.clone()),
        );
        kinds
    }

    /// Functions handed to `Controller::run` as error_policy, plus error_policy-shaped functions.
    pub fn error_policies(&self) -> HashSet<FnId> {
        let mut out = HashSet::new();
        for (fi, f) in self.files.iter().enumerate().filter(|(_, f)| !f.library) {
            for c in &f.controllers {
                if let Some(name) = c.run.as_ref().and_then(|r| r.error_policy.as_ref()) {
                    out.extend(self.resolve(name, fi));
                }
            }
            for (ni, func) in f.fns.iter().enumerate() {
                if !func.is_async && func.returns_action && func.has_error_ref_param {
                    out.insert((fi, ni));
                }
            }
        }
        out
    }

    /// The innermost function of file `file` whose body holds line `line`.
    pub fn fn_at(&self, file: usize, line: usize) -> Option<FnId> {
        let fns = &self.files.get(file)?.fns;
        (0..fns.len())
            .filter(|&i| (fns[i].span.line..=fns[i].last_line).contains(&line))
            .max_by_key(|&i| fns[i].span.line)
            .map(|i| (file, i))
    }

    /// Every function id of the crate (its dependencies' left out).
    pub fn all_fns(&self) -> impl Iterator<Item = FnId> + '_ {
        self.files
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.library)
            .flat_map(|(fi, f)| (0..f.fns.len()).map(move |ni| (fi, ni)))
    }
}

/// A Go file's package: its directory.
pub(crate) fn package_dir(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// The module a source file is: `src/operator/resources.rs` → `resources`, `src/operator/mod.rs` → `operator`; a Go
/// file is of the package its directory is (`internal/util/names.go` → `util`).
pub(crate) fn module_of(path: &str) -> &str {
    let p = std::path::Path::new(path);
    if path.ends_with(".go") {
        return p
            .parent()
            .and_then(|d| d.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("");
    }
    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if stem == "mod" {
        p.parent()
            .and_then(|d| d.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("")
    } else {
        stem
    }
}

/// A package of test doubles (`fake`, `fakecloud`, `mocks`, `mock_client`): its types implement the module's
/// interfaces for tests, and never run in the controller.
fn is_test_double_package(dir: &str) -> bool {
    let last = dir.rsplit('/').next().unwrap_or(dir).to_ascii_lowercase();
    last.starts_with("fake") || last.starts_with("mock")
}

/// crossplane-runtime's managed reconciler calls, on every reconcile of a managed resource, its connector's
/// `Connect(ctx, mg resource.Managed) (managed.ExternalClient, error)` and the client's `Observe(ctx, mg)
/// (managed.ExternalObservation, error)`; `Create`, `Update` and `Delete` only when the observation asks for them.
fn is_crossplane_observe(func: &FnModel) -> bool {
    func.self_ty.is_some()
        && matches!(
            (func.name.as_str(), func.signature.split_once("->")),
            ("Observe", Some((params, "ExternalObservation,error")))
                | ("Connect", Some((params, "ExternalClient,error")))
                if params.strip_prefix("Context,").is_some_and(|rest| rest.ends_with("Managed") && !rest.contains(','))
        )
}

/// sig-storage-lib-external-provisioner's `Provisioner`: its `ProvisionController` runs `Provision(ctx,
/// ProvisionOptions)` from its claim queue's workers for each claim to provision (again until it succeeds), and
/// `Delete(ctx, *PersistentVolume)` for each released volume.
fn is_volume_provisioner(func: &FnModel) -> bool {
    func.self_ty.is_some()
        && matches!(
            (func.name.as_str(), func.signature.as_str()),
            (
                "Provision",
                "Context,ProvisionOptions->*PersistentVolume,ProvisioningState,error"
            ) | ("Delete", "Context,*PersistentVolume->error")
        )
}

/// spotahome/kooper's `Handler`: its controller's workers call `Handle(ctx, runtime.Object)` for each object
/// taken off the queue, as controller-runtime's call `Reconcile`.
fn is_kooper_handler(func: &FnModel) -> bool {
    func.self_ty.is_some() && func.name == "Handle" && func.signature == "Context,Object->error"
}

/// knative.dev/pkg's reconciler methods: `ReconcileKind`/`FinalizeKind` of a receiver, taking the context and a
/// pointer to the object and returning the generated reconciler's `reconciler.Event` (a Go signature: a Rust
/// function has none).
fn is_knative_reconcile(func: &FnModel) -> bool {
    func.self_ty.is_some()
        && matches!(func.name.as_str(), "ReconcileKind" | "FinalizeKind")
        && func
            .signature
            .strip_prefix("Context,*")
            .is_some_and(|rest| rest.ends_with("->Event") && !rest.contains(','))
}
