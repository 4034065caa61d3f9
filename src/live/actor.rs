//! Who is behind the traffic live observes: a controller, a person or one-off client, or this tool. The rules
//! about reconcile behaviour (CA101's attribution, CA201, CA202, CA303, CA403) judge controllers only: kubectl
//! GETting a namespace once per object it applies, or a deploy job re-applying identical manifests, has no
//! reconcile to fix. Pure: the snapshot in, a classification and a note out.
//!
//! The evidence, strongest first: the name a client gives itself (user agent, field manager), then what the audit
//! log shows of it (a watch held; a person's account; requests coming back over the window, or one burst), and
//! last the default for a name nobody knows: a controller, which is what writes objects again and again.

use crate::finding::{Actor, ActorKind, Subject};
use crate::live::snapshot::{AuditClient, Identity, Snapshot};
use crate::report::Note;
use std::collections::BTreeMap;

/// Products whose user agent or field manager is a person's tool or a deploy job's, never a reconcile loop.
/// Lower case; matched against the user agent up to its first `/` and against the field manager.
const CLIENTS: &[&str] = &[
    "kubectl",
    "helm",
    "kustomize",
    "oc",
    "k9s",
    "terraform",
    "hashicorp",
    "pulumi",
    "pulumi-kubernetes",
    "lens",
    "kubernetes-dashboard",
    "curl",
    // The server-side apply upgrade's placeholder manager: history, not a writer.
    "before-first-apply",
];

/// kubectl's own field managers (`kubectl-client-side-apply`, `kubectl-edit`, `kubectl-scale`, …) and its
/// plugins' user agents start with this.
const KUBECTL_PREFIX: &str = "kubectl-";

/// This tool's user agent and field manager (it never writes; its reads show in an audit log).
pub const OWN_NAME: &str = "kubectl-ctrlaudit";

/// A client without a watch whose requests all fall within this many seconds is one burst: a person or a job.
const BURST_SECS: f64 = 60.0;
/// ... when the log spans at least this many times as long (a short window cannot tell a burst from a loop).
const BURST_SHARE: f64 = 4.0;
/// A client active in at least this many 10-second slots, spread over more than [`BURST_SECS`], comes back.
const RETURNING_SLOTS: u32 = 3;

/// The classification of every actor a snapshot shows.
#[derive(Debug, Default)]
pub struct Actors {
    /// Audit-log clients (user and user agent) with their traffic and kind.
    clients: BTreeMap<Identity, (AuditClient, Actor)>,
    /// Field managers seen in managedFields or the audit log, with their kind.
    managers: BTreeMap<String, Actor>,
    /// How long the audit log spans, in seconds.
    log_secs: f64,
}

fn actor(kind: ActorKind, why: impl Into<String>) -> Actor {
    Actor {
        kind,
        why: why.into(),
    }
}

/// What a user agent or a field manager says about itself, when it says anything.
pub fn by_name(name: &str, what: &str) -> Option<Actor> {
    let product = name.split('/').next().unwrap_or("").trim();
    let lower = product.to_ascii_lowercase();
    if lower.starts_with(OWN_NAME) {
        return Some(actor(ActorKind::Tool, format!("{what} {name}: this tool")));
    }
    let client = CLIENTS.contains(&lower.as_str()) || lower.starts_with(KUBECTL_PREFIX);
    client.then(|| {
        actor(
            ActorKind::Client,
            format!("{what} {name}: a person's or a deploy job's tool, not a controller"),
        )
    })
}

