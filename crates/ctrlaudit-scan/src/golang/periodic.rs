//! Loops on a timer: what a `for` over a ticker or a `wait.Until` runs again and again, with no workqueue between
//! the timer and the API (VPA's recommender, a canary analysis tick, a node monitor). Their calls are marked
//! [`crate::sema::CallCtx::periodic`]; the unit takes what they call as roots beside the reconciles.

use super::body::Walk;
use super::syntax::{self, Src, named_children};
use crate::sema::{Call, CallCtx, CallPath};
use tree_sitter::Node;

/// k8s.io/apimachinery's runners that call a function every period until stopped (not `BackoffUntil`, not the
/// polls, which wait for a condition and end).
const RUNNERS: &[&str] = &[
    "Until",
    "UntilWithContext",
    "JitterUntil",
    "JitterUntilWithContext",
    "NonSlidingUntil",
    "NonSlidingUntilWithContext",
    "Forever",
];

/// A `for` that runs on a timer: `for range t.C`, `for range time.Tick(d)`, or a loop with no condition whose
/// body (not a closure in it) receives from a ticker or timer (`<-t.C`, `<-tickChan`), or whose `select` does
/// its work in a `case <-time.After(d):` that never leaves the loop (a status checker until its context is
/// done). A loop that only sleeps, or whose `time.After` case returns when something is ready, is as often a poll
/// that ends as a schedule: left out.
pub(super) fn timer_loop(src: &Src<'_>, s: Node<'_>) -> bool {
    if named_children(s).any(is_condition) {
        return false;
    }
    if let Some(r) = named_children(s).find(|c| c.kind() == "range_clause") {
        return r
            .child_by_field_name("right")
            .is_some_and(|x| is_timer_channel(src, x) || src.text(x).starts_with("time.Tick("));
    }
    let Some(body) = named_children(s).find(|c| c.kind() == "block") else {
        return false;
    };
    // `for { if err := start(); err == nil { break }; <-t.C }`: a retry on a ticker that ends.
    if breaks_out(src, s, body) {
        return false;
    }
    // Not into closures: a goroutine or callback started in the loop receives on its own time.
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        if n.kind() == "unary_expression"
            && n.child_by_field_name("operator")
                .is_some_and(|o| src.text(o) == "<-")
            && n.child_by_field_name("operand")
                .is_some_and(|x| is_timer_channel(src, x))
        {
            return true;
        }
        if n.kind() == "communication_case" && works_on_timer(src, n) {
            return true;
        }
        stack.extend(named_children(n).filter(|c| c.kind() != "func_literal"));
    }
    false
}

/// `case <-time.After(d): c.checkStatus(ctx)`: a case of a timer made anew each time round, with work to do and
/// no way out of the loop (no `return`, no `break`).
fn works_on_timer(src: &Src<'_>, case: Node<'_>) -> bool {
    let Some(comm) = case.child_by_field_name("communication") else {
        return false;
    };
    let text = src.text(comm);
    if !(text.starts_with("<-time.After(") || text.starts_with("<-time.Tick(")) {
        return false;
    }
    let work: Vec<Node<'_>> = named_children(case)
        .filter(|c| c.id() != comm.id() && c.kind() != "comment")
        .collect();
    let mut stack = work.clone();
    while let Some(n) = stack.pop() {
        if matches!(
            n.kind(),
            "return_statement" | "break_statement" | "goto_statement"
        ) {
            return false;
        }
        stack.extend(named_children(n).filter(|c| c.kind() != "func_literal"));
    }
    !work.is_empty()
}

/// The loop `s` has a `break` of its own in `body`: unlabelled and not inside an inner loop, `switch` or `select`
/// (whose own it would be), or naming the loop's label.
fn breaks_out(src: &Src<'_>, s: Node<'_>, body: Node<'_>) -> bool {
    let label = s
        .parent()
        .filter(|p| p.kind() == "labeled_statement")
        .and_then(|p| p.child_by_field_name("label"))
        .map(|l| src.text(l));
    let mut stack = vec![(body, true)];
    while let Some((n, own)) = stack.pop() {
        if n.kind() == "break_statement" {
            let target = named_children(n).next().map(|l| src.text(l));
            if (target.is_none() && own) || (target.is_some() && target == label) {
                return true;
            }
        }
        let inner = own
            && !matches!(
                n.kind(),
                "for_statement"
                    | "expression_switch_statement"
                    | "type_switch_statement"
                    | "select_statement"
            );
        stack.extend(
            named_children(n)
                .filter(|c| c.kind() != "func_literal")
                .map(|c| (c, inner)),
        );
    }
    false
}

/// A three-clause header or a condition (`for cond { … }`): any child but the body and a range clause.
fn is_condition(c: Node<'_>) -> bool {
    !matches!(c.kind(), "block" | "range_clause" | "comment")
}

/// `t.C`, `ticker.C`, `tickChan`, `c.resyncTimer.C`: a ticker's or timer's channel by its field or its name.
fn is_timer_channel(src: &Src<'_>, x: Node<'_>) -> bool {
    let text = src.text(x);
    if x.kind() == "selector_expression"
        && x.child_by_field_name("field")
            .is_some_and(|f| src.text(f) == "C")
    {
        return true;
    }
    let last = text.rsplit('.').next().unwrap_or(text).to_ascii_lowercase();
    x.kind() != "call_expression" && (last.contains("tick") || last.contains("timer"))
}

impl Walk<'_, '_> {
    /// `wait.Until(f, period, stop)` and its kin: the function handed over runs every period.
    pub(super) fn periodic_runner(&self, func: Node<'_>) -> bool {
        syntax::qualified(self.src, func).is_some_and(|(pkg, f)| {
            self.imports.is(pkg, "k8s.io/apimachinery/pkg/util/wait") && RUNNERS.contains(&f)
        })
    }

    /// A method value handed to a periodic runner (`go wait.Until(c.monitor, 30*time.Second, stop)`) is called by
    /// it: recorded as a periodic call of that method. A closure handed over is walked as periodic code instead.
    pub(super) fn periodic_method_values(
        &mut self,
        args: &[Node<'_>],
        n: Node<'_>,
        path: CallPath,
    ) {
        for a in args.iter().filter(|a| a.kind() == "selector_expression") {
            if let Some(callee) = self.callee(*a) {
                self.f.calls.push(Call {
                    callee,
                    at: self.src.pos(n),
                    args: Vec::new(),
                    type_args: Vec::new(),
                    ctx: CallCtx {
                        path,
                        periodic: true,
                        ..Default::default()
                    },
                });
            }
        }
    }
}
