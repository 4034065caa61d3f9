//! The API calls a function makes once the crate is joined: those on an `Api` another function returns, and
//! calls of thin wrappers (a dependency's, or the crate's own in loops) read as the one call they make.

use super::{FnId, Unit};
use crate::sema::ApiCall;
use std::collections::HashMap;

impl Unit<'_> {
    /// Calls of the crate's own thin wrappers of one API call, as that call at the call site. The wrapped call is
    /// judged where it stands for what it is (a read reached from reconcile); what only the call site says (that
    /// it is awaited once per loop iteration) is judged here.
    pub fn wrapper_calls(&self, id: FnId) -> impl Iterator<Item = &ApiCall> + '_ {
        self.wrapped_local.get(&id).into_iter().flatten()
    }

    /// The API calls a function makes: its own, those on an `Api` another function returned, and those it makes
    /// through a dependency's thin wrapper.
    pub fn api_calls(&self, id: FnId) -> impl Iterator<Item = &ApiCall> + '_ {
        self.own_api_calls(id)
            .chain(self.wrapped.get(&id).into_iter().flatten())
    }

    /// The API calls in a function's own body, those on a returned `Api` included.
    fn own_api_calls(&self, id: FnId) -> impl Iterator<Item = &ApiCall> + '_ {
        self.func(id)
            .api_calls
            .iter()
            .filter(|c| c.via_producer.is_none())
            .chain(self.confirmed.get(&id).into_iter().flatten())
    }

    /// The calls on a receiver some function returned (see `ApiCall::via_producer`) where every function it may
    /// be returns an `Api<K>`, with that `K`.
    pub(super) fn confirmed_calls(&self) -> HashMap<FnId, Vec<ApiCall>> {
        let mut out: HashMap<FnId, Vec<ApiCall>> = HashMap::new();
        for id in self.all_fns() {
            for call in &self.func(id).api_calls {
                let Some((producer, method)) = &call.via_producer else {
                    continue;
                };
                let targets = if *method {
                    self.resolve_method(producer)
                } else {
                    self.resolve(producer, id.0)
                };
                let kinds: Option<Vec<&Option<String>>> = targets
                    .iter()
                    .map(|t| self.func(*t).returns_api.as_ref())
                    .collect();
                let Some(kinds) = kinds.filter(|k| !k.is_empty()) else {
                    continue;
                };
                let mut c = call.clone();
                c.via_producer = None;
                c.kind = kinds[0]
                    .clone()
                    .filter(|k| kinds.iter().all(|o| o.as_ref() == Some(k)));
                out.entry(id).or_default().push(c);
            }
        }
        out
    }

    /// For every crate function, its calls of a dependency's thin wrapper (one API call, on no branch, loop or
    /// error path, and nothing else the rules judge), as that API call made at the call site: the site is where
    /// the crate decides to make it (in a loop, on every pass) and the only place it can change.
    pub(super) fn wrapped_calls(&self, library: bool) -> HashMap<FnId, Vec<ApiCall>> {
        let mut out: HashMap<FnId, Vec<ApiCall>> = HashMap::new();
        for id in self.all_fns() {
            for a in &self.func(id).api_arg_calls {
                let targets = self.resolve_callee(&a.callee, id.0);
                let [target] = targets[..] else {
                    continue;
                };
                if self.files[target.0].library != library {
                    continue;
                }
                let Some(inner) = self.thin_wrapper(target) else {
                    continue;
                };
                // The crate's own helpers are followed where handed an `Api`, or where their one call is a
                // server-side apply: a module-qualified call of one that builds its own `Api` to read, or to mark
                // or move an object, is as a rule a step with its own decisions; one that builds it to apply one
                // object's desired state is that apply.
                if !(library || a.passes_api || inner.server_side_apply) {
                    continue;
                }
                let mut call = a.call.clone().with_method(inner.method);
                // A generic wrapper's `Api<K>` says nothing; the call site's `Api` does.
                call.kind = call
                    .kind
                    .or_else(|| inner.kind.clone().filter(|k| k.len() > 1));
                // The status a reconcile writes is, as a rule, the reconciled object's.
                if call.kind.is_none() && inner.is_status_write() {
                    call.kind = self.func(id).object_kind.clone();
                }
                call.body_has_status = inner.body_has_status;
                call.server_side_apply = inner.server_side_apply;
                call.text = format!("{} → {}", a.call.text, inner.text);
                out.entry(id).or_default().push(call);
            }
        }
        out
    }

    /// The one API call of a function that makes just that call.
    fn thin_wrapper(&self, id: FnId) -> Option<&ApiCall> {
        let f = self.func(id);
        // With the dependencies' thin wrappers it calls, once those are known (the crate's own helpers are joined
        // after them).
        let calls: Vec<&ApiCall> = self
            .own_api_calls(id)
            .chain(self.wrapped.get(&id).into_iter().flatten())
            .collect();
        let [call] = calls[..] else {
            return None;
        };
        let plain = !call.on_branch
            && !call.on_error
            && !call.in_retry
            && !call.awaited_in_iteration
            && f.requeues.is_empty();
        plain.then_some(call)
    }
}
