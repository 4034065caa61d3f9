//! What an `if` says about its branches, from its condition and blocks: the guard a finding names, which branch
//! runs on deletion, whether a block returns the error or acts before going on, and early returns when nothing
//! changed.

use super::statements;
use super::syntax::{self, Src, named_children};
use crate::sema::{Guard, GuardKind};
use tree_sitter::Node;

/// What a branch's condition asks, for a finding's `when`.
pub(super) fn guard(text: &str) -> Guard {
    let kind = if text.contains("Generation") {
        GuardKind::SpecChange
    } else if text.contains("!=")
        || text.contains("!reflect.DeepEqual")
        || text.contains("!equality.")
        || asks_for_change(text)
    {
        GuardKind::Drift
    } else {
        GuardKind::Other
    };
    Guard {
        kind,
        text: text.chars().take(Guard::MAX_TEXT).collect(),
    }
}

/// A predicate whose name says it found a difference or something due (`shouldRenewCertificates(..)`,
/// `needsUpdate`, `hasChanged`, `isExpired`), not negated: the branch runs when the state drifted.
fn asks_for_change(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with('!') {
        return false;
    }
    let lower = t.to_ascii_lowercase();
    [
        "changed", "differ", "needs", "should", "stale", "outdated", "expired",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Which branch of an `if` on the deletion timestamp runs on deletion: (then, else).
pub(super) fn deletion_branches(cond: &str) -> (bool, bool) {
    if !cond.contains("DeletionTimestamp") || cond.contains("&&") || cond.contains("||") {
        return (false, false);
    }
    let negated = cond.trim_start().starts_with('!');
    let deleting = if cond.contains("IsZero()") {
        negated
    } else if cond.contains("!= nil") {
        true
    } else if cond.contains("== nil") {
        false
    } else {
        return (false, false);
    };
    (deleting, !deleting)
}

/// The block returns the error (`return ctrl.Result{}, err`, `return err`).
pub(super) fn returns_err(src: &Src<'_>, block: Node<'_>) -> bool {
    syntax::any_node(block, &mut |n| {
        n.kind() == "return_statement" && mentions_err(src, n)
    })
}

/// The node's text names `err` as a word (not `errs`, `reterr`).
fn mentions_err(src: &Src<'_>, n: Node<'_>) -> bool {
    src.text(n)
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|w| w == "err")
}

/// The block does something before it goes on: it calls an operation (a call whose first argument is a
/// context, as every controller-runtime client method and most Go APIs take one), beyond logging.
pub(super) fn acts(src: &Src<'_>, block: Node<'_>) -> bool {
    syntax::any_node(block, &mut |n| {
        n.kind() == "call_expression"
            && n.child_by_field_name("arguments")
                .and_then(|a| named_children(a).next())
                .is_some_and(|first| {
                    let t = src.text(first);
                    t == "ctx" || t.ends_with("Ctx") || t.starts_with("context.")
                })
            && !n.child_by_field_name("function").is_some_and(|f| {
                src.text(f).ends_with("FromContext") || src.text(f).ends_with("LoggerFrom")
            })
    })
}

/// An `if` that returns early when the state it compares is already what it wants (`if a == b { return nil }`,
/// `if reflect.DeepEqual(old, new) { return … }`): its condition. Error and nil checks are not such tests.
pub(super) fn skips_when_unchanged(src: &Src<'_>, s: Node<'_>) -> Option<String> {
    if s.kind() != "if_statement" || s.child_by_field_name("alternative").is_some() {
        return None;
    }
    let cons = s.child_by_field_name("consequence")?;
    let last = statements(cons).last().copied()?;
    if last.kind() != "return_statement" || returns_err(src, cons) {
        return None;
    }
    let cond = src.compact(s.child_by_field_name("condition")?, 200);
    let compares = cond.split("&&").flat_map(|p| p.split("||")).any(|part| {
        let part = part.trim();
        if part.starts_with('!') {
            return false;
        }
        if part.contains("DeepEqual(") {
            return true;
        }
        part.split_once("==").is_some_and(|(l, r)| {
            let (l, r) = (l.trim(), r.trim());
            !l.ends_with('!')
                && !["nil", "\"\"", "0", "true", "false"].contains(&r)
                && !l.is_empty()
        })
    });
    compares.then_some(cond)
}

/// A condition that asks which error it is: `errors.IsNotFound(err)`, `apierrors.IsConflict(err)`.
pub(super) fn is_error_kind_test(cond: &str) -> bool {
    cond.match_indices(".Is").any(|(i, _)| {
        let rest = &cond[i + 3..];
        rest.starts_with(|c: char| c.is_ascii_uppercase())
            && rest
                .find('(')
                .is_some_and(|p| rest[p + 1..].trim_start().starts_with("err"))
    })
}

/// `if !firstTry { re-read }` in a conflict retry: the first attempt uses the object it was handed, the later
/// ones (after a conflict) read it again. Which branch runs only on those retries: (then, else).
pub(super) fn retry_only_branches(cond: &str) -> (bool, bool) {
    let c = cond.trim();
    let (negated, name) = c.strip_prefix('!').map_or((false, c), |n| (true, n.trim()));
    let lower = name.to_ascii_lowercase();
    let first_flag = name.chars().all(|ch| ch.is_alphanumeric() || ch == '_')
        && (lower.starts_with("first") || lower.starts_with("isfirst"));
    match (first_flag, negated) {
        (false, _) => (false, false),
        (true, true) => (true, false),
        (true, false) => (false, true),
    }
}

/// The condition is a test of what the error is, alone (`isRetryable(err)`, `plugins.ContainsPluginError(err)`,
/// `errors.As(err, &target)`): a branch taken when something failed, as `err != nil` is.
pub(super) fn tests_error(cond: &str) -> bool {
    let Some((callee, rest)) = cond.split_once('(') else {
        return false;
    };
    let first = rest.split([',', ')']).next().unwrap_or("").trim();
    callee
        .chars()
        .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && rest.ends_with(')')
        && !rest.contains('(')
        && (first == "err" || first.ends_with("Err"))
        // What is or is not there yet (an object, a CRD's kind) is a state, not a failure.
        && !["NoMatch", "NotFound", "AlreadyExist"]
            .iter()
            .any(|state| callee.contains(state))
}

/// The condition names an error that is a state to wait for, not a failure: the object is not there yet
/// (`apierrors.IsNotFound(err)`), or one of the package's own sentinels (`errors.Is(err, errWaitInit)`), which
/// the code raised to say what it waits for. A transient failure (`IsConflict`, `IsServerTimeout`) is not.
pub(super) fn waits_for_state(cond: &str) -> bool {
    // Only a test alone: `err != nil && !apierrors.IsNotFound(err)` is the failure branch.
    if cond.contains("||") || cond.contains("&&") || cond.contains('!') {
        return false;
    }
    cond.contains("IsNotFound(err")
        || cond.split("errors.Is(err,").nth(1).is_some_and(|rest| {
            let sentinel = rest.split(')').next().unwrap_or("").trim();
            !sentinel.is_empty()
                && sentinel
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// A branch on an error that drops it: no `return` and nothing keeps `err` (an assignment such as
/// `errs = append(errs, err)`, a send); it logs, records an event, or goes on.
pub(super) fn drops_err(src: &Src<'_>, block: Node<'_>) -> bool {
    !syntax::any_node(block, &mut |n| {
        n.kind() == "return_statement"
            || (matches!(
                n.kind(),
                "assignment_statement" | "short_var_declaration" | "send_statement"
            ) && mentions_err(src, n))
    })
}

/// A statement whose calls' errors are dropped: a call whose result is not kept (`r.Update(..)`, `_ =
/// r.Update(..)`), or an assignment followed by an `if err != nil { … }` that drops it (see [`drops_err`]) and
/// no later `return` of `err` in the block (`if err != nil { log } else { … }; return ok, err`). A statement
/// holding a closure is not judged: its calls run elsewhere.
pub(super) fn drops_result(src: &Src<'_>, s: Node<'_>, after: &[Node<'_>]) -> bool {
    let assigns = matches!(s.kind(), "short_var_declaration" | "assignment_statement");
    let returned_later = after
        .iter()
        .skip(1)
        .any(|n| n.kind() == "return_statement" && returns_err(src, *n));
    let checked_then_dropped = !returned_later
        && after.first().is_some_and(|n| {
            n.kind() == "if_statement"
                && n.child_by_field_name("initializer").is_none()
                && n.child_by_field_name("condition")
                    .is_some_and(|c| src.compact(c, 60) == "err != nil")
                && n.child_by_field_name("consequence")
                    .is_some_and(|b| drops_err(src, b))
        });
    !syntax::any_node(s, &mut |n| n.kind() == "func_literal")
        && (s.kind() == "expression_statement"
            || (assigns && (src.text(s).starts_with("_ =") || checked_then_dropped))
            || error_never_used(src, s, after))
}

/// `_, _ = c.Update(..)`, or `_, dErr := c.Update(..)` whose `dErr` the rest of the block only tests (`if dErr
/// == nil { log }`) and never returns or hands on: the write's error goes nowhere. Only a `:=` declares the
/// error here: one assigned with `=` may be returned after the block.
fn error_never_used(src: &Src<'_>, s: Node<'_>, after: &[Node<'_>]) -> bool {
    if !matches!(s.kind(), "short_var_declaration" | "assignment_statement") {
        return false;
    }
    let Some(e) = s
        .child_by_field_name("left")
        .and_then(|l| named_children(l).last())
        .filter(|e| e.kind() == "identifier")
        .map(|e| src.text(e))
    else {
        return false;
    };
    if e == "_" {
        return true;
    }
    if s.kind() != "short_var_declaration" {
        return false;
    }
    let mentions =
        |n: Node<'_>| syntax::any_node(n, &mut |x| x.kind() == "identifier" && src.text(x) == e);
    after.iter().all(|n| {
        if !mentions(*n) {
            return true;
        }
        // Tested, and the branch neither returns nor uses it.
        n.kind() == "if_statement"
            && n.child_by_field_name("alternative").is_none()
            && n.child_by_field_name("consequence").is_some_and(|b| {
                !mentions(b) && !syntax::any_node(b, &mut |x| x.kind() == "return_statement")
            })
    })
}

pub(super) fn is_statement(n: Node<'_>) -> bool {
    n.kind().ends_with("_statement")
        || matches!(
            n.kind(),
            "short_var_declaration" | "var_declaration" | "const_declaration" | "block"
        )
}

/// `return …, e` returns an error for sure: a new one (`fmt.Errorf(..)`), or a variable the return is guarded
/// by (`if err != nil { return false, err }`); a bare `return false, err` may return nil.
fn fails_with(src: &Src<'_>, ret: Node<'_>, e: Node<'_>) -> bool {
    if e.kind() == "call_expression" {
        return true;
    }
    if e.kind() != "identifier" {
        return false;
    }
    let guard = format!("{} != nil", src.text(e));
    let mut at = ret.parent();
    while let Some(x) = at.filter(|x| x.kind() != "func_literal") {
        if x.kind() == "if_statement"
            && x.child_by_field_name("condition")
                .is_some_and(|c| src.compact(c, 200) == guard)
        {
            return true;
        }
        at = x.parent();
    }
    false
}

/// See `CallCtx::never_retries`: a closure argument returning `(bool, error)` whose every return (its own, not a
/// nested closure's) is `true, …` or `false, <an error>`. A return that may be `false, nil` (`return ok, err`)
/// asks again.
pub(super) fn never_retries(src: &Src<'_>, args: &[Node<'_>]) -> bool {
    args.iter().any(|a| {
        let polls = a.kind() == "func_literal"
            && a.child_by_field_name("result")
                .is_some_and(|r| src.text(r).replace(' ', "").starts_with("(bool,"));
        if !polls {
            return false;
        }
        let mut returns = 0;
        let asks_again = syntax::any_node(*a, &mut |n| {
            if n.kind() != "return_statement" {
                return false;
            }
            let mut owner = n.parent();
            while let Some(x) = owner.filter(|x| x.kind() != "func_literal") {
                owner = x.parent();
            }
            if owner != Some(*a) {
                return false;
            }
            returns += 1;
            let values: Vec<Node> = named_children(n)
                .find(|c| c.kind() == "expression_list")
                .map(|l| named_children(l).collect())
                .unwrap_or_default();
            let first = values.first().map(|v| src.text(*v));
            let fails = values.get(1).is_some_and(|e| fails_with(src, n, *e));
            !(first == Some("true") || (first == Some("false") && fails))
        });
        returns > 0 && !asks_again
    })
}

/// The function waits for goroutines it starts: outside any `go` statement it calls `x.Wait()` (a
/// `sync.WaitGroup`, an `errgroup.Group`) or receives from a channel of its own (`<-results`), not a timer's or
/// a context's. One pass over the body, a `go` statement's subtree skipped.
pub(super) fn joins_goroutines(src: &Src<'_>, body: Node<'_>) -> bool {
    let (mut starts, mut joins) = (false, false);
    // An explicit stack: a deeply nested body must not exhaust a worker thread's.
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "go_statement" => {
                starts = true;
                continue;
            }
            "call_expression" => {
                let no_args = n
                    .child_by_field_name("arguments")
                    .is_some_and(|a| a.named_child_count() == 0);
                joins |= no_args
                    && n.child_by_field_name("function")
                        .filter(|f| f.kind() == "selector_expression")
                        .and_then(|f| f.child_by_field_name("field"))
                        .is_some_and(|m| src.text(m) == "Wait");
            }
            "unary_expression" => {
                joins |= n
                    .child_by_field_name("operand")
                    .is_some_and(|o| o.kind() == "identifier")
                    && n.child_by_field_name("operator")
                        .is_some_and(|o| src.text(o) == "<-");
            }
            _ => {}
        }
        stack.extend(named_children(n));
    }
    starts && joins
}

/// The path a call at `place` is on.
pub(super) fn place_path(place: &super::body::Place) -> crate::sema::CallPath {
    use crate::sema::CallPath;
    if place.deletion {
        CallPath::Deletion
    } else if place.on_error {
        CallPath::Error
    } else {
        CallPath::Routine
    }
}

/// On a branch taken when the spec changed or the state drifted: a helper called there runs until the change
/// lands, not on every pass, as a call after a phase move does. Only when the condition says so by a generation
/// or an equality test or a predicate's name: a plain `!=` is as often a feature switch
/// (`cfg.Handler != noOp`) or a presence test (`x != nil`), whatever it guards runs on every pass it holds.
pub(super) fn changes_on(place: &super::body::Place) -> bool {
    place.guard.as_ref().is_some_and(|g| {
        g.kind == GuardKind::SpecChange
            || (g.kind == GuardKind::Drift
                && (g.text.contains("!reflect.DeepEqual")
                    || g.text.contains("!equality.")
                    || asks_for_change(&g.text)))
    })
}
