//! Random and mutated Rust source never makes scan panic: every input ends as findings or CA001.
#![allow(clippy::unwrap_used)]

use ctrlaudit::config::Config;
use proptest::prelude::*;

const SEED: &str = r#"
use kube::{Api, Client, ResourceExt, api::{Patch, PatchParams}, runtime::controller::{Action, Controller}};
use std::{sync::Arc, time::Duration};
async fn reconcile(obj: Arc<Widget>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let api: Api<Widget> = Api::namespaced(ctx.client.clone(), &obj.namespace().unwrap());
    let patch = serde_json::json!({"metadata": {"annotations": {"x/ts": chrono::Utc::now().to_rfc3339()}}, "status": {"phase": "Ready"}});
    api.patch(&obj.name_any(), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    for i in 0..3 { api.replace(&obj.name_any(), &Default::default(), &obj).await?; }
    Ok(Action::requeue(Duration::from_secs(5)))
}
fn error_policy(_o: Arc<Widget>, _e: &Error, _c: Arc<Ctx>) -> Action { Action::requeue(Duration::from_secs(1)) }
async fn main() { Controller::new(Api::<Widget>::all(c), Default::default()).run(reconcile, error_policy, ctx).for_each(|_| async {}).await; }
"#;

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(s in "\\PC{0,400}") {
        let _ = ctrlaudit::scan::scan_source("fuzz.rs", &s, &Config::default());
    }

    #[test]
    fn mutated_controller_never_panics(cuts in proptest::collection::vec((0usize..SEED.len(), 0usize..40, "[{}()\\[\\];,.:?!&*a-z0-9 \"']{0,6}"), 1..6)) {
        let mut src = SEED.to_string();
        for (at, len, insert) in cuts {
            let at = at.min(src.len());
            let end = (at + len).min(src.len());
            if src.is_char_boundary(at) && src.is_char_boundary(end) {
                src.replace_range(at..end, &insert);
            }
        }
        let _ = ctrlaudit::scan::scan_source("mutated.rs", &src, &Config::default());
    }
}

#[test]
fn deep_nesting_is_reported_not_overflowed() {
    let src = format!("fn f() {{ {}1{} }}", "(".repeat(50_000), ")".repeat(50_000));
    let f = ctrlaudit::scan::scan_source("deep.rs", &src, &Config::default());
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].code, "CA001");
}

#[test]
fn seed_controller_raises_its_findings() {
    let f = ctrlaudit::scan::scan_source("seed.rs", SEED, &Config::default());
    let codes: Vec<&str> = f.iter().map(|f| f.code.as_str()).collect();
    for c in ["CA202", "CA203", "CA204", "CA302", "CA304"] {
        assert!(codes.contains(&c), "{c} missing from {codes:?}");
    }
}