impl Actors {
    pub fn of(s: &Snapshot) -> Self {
        let log_secs = s.audit.as_ref().map_or(0.0, |a| a.secs());
        let clients: BTreeMap<Identity, (AuditClient, Actor)> = s
            .audit
            .iter()
            .flat_map(|a| &a.clients)
            .map(|c| {
                (
                    c.identity.client(),
                    (c.clone(), classify_client(c, log_secs)),
                )
            })
            .collect();
        let mut out = Self {
            clients,
            managers: BTreeMap::new(),
            log_secs,
        };
        // Field managers: by name, else by the client the audit log shows writing under that name.
        let audit_managers = s
            .audit
            .iter()
            .flat_map(|a| a.groups.iter().map(|g| &g.identity))
            .filter_map(|id| Some((id.manager.clone()?, id.client())));
        let mut named: BTreeMap<String, Actor> = BTreeMap::new();
        for (m, client) in audit_managers {
            let a = by_name(&m, "field manager").unwrap_or_else(|| out.client(&client));
            // A manager two clients write under is a controller's when either is one.
            named
                .entry(m)
                .and_modify(|old| {
                    if a.kind == ActorKind::Controller {
                        *old = a.clone();
                    }
                })
                .or_insert(a);
        }
        for m in s.objects.iter().flat_map(|o| {
            o.managers
                .iter()
                .map(|m| &*m.manager)
                .chain(o.writers.iter().map(|w| w.manager.as_str()))
        }) {
            if !named.contains_key(m) {
                let a = by_name(m, "field manager").unwrap_or_else(|| {
                    actor(
                        ActorKind::Controller,
                        format!("field manager `{m}` writes objects and is no known client's"),
                    )
                });
                named.insert(m.to_string(), a);
            }
        }
        out.managers = named;
        out
    }

    /// The kind of an audit-log client (user and user agent; a field manager, if `id` has one, is not used).
    fn client(&self, id: &Identity) -> Actor {
        let id = id.client();
        self.clients
            .get(&id)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| {
                classify_client(
                    &AuditClient {
                        identity: id,
                        ..AuditClient::default()
                    },
                    self.log_secs,
                )
            })
    }

    /// The kind of the writer or reader `id` names: its field manager's when it has one, else its client's.
    pub fn identity(&self, id: &Identity) -> Actor {
        if let Some(a) = by_name(&id.user_agent, "user agent") {
            return a;
        }
        match &id.manager {
            Some(m) => self.manager(m),
            None => self.client(id),
        }
    }

    /// The kind of a field manager.
    pub fn manager(&self, m: &str) -> Actor {
        self.managers.get(m).cloned().unwrap_or_else(|| {
            by_name(m, "field manager").unwrap_or_else(|| {
                actor(
                    ActorKind::Controller,
                    format!("field manager `{m}` is no known client's"),
                )
            })
        })
    }

    /// The kind of a finding's subject; `None` for subjects that are no actor (objects, types, source).
    pub fn subject(&self, subject: &Subject) -> Option<Actor> {
        let Subject::Controller {
            manager,
            user,
            user_agent,
            ..
        } = subject
        else {
            return None;
        };
        if user_agent
            .as_deref()
            .is_some_and(|ua| ua.starts_with("metrics: "))
        {
            return Some(actor(
                ActorKind::Controller,
                "serves controller metrics (reconcile counters)",
            ));
        }
        Some(self.identity(&Identity {
            user: user.clone().unwrap_or_default(),
            user_agent: user_agent.clone().unwrap_or_default(),
            manager: manager.clone(),
        }))
    }

    pub fn is_controller(&self, id: &Identity) -> bool {
        self.identity(id).kind == ActorKind::Controller
    }

    pub fn is_controller_manager(&self, m: &str) -> bool {
        self.manager(m).kind == ActorKind::Controller
    }

    /// The note that says who was seen but not judged as a controller, and why; `None` when everyone was one.
    pub fn note(&self) -> Option<Note> {
        let mut who: Vec<String> = self
            .clients
            .values()
            .filter(|(_, a)| a.kind != ActorKind::Controller)
            .map(|(c, a)| {
                format!(
                    "{} ({}; {} request{} over {:.0} s): {}",
                    client_label(&c.identity),
                    a.kind.as_str(),
                    c.requests,
                    if c.requests == 1 { "" } else { "s" },
                    c.span_secs(),
                    a.why
                )
            })
            .collect();
        let by_client: Vec<&str> = self
            .clients
            .keys()
            .map(|id| id.user_agent.as_str())
            .collect();
        who.extend(
            self.managers
                .iter()
                .filter(|(m, a)| {
                    a.kind != ActorKind::Controller
                        && !by_client
                            .iter()
                            .any(|ua| ua.split('/').next() == Some(m.as_str()))
                })
                .map(|(m, a)| format!("field manager `{m}` ({}): {}", a.kind.as_str(), a.why)),
        );
        (!who.is_empty()).then(|| Note {
            subject: "actors".to_string(),
            message: format!(
                "not judged as controllers (the rules about reconcile behaviour judge controllers only): {}",
                who.join("; ")
            ),
        })
    }
}

