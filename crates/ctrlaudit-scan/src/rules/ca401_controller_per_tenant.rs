//! CA401: one Controller or watcher per namespace or tenant, each spawned: memory, tasks and
//! watch connections multiply by the tenant count (kcp: 9.8 → 3.1 MiB per workspace once shared).

use super::{Ctx, finding};
use crate::finding::{Evidence, Finding, When, WhenKind};
use crate::sema::SpawningLoop;

/// Words that make a loop one over tenants: one watcher per kind is how controllers are built, one per namespace
/// is the anti-pattern.
const TENANTISH: &[&str] = &[
    "namespace",
    "tenant",
    "workspace",
    "team",
    "project",
    "cluster",
    "org",
];

fn over_tenants(l: &SpawningLoop) -> bool {
    let text = l.iterates.to_ascii_lowercase();
    TENANTISH.iter().any(|w| text.contains(w))
        || l.loop_vars
            .iter()
            .any(|v| v == "ns" || v.starts_with("ns_") || v.ends_with("_ns"))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    let help = "run one cluster-wide Controller on `Api::all(client)` (filter tenants in reconcile or with a label selector) and share its Store";
    let mut seen = std::collections::HashSet::new();
    for id in cx.unit.all_fns() {
        let func = cx.unit.func(id);
        // Within the loop: a Controller built on `Api::namespaced(_, ns)` of the loop's namespace.
        for l in func
            .spawning_loops
            .iter()
            .filter(|l| l.namespaced_api_from_loop_var)
        {
            if let Some(span) = &l.builds_controller {
                out.push(finding(
                    &crate::registry::CA401,
                    span.clone(),
                    When::new(WhenKind::Startup),
                    format!("a Controller is built from `Api::namespaced` for each namespace of a loop in `{}` and spawned: one watch, queue and cache per tenant", func.name),
                    help,
                ));
            }
        }
        // One call away: `spawn(run_tenant(client.clone(), ns))` in a loop over tenants.
        let calls = func
            .spawning_loops
            .iter()
            .filter(|l| !l.namespaced_api_from_loop_var && over_tenants(l))
            .flat_map(|l| &l.calls_with_loop_var);
        for (callee, call_span) in calls {
            for cid in cx.unit.resolve(callee, id.0) {
                if let Some(site) = &cx.unit.func(cid).builds_namespaced_controller
                    && seen.insert(site.span.clone())
                {
                    let mut f = finding(
                        &crate::registry::CA401,
                        site.span.clone(),
                        When::new(WhenKind::Startup),
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
