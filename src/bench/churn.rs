//! `--churn`: another writer that changes `spec.count` of a few hot objects while the variants run, at random
//! (Poisson) moments, with at most one write in flight per object, the way another controller would write.
//!
//! Random timing matters: a writer on a fixed period never lands inside a reconcile it just triggered, and real
//! writers (users, other controllers) do. The bound matters as much: an open-loop writer that fires without
//! waiting stacks up hundreds of concurrent patches on the same etcd keys once the API server serves fewer
//! writes than it asks for (any loaded machine); the API server then retries them against each other until its
//! 34 s storage timeout, and every other write to those objects (the variants' status writes) starves behind
//! them. That made the bench's `good` controller look stuck on a loaded machine (issue 8).

use std::collections::HashMap;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde_json::json;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::widget::Widget;

/// The longest one write may take before the writer gives up on it and frees its object.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the writer did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChurnCount {
    /// Writes sent.
    pub sent: u64,
    /// Writes the API server accepted.
    pub accepted: u64,
    /// Arrivals dropped because the object's previous write had not returned yet.
    pub skipped: u64,
}

/// The objects with a write in flight, by the task writing them: an arrival for one of them is skipped, not
/// queued. At most one entry per hot object, so a scan is cheap.
#[derive(Debug, Default)]
struct InFlight(HashMap<tokio::task::Id, (usize, u64)>);

impl InFlight {
    fn busy(&self, key: (usize, u64)) -> bool {
        self.0.values().any(|k| *k == key)
    }

    fn started(&mut self, task: tokio::task::Id, key: (usize, u64)) {
        self.0.insert(task, key);
    }

    fn finished(&mut self, task: tokio::task::Id) {
        self.0.remove(&task);
    }
}

/// A running writer: stop it with the sender; the task returns what it did.
pub type Churn = (watch::Sender<bool>, JoinHandle<ChurnCount>);

/// Merge-patches `spec.count` of one of the first `hot` objects (`w-00000`, …) of one of `namespaces`, `rate`
/// times a second per namespace on average, until `until` has passed or it is stopped. Writes still in flight
/// when it is stopped are cancelled, so that none outlives the run.
pub fn start(
    client: Client,
    namespaces: Vec<String>,
    hot: u64,
    rate: f64,
    until: Duration,
) -> Churn {
    let (tx, mut rx) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut count = ChurnCount::default();
        if namespaces.is_empty() || hot == 0 || rate <= 0.0 {
            return count;
        }
        let total_rate = rate * namespaces.len() as f64;
        let deadline = tokio::time::Instant::now() + until;
        let apis: Vec<Api<Widget>> = namespaces
            .iter()
            .map(|ns| Api::namespaced(client.clone(), ns))
            .collect();
        let mut rng = fastrand::Rng::new();
        let mut writes: JoinSet<bool> = JoinSet::new();
        let mut in_flight = InFlight::default();
        let mut stopped = false;
        loop {
            // Exponential gaps: a Poisson process of `total_rate` arrivals per second.
            let gap = Duration::from_secs_f64(-(1.0 - rng.f64()).ln() / total_rate);
            tokio::select! {
                _ = tokio::time::sleep(gap) => {}
                _ = rx.wait_for(|v| *v) => { stopped = true; break; }
            }
            while let Some(done) = writes.try_join_next_with_id() {
                settle(done, &mut in_flight, &mut count);
            }
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            let key = (rng.usize(..apis.len()), rng.u64(..hot));
            if in_flight.busy(key) {
                count.skipped += 1;
                continue;
            }
            count.sent += 1;
            let api = apis[key.0].clone();
            let body = json!({ "spec": { "count": 1_000_000 + count.sent } });
            let handle = writes.spawn(async move {
                let name = format!("w-{:05}", key.1);
                let (pp, patch) = (PatchParams::default(), Patch::Merge(&body));
                let write = api.patch(&name, &pp, &patch);
                matches!(tokio::time::timeout(WRITE_TIMEOUT, write).await, Ok(Ok(_)))
            });
            in_flight.started(handle.id(), key);
        }
        // The last writes get their answer unless the run is ending.
        while !stopped && !writes.is_empty() {
            tokio::select! {
                Some(done) = writes.join_next_with_id() => settle(done, &mut in_flight, &mut count),
                _ = rx.wait_for(|v| *v) => stopped = true,
            }
        }
        writes.abort_all();
        count
    });
    (tx, task)
}

fn settle(
    done: Result<(tokio::task::Id, bool), tokio::task::JoinError>,
    in_flight: &mut InFlight,
    count: &mut ChurnCount,
) {
    match done {
        Ok((id, accepted)) => {
            in_flight.finished(id);
            count.accepted += u64::from(accepted);
        }
        Err(e) => in_flight.finished(e.id()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_write_in_flight_per_object() {
        let mut f = InFlight::default();
        let mut set = JoinSet::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let a = set.spawn(async move {
            let _ = rx.await;
        });
        assert!(!f.busy((0, 1)));
        f.started(a.id(), (0, 1));
        assert!(f.busy((0, 1)), "a second write to a busy object is skipped");
        assert!(
            !f.busy((1, 1)),
            "the same name in another namespace is another object"
        );
        tx.send(()).expect("the task waits");
        let (id, ()) = set
            .join_next_with_id()
            .await
            .expect("one task")
            .expect("it ran");
        f.finished(id);
        assert!(!f.busy((0, 1)), "free again once its write returned");
    }
}
