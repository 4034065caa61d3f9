//! Which Go clients have no cache, once the module is joined: a client made by `client.New` or taken from
//! `GetAPIReader()` keeps that nature through constructor parameters, struct fields and helpers' results, and
//! the kinds `client.CacheOptions{DisableFor: ..}` names are read from the API server even through the manager's
//! client. A read through either is a round trip, which CA303 judges.

use super::{FnId, Unit, package_dir};
use crate::sema::{ApiCall, CacheSite, ClientOrigin, ClientRef};
use std::collections::{HashMap, HashSet};

/// Where the clients of one origin went: struct fields holding one, parameters some caller hands one, functions
/// returning one.
#[derive(Debug, Default)]
pub(super) struct Traced {
    /// (package directory, struct type, field).
    fields: HashSet<(String, String, String)>,
    /// (function, position): which fields a constructor fills with one, and which parameters a read through may
    /// be uncached (only when every caller hands one, see `ClientRef::Param`).
    params: HashSet<(FnId, usize)>,
    returns: HashSet<FnId>,
}

/// What the join found to have no cache, and what reads an informer cache whatever it is asked.
#[derive(Debug, Default)]
pub(super) struct UncachedClients {
    /// Clients made by `client.New` or taken from `GetAPIReader()`.
    uncached: Traced,
    /// Readers taken from `mgr.GetCache()`: the informers' cache itself, which serves unstructured objects too.
    cache: Traced,
    /// Kinds the manager's client reads from the API server, for a function no manager's set-up was traced to.
    kinds: HashSet<String>,
    /// The same for the functions of the controllers set up where a manager's cache is (see `owned_caches`).
    kinds_of: HashMap<FnId, HashSet<String>>,
    /// Some manager's cache options read unstructured objects from the cache (`Unstructured: true`).
    unstructured_cached: bool,
}

/// The kind of `unstructured.Unstructured` (and of a module's wrapper embedding it, `composed.Unstructured`):
/// controller-runtime's client serves it from the cache only when told to.
const UNSTRUCTURED: &str = "Unstructured";

/// Enough rounds for a client handed to a constructor that stores it, or returned through a helper or two.
const ROUNDS: usize = 4;

impl<'m> Unit<'m> {
    pub(super) fn uncached_clients(&self) -> UncachedClients {
        // Two managers in one module (an operator and the agent it runs in each pod): a read no set-up was traced
        // to cannot be told to be of the one whose client leaves kinds out of its cache, when the other's caches
        // them all.
        let sites = self.cache_sites();
        let one_cache = sites.iter().all(|(_, s)| !s.disabled.is_empty());
        let mut u = UncachedClients {
            kinds: sites
                .iter()
                .filter(|_| one_cache)
                .flat_map(|(_, s)| s.disabled.iter().cloned())
                .collect(),
            kinds_of: self.owned_caches(&sites),
            unstructured_cached: sites.iter().any(|(_, s)| s.unstructured),
            ..UncachedClients::default()
        };
        u.uncached = self.trace(&ClientOrigin::Uncached);
        u.cache = self.trace(&ClientOrigin::Cache);
        u
    }

    /// Where clients of origin `seed` go, through constructors' parameters, struct fields and helpers' results.
    fn trace(&self, seed: &ClientOrigin) -> Traced {
        let mut t = Traced::default();
        for _ in 0..ROUNDS {
            let before = (t.fields.len(), t.params.len(), t.returns.len());
            let (mut fields, mut params, mut returns) = (Vec::new(), Vec::new(), Vec::new());
            for id in self.all_fns() {
                let f = self.func(id);
                if f.returns_client
                    .as_ref()
                    .is_some_and(|o| self.origin_in(&t, seed, id, o))
                {
                    returns.push(id);
                }
                let dir = package_dir(&self.files[id.0].path);
                for s in f
                    .client_stores
                    .iter()
                    .filter(|s| self.origin_in(&t, seed, id, &s.from))
                {
                    fields.push((dir.to_string(), s.ty.clone(), s.field.clone()));
                }
                for a in f
                    .client_args
                    .iter()
                    .filter(|a| self.origin_in(&t, seed, id, &a.from))
                {
                    for target in self.resolve_callee(&a.callee, id.0) {
                        params.push((target, a.index));
                    }
                }
            }
            t.fields.extend(fields);
            t.params.extend(params);
            t.returns.extend(returns);
            if before == (t.fields.len(), t.params.len(), t.returns.len()) {
                break;
            }
        }
        t
    }

    fn cache_sites(&self) -> Vec<(FnId, &'m CacheSite)> {
        self.files
            .iter()
            .enumerate()
            .flat_map(|(fi, f)| f.caches.iter().map(move |s| (fi, s)))
            .filter_map(|(fi, s)| Some((self.fn_at(fi, s.line)?, s)))
            .collect()
    }

