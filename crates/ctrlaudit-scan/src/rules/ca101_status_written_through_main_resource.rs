//! CA101: status sent with `patch`/`replace` of the main resource of a kind with the status
//! subresource. The API server answers 200 and drops the status part. Not when the same function also writes
//! the status through the subresource (nothing is lost).

use super::{Ctx, finding};
use crate::finding::Finding;
use crate::sema::ApiMethod;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for id in cx.unit.all_fns() {
        for call in cx.unit.api_calls(id) {
            if !call.body_has_status || !matches!(call.method, ApiMethod::Patch | ApiMethod::Replace) {
                continue;
            }
            let Some(kind) = &call.kind else { continue };
            if cx.unit.kind_has_status(kind, id.0) != Some(true) {
                continue;
            }
            // The same function also writes the kind's `/status`: the dropped copy loses nothing.
            let writes_status_too = cx.unit.api_calls(id).any(|c| {
                c.is_status_write()
                    && c.kind.as_deref() == Some(kind.as_str())
            });
            if writes_status_too {
                continue;
            }
            let status_method = if call.method == ApiMethod::Patch {
                ApiMethod::PatchStatus
            } else {
                ApiMethod::ReplaceStatus
            };
            // A status dropped is lost whichever path sends it: the rule's cost is per occurrence.
            let when = cx.when_call(id, call);
            let mut f = finding(
                &crate::registry::CA101,
                call.span.clone(),
                when.clone(),
                format!(
                    "`{}` sends `status` to the main resource of `{kind}` (which has the status subresource) {}: the API server answers 200 and drops it",
                    call.text,
                    when.phrase()
                ),
                format!(
                    "write status with `{}` (the `/status` subresource); keep spec and metadata in `{}`",
                    status_method.spelled(cx.lang(id.0)),
                    call.method.spelled(cx.lang(id.0))
                ),
            );
            f.evidence = cx.call_path(id);
            out.push(f);
        }
    }
}
