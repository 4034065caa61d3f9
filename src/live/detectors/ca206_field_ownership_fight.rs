//! CA206 live: two field managers keep taking one field from each other (managedFields) and each puts back the
//! value it wants: an operator and an autoscaler on `spec.replicas`, two controllers on one label, a controller
//! and a GitOps tool. Neither ever wins, so the object never settles.

use super::{
    Hits, finding, objects_by_type, on_objects, per_object_evidence, type_subject, watched_minutes,
    where_label,
};
use crate::config::Config;
use crate::finding::{Evidence, Finding};
use crate::live::actor::Actors;
use crate::live::snapshot::Snapshot;
use std::collections::BTreeMap;

/// Handovers of one field on one object within the window before it counts as a fight: A→B→A→B. One or two
/// are a handover (a migration to server-side apply, an operator taking over from `kubectl create`).
const MIN_HANDOVERS: u32 = 3;

pub fn detect(s: &Snapshot, _actors: &Actors, _cfg: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    for ((group, kind, plural, ns), objs) in objects_by_type(s) {
        // (field, the managers that owned it, sorted) → objects.
        let mut fights: BTreeMap<(String, Vec<String>), Hits> = BTreeMap::new();
        for o in &objs {
            for h in o
                .handovers
                .iter()
                // A different value put back by a manager that set it before is a flip; handovers to ever new
                // values are a relay, and handovers of one value between co-owners are no fight at all.
                .filter(|h| {
                    h.handovers >= MIN_HANDOVERS
                        && h.flips.unwrap_or(h.reverts) >= 1
                        && h.owners.len() >= 2
                })
            {
                let mut owners = h.owners.clone();
                owners.sort();
                fights.entry((h.field.clone(), owners)).or_default().push((
                    o.name.clone(),
                    f64::from(h.handovers) / watched_minutes(s, o),
                    h.handovers,
                ));
            }
        }
        for ((field, owners), hits) in fights {
            let rate = hits.iter().map(|h| h.1).sum::<f64>() / hits.len() as f64;
            let names = owners
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(" and ");
            let message = format!(
                "`{field}` of {} {} changed hands {:.1} times per object per minute between field managers {names}, \
                 each setting it back to its own value: they will flip it forever; give the field one owner",
                hits.len(),
                where_label(&plural, ns.as_deref()),
                rate,
            );
            let f = finding(
                &crate::rules::CA206,
                type_subject(&group, &kind, ns.as_deref()),
                message,
                evidence(&hits, rate, s.window.secs()),
            );
            out.push(on_objects(f, (&group, &kind, ns.as_deref()), &hits));
        }
    }
    out
}

fn evidence(hits: &[(String, f64, u32)], rate: f64, secs: f64) -> Vec<Evidence> {
    per_object_evidence(
        hits,
        rate,
        secs,
        (
            "handovers",
            "handovers per object",
            "handovers of",
            "handovers/min",
        ),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The detector with the snapshot's own actors and the default configuration.
    fn judge(s: &Snapshot) -> Vec<Finding> {
        detect(s, &Actors::of(s), &Config::default())
    }
    use crate::live::snapshot::{FieldHandover, ObjectRecord, Window};

    fn snap(handovers: u32, reverts: u32) -> Snapshot {
        let obj = |name: &str| ObjectRecord {
            group: "apps".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
            namespace: Some("ns".into()),
            name: name.into(),
            handovers: vec![FieldHandover {
                field: "spec.replicas".into(),
                owners: vec!["operator".into(), "kube-controller-manager".into()],
                handovers,
                reverts,
                flips: None,
            }],
            ..ObjectRecord::default()
        };
        Snapshot {
            window: Window {
                start_ms: 0,
                end_ms: 60_000,
            },
            objects: vec![obj("a"), obj("b")],
            ..Snapshot::default()
        }
    }

    #[test]
    fn flips_back_and_forth_fire_once_per_field_and_pair() {
        let f = judge(&snap(6, 4));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].message
                .contains("`spec.replicas` of 2 deployments in ns"),
            "{}",
            f[0].message
        );
        assert!(
            f[0].message
                .contains("`kube-controller-manager` and `operator`")
        );
    }

    #[test]
    fn a_handover_or_a_relay_to_new_values_is_no_fight() {
        assert!(judge(&snap(2, 1)).is_empty());
        assert!(judge(&snap(5, 0)).is_empty());
    }

    #[test]
    fn co_owners_of_one_value_are_no_fight() {
        let mut s = snap(6, 4);
        for o in &mut s.objects {
            o.handovers[0].flips = Some(0);
        }
        assert!(judge(&s).is_empty());
        for o in &mut s.objects {
            o.handovers[0].flips = Some(2);
        }
        assert_eq!(judge(&s).len(), 1);
    }
}