/// `kubectl/v1.34.12 (linux/amd64) kubernetes/abc as alice`.
fn client_label(id: &Identity) -> String {
    match (id.user_agent.is_empty(), id.user.is_empty()) {
        (false, false) => format!("{} as {}", id.user_agent, id.user),
        (false, true) => id.user_agent.clone(),
        (true, _) => format!("user {}", id.user),
    }
}

/// An audit-log client: by its name, else by the shape of its traffic, else a controller.
fn classify_client(c: &AuditClient, log_secs: f64) -> Actor {
    if let Some(a) = by_name(&c.identity.user_agent, "user agent") {
        return a;
    }
    if c.watched {
        return actor(ActorKind::Controller, "holds a watch");
    }
    // An e-mail address is how OIDC names a person; workloads run as service accounts or certificates.
    if c.identity.user.contains('@') {
        return actor(
            ActorKind::Client,
            format!(
                "user {} is a person's account, and it holds no watch",
                c.identity.user
            ),
        );
    }
    let span = c.span_secs();
    if c.active_slots >= RETURNING_SLOTS && span > BURST_SECS {
        return actor(
            ActorKind::Controller,
            format!(
                "came back in {} separate 10-second slots over {span:.0} s",
                c.active_slots
            ),
        );
    }
    if c.requests > 0
        && span <= BURST_SECS
        && log_secs >= BURST_SHARE * span.max(BURST_SECS / BURST_SHARE)
    {
        return actor(
            ActorKind::Client,
            format!(
                "{} requests in one burst of {span:.0} s of a {log_secs:.0} s log, no watch: a one-off client",
                c.requests
            ),
        );
    }
    actor(
        ActorKind::Controller,
        "no sign of a one-off client (no known client's name, no single burst)",
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn client(ua: &str, watched: bool, first_s: i64, last_s: i64, slots: u32) -> AuditClient {
        AuditClient {
            identity: Identity {
                user: "u".into(),
                user_agent: ua.into(),
                manager: None,
            },
            requests: 50,
            watched,
            first_ms: first_s * 1000,
            last_ms: last_s * 1000,
            active_slots: slots,
        }
    }

    #[test]
    fn names_decide_first() {
        for (name, kind) in [
            (
                "kubectl/v1.34.12 (linux/amd64) kubernetes/0000000",
                ActorKind::Client,
            ),
            ("kubectl-client-side-apply", ActorKind::Client),
            ("kubectl-edit", ActorKind::Client),
            ("Helm/3.16.2", ActorKind::Client),
            ("helm", ActorKind::Client),
            ("kubectl-ctrlaudit/0.1.0", ActorKind::Tool),
        ] {
            assert_eq!(by_name(name, "x").map(|a| a.kind), Some(kind), "{name}");
        }
        for name in [
            "kube-controller-manager/v1.34.12 (linux/amd64) kubernetes/0000000",
            "kustomize-controller",
            "helm-controller",
            "argocd-controller",
            "widget-operator",
            "bad-annotation-loop",
        ] {
            assert!(by_name(name, "x").is_none(), "{name}");
        }
    }

    #[test]
    fn traffic_shape_decides_for_names_nobody_knows() {
        // A watch: a controller, however short the window.
        let a = classify_client(&client("deployer/1.0", true, 0, 2, 1), 600.0);
        assert_eq!(a.kind, ActorKind::Controller);
        // Back again and again over the window.
        let a = classify_client(&client("deployer/1.0", false, 0, 500, 12), 600.0);
        assert_eq!(a.kind, ActorKind::Controller);
        // One burst of a long log: a job.
        let a = classify_client(&client("deployer/1.0", false, 100, 103, 1), 600.0);
        assert_eq!(a.kind, ActorKind::Client, "{a:?}");
        // A short window cannot tell a burst from a loop: no judgement against it.
        let a = classify_client(&client("deployer/1.0", false, 0, 3, 1), 9.0);
        assert_eq!(a.kind, ActorKind::Controller);
        // A person's account (OIDC) with a script of its own, without a watch.
        let mut c = client("python-requests/2.32", false, 0, 3, 1);
        c.identity.user = "alice@example.com".into();
        assert_eq!(classify_client(&c, 9.0).kind, ActorKind::Client);
        c.watched = true;
        assert_eq!(classify_client(&c, 9.0).kind, ActorKind::Controller);
    }
}
