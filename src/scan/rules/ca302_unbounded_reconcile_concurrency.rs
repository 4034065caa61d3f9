//! CA302: a Controller run without a concurrency limit. kube-rs's default is 0 = unbounded: every
//! queued object reconciles at once and they all queue behind the API server's write ceiling.

use super::{Ctx, finding};
use crate::finding::Finding;
use crate::scan::model::ConcurrencyConfig;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for file in &cx.unit.files {
        for c in &file.controllers {
            let Some(run) = &c.run else { continue };
            let why = match c.config {
                ConcurrencyConfig::Absent => "has no `.with_config(..)`",
                ConcurrencyConfig::Default => "uses a config without `.concurrency(n)`",
                ConcurrencyConfig::Limit(_) | ConcurrencyConfig::Unknown => continue,
            };
            let kind = c
                .kind
                .as_deref()
                .map(|k| format!(" for `{k}`"))
                .unwrap_or_default();
            out.push(finding(
                "CA302",
                run.span.clone(),
                format!("Controller{kind} {why}: concurrency defaults to 0, unbounded reconciles"),
                "`.with_config(controller::Config::default().concurrency(n))` with n sized to what the API server and your dependencies take (kube ≥ 0.86)",
            ));
        }
    }
}
