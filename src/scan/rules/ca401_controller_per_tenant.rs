//! CA401: one Controller or watcher per namespace or tenant, each spawned: memory, tasks and
//! watch connections multiply by the tenant count (kcp: 9.8 → 3.1 MiB per workspace once shared).

use super::{Ctx, finding};
use crate::finding::{Evidence, Finding};

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let help = "run one cluster-wide Controller on `Api::all(client)` (filter tenants in reconcile or with a label selector) and share its Store";
    let mut seen = std::collections::HashSet::new();
    for id in cx.unit.all_fns() {
        let func = cx.unit.func(id);
        for s in &func.tenant_controllers {
            out.push(finding(
                "CA401",
                s.span.clone(),
                format!("a {} is built from `Api::namespaced` for each namespace of a loop in `{}` and spawned: one watch, queue and cache per tenant", s.what, s.in_fn),
                help,
            ));
        }
        for (callee, call_span) in &func.tenant_loop_calls {
            for cid in cx.unit.resolve(callee, id.0) {
                if let Some(site) = &cx.unit.func(cid).builds_namespaced_controller
                    && seen.insert(site.span.clone())
                {
                    let mut f = finding(
                        "CA401",
                        site.span.clone(),
                        format!(
                            "`{}` builds a {} from `Api::namespaced` and `{}` spawns it for each namespace: one watch, queue and cache per tenant",
                            site.in_fn, site.what, func.name
                        ),
                        help,
                    );
                    f.evidence.push(Evidence::Related {
                        span: call_span.clone(),
                        note: "called once per tenant here".into(),
                    });
                    out.push(f);
                }
            }
        }
    }
}
