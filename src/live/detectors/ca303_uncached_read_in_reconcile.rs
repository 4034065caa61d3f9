//! CA303 live: reads far above what a cached controller needs: repeated LISTs of a custom resource (API server
//! counters, less the tool's own), GETs per reconcile (client metrics), or a client re-reading the same objects
//! again and again (audit log). An audit-log client is judged only when it is a controller (`live::actor`):
//! kubectl GETs the namespace once per object it applies, and has no cache to read from.

use super::{
    apiserver, finding, identity_subject, kind_of, metrics_subject, type_subject, value,
    where_label, window,
};
use crate::config::Config;
use crate::finding::{ActorKind, Finding};
use crate::live::actor::Actors;
use crate::live::snapshot::{Identity, Snapshot, SourceKind};
use std::collections::BTreeMap;

/// A LIST of the same resource more often than this per minute is not a watch cache at work.
const LISTS_PER_MIN: f64 = 6.0;
/// GETs of the same object more often than this per minute.
const GETS_PER_OBJECT_PER_MIN: f64 = 2.0;
/// Fewer reads than this say nothing.
const MIN_READS: f64 = 10.0;

pub fn detect(s: &Snapshot, actors: &Actors, cfg: &Config) -> Vec<Finding> {
    let mut out = Vec::new();

    // API server: LIST (not WATCH) of custom resources, less the tool's own and, when an audit log says who sent
    // them, those of people and one-off clients (`kubectl get` in a loop is no controller).
    if let Some(src) = apiserver(s) {
        let secs = src.span_secs().max(1.0);
        let mut lists: BTreeMap<(String, String), f64> = BTreeMap::new();
        for rt in &s.resources {
            let n = src.delta("apiserver_request_total", |x| {
                x.label("verb") == "LIST"
                    && x.label("group") == rt.group
                    && x.label("resource") == rt.plural
            });
            let own = s
                .requests
                .get(&format!("list {}", rt.qualified()))
                .copied()
                .unwrap_or(0) as f64;
            let by_others: u64 = s
                .audit
                .iter()
                .flat_map(|a| &a.groups)
                .filter(|g| {
                    g.verb == "list"
                        && g.group == rt.group
                        && g.resource == rt.plural
                        // The tool's own are counted above, by the tool itself.
                        && actors.identity(&g.identity.client()).kind == ActorKind::Client
                })
                .map(|g| g.count)
                .sum();
            lists.insert(
                (rt.group.clone(), rt.plural.clone()),
                (n - own - by_others as f64).max(0.0),
            );
        }
        for ((group, plural), n) in lists {
            let per_min = n / (secs / 60.0);
            if n < MIN_READS || per_min < LISTS_PER_MIN {
                continue;
            }
            let message = format!(
                "{plural}.{group} was LISTed {n:.0} times in {secs:.0} s ({per_min:.1}/min, limit {LISTS_PER_MIN}) \
                 besides this tool's own list: some client lists instead of reading its watch cache (API server \
                 counters carry no client; an audit log names it)"
            );
            out.push(finding(
                &crate::rules::CA303,
                type_subject(&group, &kind_of(s, &group, &plural), None),
                message,
                vec![
                    value("lists", n, "requests"),
                    value("list rate", per_min, "requests/min"),
                    window(secs),
                ],
            ));
        }
    }

    // Controller metrics: GETs per reconcile.
    let names = &cfg.metrics;
    for src in s.sources(SourceKind::Controller) {
        let secs = src.span_secs();
        let reconciles = src.delta(&names.reconcile_total, |_| true);
        let gets = src.delta(&names.rest_client_requests_total, |x| {
            matches!(x.label("method"), "GET" | "get" | "LIST" | "list")
        });
        if reconciles < MIN_READS || gets < MIN_READS || gets < reconciles * 0.9 {
            continue;
        }
        let message = format!(
            "this controller sent {gets:.0} GET/LIST requests for {reconciles:.0} reconciles in {secs:.0} s \
             ({:.1} per reconcile): it reads from the API server where its reflector store has the object",
            gets / reconciles
        );
        out.push(finding(
            &crate::rules::CA303,
            metrics_subject(src, None),
            message,
            vec![
                value("reads", gets, "requests"),
                value("reconciles", reconciles, "reconciles"),
                value("reads per reconcile", gets / reconciles, ""),
                window(secs),
            ],
        ));
    }

    // Audit log: per client and resource.
    if let Some(a) = &s.audit {
        let minutes = a.secs() / 60.0;
        type Key = (Identity, String, String, Option<String>);
        let mut per: BTreeMap<Key, (f64, f64, u64)> = BTreeMap::new();
        for g in &a.groups {
            if !(200..300).contains(&g.code) || !actors.is_controller(&g.identity.client()) {
                continue;
            }
            let e = per
                .entry((
                    g.identity.client(),
                    g.group.clone(),
                    g.resource.clone(),
                    g.namespace.clone(),
                ))
                .or_default();
            match g.verb.as_str() {
                "list" => e.0 += g.count as f64,
                "get" => {
                    e.1 += g.count as f64;
                    e.2 = e.2.max(g.objects);
                }
                _ => {}
            }
        }
        for ((id, group, resource, ns), (lists, gets, objects)) in per {
            let list_rate = lists / minutes;
            let get_rate = if objects > 0 {
                gets / objects as f64 / minutes
            } else {
                0.0
            };
            let hot_lists = lists >= MIN_READS && list_rate >= LISTS_PER_MIN;
            let hot_gets = gets >= MIN_READS && get_rate >= GETS_PER_OBJECT_PER_MIN;
            if !(hot_lists || hot_gets) {
                continue;
            }
            let message = format!(
                "{} read {} ({}) {lists:.0} LISTs ({list_rate:.1}/min) and {gets:.0} GETs ({get_rate:.1} per object \
                 per minute) in {:.0} s: reads that a reflector store would serve (audit log)",
                identity_subject(&id).label(),
                where_label(&resource, ns.as_deref()),
                kind_of(s, &group, &resource),
                a.secs(),
            );
            out.push(finding(
                &crate::rules::CA303,
                identity_subject(&id),
                message,
                vec![
                    value("lists", lists, "requests"),
                    value("gets", gets, "requests"),
                    value("gets per object", get_rate, "requests/min"),
                    window(a.secs()),
                ],
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The detector with the snapshot's own actors and the default configuration.
    fn judge(s: &Snapshot) -> Vec<Finding> {
        detect(s, &Actors::of(s), &Config::default())
    }
    use crate::live::snapshot::{
        AuditGroup, AuditSummary, MetricSample, MetricSource, ResourceType, Scrape,
    };

    /// The API server counted `lists` LISTs of widgets over a minute.
    fn snapshot(lists: f64) -> Snapshot {
        let sample = |v: f64| MetricSample {
            name: "apiserver_request_total".into(),
            labels: [
                ("verb", "LIST"),
                ("group", "example.com"),
                ("resource", "widgets"),
            ]
            .into_iter()
            .collect(),
            value: v,
        };
        let scrape = |t_ms: i64, v: f64| Scrape {
            t_ms,
            samples: vec![sample(v)],
            families: Vec::new(),
        };
        Snapshot {
            resources: vec![ResourceType {
                group: "example.com".into(),
                kind: "Widget".into(),
                plural: "widgets".into(),
                watched: true,
                ..ResourceType::default()
            }],
            metrics: vec![MetricSource {
                name: "apiserver".into(),
                kind: SourceKind::Apiserver,
                scrapes: vec![scrape(0, 0.0), scrape(60_000, lists)],
                ..MetricSource::default()
            }],
            ..Snapshot::default()
        }
    }

    /// A person running `kubectl get widgets` in a loop: the counters alone cannot tell (a finding on the type);
    /// with the audit log that names kubectl for those LISTs there is nothing left to judge.
    #[test]
    fn lists_that_the_audit_log_gives_to_a_person_are_not_judged() {
        let mut s = snapshot(30.0);
        assert_eq!(judge(&s).len(), 1);
        s.audit = Some(AuditSummary {
            requests: 30,
            first_ms: Some(0),
            last_ms: Some(60_000),
            groups: vec![AuditGroup {
                identity: Identity {
                    user: "alice".into(),
                    user_agent: "kubectl/v1.34.12 (linux/amd64) kubernetes/0000000".into(),
                    manager: None,
                },
                verb: "list".into(),
                group: "example.com".into(),
                resource: "widgets".into(),
                code: 200,
                count: 30,
                ..AuditGroup::default()
            }],
            ..AuditSummary::default()
        });
        assert!(judge(&s).is_empty());
    }
}
