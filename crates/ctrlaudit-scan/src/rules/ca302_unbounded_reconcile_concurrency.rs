//! CA302: a Controller run without a concurrency limit. kube-rs's default is 0 = unbounded: every
//! queued object reconciles at once and they all queue behind the API server's write ceiling.

use super::{Ctx, finding};
use crate::finding::{Evidence, Finding, Span, When, WhenKind};
use crate::sema::ConcurrencyConfig;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for file in &cx.unit.files {
        for c in &file.controllers {
            let kind = c
                .kind
                .as_deref()
                .map(|k| format!(" for `{k}`"))
                .unwrap_or_default();
            if let Some(run) = &c.run {
                let Some(why) = unbounded(&c.config) else {
                    continue;
                };
                out.push(report(run.span.clone(), format!("Controller{kind} {why}")));
                continue;
            }
            // Built by a constructor of a type and started by one of its methods: judged there, reported where it
            // is built (one method may start the Controllers of several constructors).
            let Some(ty) = &c.stored_in else { continue };
            let mut runs = cx
                .unit
                .files
                .iter()
                .flat_map(|f| &f.self_runs)
                .filter(|r| &r.self_ty == ty);
            let (Some(started), None) = (runs.next(), runs.next()) else {
                continue;
            };
            let config = if c.config == ConcurrencyConfig::Absent {
                &started.config
            } else {
                &c.config
            };
            let Some(why) = unbounded(config) else {
                continue;
            };
            let mut f = report(
                c.span.clone(),
                format!(
                    "Controller{kind} stored in `{ty}` and started by `{ty}::{}` {why}",
                    started.in_fn
                ),
            );
            f.evidence.push(Evidence::Related {
                span: started.run.span.clone(),
                note: "where it is run".into(),
            });
            out.push(f);
        }
    }
}

/// Why a config leaves concurrency unbounded, if it does.
fn unbounded(config: &ConcurrencyConfig) -> Option<&'static str> {
    match config {
        ConcurrencyConfig::Absent => Some("has no `.with_config(..)`"),
        ConcurrencyConfig::Default => Some("uses a config without `.concurrency(n)`"),
        ConcurrencyConfig::Limit(_) | ConcurrencyConfig::Unknown => None,
    }
}

fn report(span: Span, what: String) -> Finding {
    finding(
        &crate::registry::CA302,
        span,
        When::new(WhenKind::Startup),
        format!("{what}: concurrency defaults to 0, unbounded reconciles"),
        "`.with_config(controller::Config::default().concurrency(n))` with n sized to what the API server and your dependencies take (kube ≥ 0.86)",
    )
}
