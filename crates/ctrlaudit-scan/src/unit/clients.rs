//! Which Go clients have no cache, once the module is joined: a client made by `client.New` or taken from
//! `GetAPIReader()` keeps that nature through constructor parameters, struct fields and helpers' results, and
//! the kinds `client.CacheOptions{DisableFor: ..}` names are read from the API server even through the manager's
//! client. A read through either is a round trip, which CA303 judges.

use super::{FnId, Unit, package_dir};
use crate::sema::{ApiCall, ClientOrigin, ClientRef};
use std::collections::HashSet;

/// What the join found to have no cache.
#[derive(Debug, Default)]
pub(super) struct UncachedClients {
    /// Struct fields holding one: (package directory, struct type, field).
    fields: HashSet<(String, String, String)>,
    /// Parameters some caller hands one: (function, position). They only tell which fields a constructor fills
    /// with one; a read through a parameter is judged cached (see `ClientRef`).
    params: HashSet<(FnId, usize)>,
    /// Functions returning one.
    returns: HashSet<FnId>,
    /// Kinds the manager's client reads from the API server.
    kinds: HashSet<String>,
}

/// Enough rounds for a client handed to a constructor that stores it, or returned through a helper or two.
const ROUNDS: usize = 4;

impl Unit<'_> {
    pub(super) fn uncached_clients(&self) -> UncachedClients {
        // Two managers in one module (an operator and the agent it runs in each pod): a read cannot be told to be
        // of the one whose client leaves kinds out of its cache, when the other's caches them all.
        let one_cache = self.files.iter().all(|f| f.caching_managers == 0);
        let mut u = UncachedClients {
            kinds: self
                .files
                .iter()
                .filter(|_| one_cache)
                .flat_map(|f| f.cache_disabled.iter().cloned())
                .collect(),
            ..UncachedClients::default()
        };
        for _ in 0..ROUNDS {
            let before = (u.fields.len(), u.params.len(), u.returns.len());
            let (mut fields, mut params, mut returns) = (Vec::new(), Vec::new(), Vec::new());
            for id in self.all_fns() {
                let f = self.func(id);
                if f.returns_client
                    .as_ref()
                    .is_some_and(|o| self.origin_uncached(&u, id, o))
                {
                    returns.push(id);
                }
                let dir = package_dir(&self.files[id.0].path);
                for s in f
                    .client_stores
                    .iter()
                    .filter(|s| self.origin_uncached(&u, id, &s.from))
                {
                    fields.push((dir.to_string(), s.ty.clone(), s.field.clone()));
                }
                for a in f
                    .client_args
                    .iter()
                    .filter(|a| self.origin_uncached(&u, id, &a.from))
                {
                    for target in self.resolve_callee(&a.callee, id.0) {
                        params.push((target, a.index));
                    }
                }
            }
            u.fields.extend(fields);
            u.params.extend(params);
            u.returns.extend(returns);
            if before == (u.fields.len(), u.params.len(), u.returns.len()) {
                break;
            }
        }
        u
    }

    fn origin_uncached(&self, u: &UncachedClients, id: FnId, o: &ClientOrigin) -> bool {
        match o {
            ClientOrigin::Uncached => true,
            ClientOrigin::Param(i) => u.params.contains(&(id, *i)),
            // Most stored values are some call's result: resolved only once some function returns a client.
            ClientOrigin::Returned(c) => {
                !u.returns.is_empty()
                    && self
                        .resolve_callee(c, id.0)
                        .iter()
                        .any(|t| u.returns.contains(t))
            }
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
        if call.kind.as_ref().is_some_and(|k| u.kinds.contains(k)) {
            return Some("the manager's client leaves this kind out of its cache (`DisableFor`)");
        }
        let traced = match &call.client {
            None => false,
            Some(ClientRef::Field(ty, field)) => {
                let dir = package_dir(&self.files[id.0].path).to_string();
                u.fields.contains(&(dir, ty.clone(), field.clone()))
            }
            Some(ClientRef::Returned(c)) => self
                .resolve_callee(c, id.0)
                .iter()
                .any(|t| u.returns.contains(t)),
        };
        traced.then_some(
            "the client comes from `client.New` or `GetAPIReader()`, which have no cache",
        )
    }
}
