//! CA402: a metric label fed by an object name, namespace, uid or error text. Every new value is
//! a new series, kept until restart (kcp dropped ~140,000 series at 10,000 workspaces).

use super::{Ctx, finding};
use crate::finding::Finding;

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for file in &cx.unit.files {
        for l in &file.metric_labels {
            out.push(finding(
                "CA402",
                l.span.clone(),
                format!("metric label value `{}` grows with the number of objects or errors: one series per value", l.what),
                "use bounded labels (kind, controller, a static error enum); put object names in logs, events or exemplars",
            ));
        }
    }
}