    /// For each function a Controller's reconcile reaches: the kinds every manager whose cache is set up where
    /// that Controller is (in the function building the manager, or one it calls: `SetupWithManager(mgr)`)
    /// leaves out. A function of two managers' Controllers gets the kinds both leave out.
    fn owned_caches(&self, sites: &[(FnId, &CacheSite)]) -> HashMap<FnId, HashSet<String>> {
        if sites.iter().all(|(_, s)| s.disabled.is_empty()) {
            return HashMap::new();
        }
        // Which sites set up each Controller (by file and index), then each Controller's reach once.
        let mut set_up_by: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for (si, (at, _)) in sites.iter().enumerate() {
            let reached: HashSet<FnId> = self.reach_from(*at).into_iter().collect();
            for (fi, file) in self.files.iter().enumerate() {
                for (ci, c) in file.controllers.iter().enumerate() {
                    if self
                        .fn_at(fi, c.span.line)
                        .is_some_and(|b| reached.contains(&b))
                    {
                        set_up_by.entry((fi, ci)).or_default().push(si);
                    }
                }
            }
        }
        let mut owners: HashMap<FnId, Vec<usize>> = HashMap::new();
        for ((fi, ci), by) in set_up_by {
            // A site listed twice intersects the same kinds twice: no need to keep them distinct.
            for id in self
                .reach_of(fi, &self.files[fi].controllers[ci])
                .into_iter()
                .flatten()
            {
                owners.entry(id).or_default().extend(&by);
            }
        }
        owners
            .into_iter()
            .map(|(id, o)| {
                let mut kinds: HashSet<String> = sites[o[0]].1.disabled.iter().cloned().collect();
                for si in &o[1..] {
                    kinds.retain(|k| sites[*si].1.disabled.contains(k));
                }
                (id, kinds)
            })
            .collect()
    }

    fn origin_in(&self, t: &Traced, seed: &ClientOrigin, id: FnId, o: &ClientOrigin) -> bool {
        match o {
            ClientOrigin::Param(i) => t.params.contains(&(id, *i)),
            // Most stored values are some call's result: resolved only once some function returns a client.
            ClientOrigin::Returned(c) => {
                !t.returns.is_empty()
                    && self
                        .resolve_callee(c, id.0)
                        .iter()
                        .any(|f| t.returns.contains(f))
            }
            ClientOrigin::Field(ty, field) => {
                let dir = package_dir(&self.files[id.0].path).to_string();
                t.fields.contains(&(dir, ty.clone(), field.clone()))
            }
            o => o == seed,
        }
    }

    /// Is the client of a call one that was traced to `t`?
    fn traced_to(
        &self,
        t: &Traced,
        seed: &ClientOrigin,
        id: FnId,
        client: Option<&ClientRef>,
    ) -> bool {
        match client {
            // Some caller hands one, and every caller hands one: each of their calls of `id` gives that position
            // a client traced to `t`.
            Some(ClientRef::Param(i)) => {
                t.params.contains(&(id, *i))
                    && self.callers(id).iter().all(|&c| {
                        let handed: Vec<&ClientOrigin> = self
                            .func(c)
                            .client_args
                            .iter()
                            .filter(|a| {
                                a.index == *i && self.resolve_callee(&a.callee, c.0).contains(&id)
                            })
                            .map(|a| &a.from)
                            .collect();
                        !handed.is_empty() && handed.iter().all(|o| self.origin_in(t, seed, c, o))
                    })
            }
            None | Some(ClientRef::Cache) => false,
            Some(ClientRef::Field(ty, field)) => {
                let dir = package_dir(&self.files[id.0].path).to_string();
                t.fields.contains(&(dir, ty.clone(), field.clone()))
            }
            Some(ClientRef::Returned(c)) => self
                .resolve_callee(c, id.0)
                .iter()
                .any(|f| t.returns.contains(f)),
        }
    }

    /// Is this read of function `id` served from an informer cache? Only the manager's client's reads are, and
    /// not of a kind its cache is told to leave out, nor through a client the join traced to `client.New` or
    /// `GetAPIReader()`.
    pub fn reads_cache(&self, id: FnId, call: &ApiCall) -> bool {
        call.cached && self.cache_left_out(id, call).is_none()
    }

    /// Why a read through a controller-runtime client the front end took for the manager's misses the cache, if
    /// the join says it does: the kind is left out of the cache, or the client was traced to one with none.
    pub fn cache_left_out(&self, id: FnId, call: &ApiCall) -> Option<&'static str> {
        let u = &self.uncached;
        // The informers' cache itself (`mgr.GetCache()`) serves every kind it is asked for.
        if call.client == Some(ClientRef::Cache)
            || self.traced_to(&u.cache, &ClientOrigin::Cache, id, call.client.as_ref())
        {
            return None;
        }
        if call.kind.as_deref() == Some(UNSTRUCTURED) && !u.unstructured_cached {
            return Some(
                "the manager's client reads unstructured objects from the API server unless its cache options \
                 set `Unstructured: true`",
            );
        }
        let left_out = u.kinds_of.get(&id).unwrap_or(&u.kinds);
        if call.kind.as_ref().is_some_and(|k| left_out.contains(k)) {
            return Some("the manager's client leaves this kind out of its cache (`DisableFor`)");
        }
        self.traced_to(
            &u.uncached,
            &ClientOrigin::Uncached,
            id,
            call.client.as_ref(),
        )
        .then_some("the client comes from `client.New` or `GetAPIReader()`, which have no cache")
    }
}
