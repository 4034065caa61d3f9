//! Phases in Go: `if o.Status.Phase == v1.PhaseNew { .. }` and `switch o.Status.Phase { case ..: }` as the phase
//! the code of that branch runs in (`CallCtx::phase_arm`), and `o.Status.Phase = v1.PhaseAccepted` as a
//! `sema::PhaseSet`, so that the join tells a step that moves the object on to its next phase from a pass that
//! stays where it is (`Unit::reach_routine`), as the Rust front end does with enum matches.
//!
//! Go's phases are string constants, not enum variants: the field stands for the enum (`Phase::`, `State::`) and
//! the constant's own name for the variant (`Phase::DataUploadPhaseAccepted`), whatever package alias spells it;
//! the empty string is the phase of an object that has none yet (`Phase::None`).

use super::body::{Place, Walk};
use super::syntax::{Src, named_children};
use crate::sema::{PhaseSet, enum_of, leaves_phase};
use tree_sitter::Node;

impl Walk<'_, '_> {
    /// The phase an `if` branch runs in, when its condition pins one: `o.Status.Phase == A || o.Status.Phase ==
    /// B` (either phase), `o.Status.Phase == A && ready` (phase A, and more).
    pub(super) fn phase_arm_of(&self, cond: Node<'_>) -> Option<Vec<String>> {
        arm_of(self.src, cond)
    }

    /// Where the code of a `case` runs: in the phase it names when the switch is on one.
    pub(super) fn case_place(&self, switch: Node<'_>, case: Node<'_>, inner: &Place) -> Place {
        match self.phase_switch_arm(switch, case) {
            Some(phase_arm) => Place {
                phase_arm,
                ..inner.clone()
            },
            None => inner.clone(),
        }
    }

    /// The phase each `case` of `switch o.Status.Phase { .. }` runs in; `None` for a switch on anything else.
    fn phase_switch_arm(&self, switch: Node<'_>, case: Node<'_>) -> Option<Vec<String>> {
        let field = phase_field(self.src, switch.child_by_field_name("value")?)?;
        if case.kind() != "expression_case" {
            return None;
        }
        let values = case.child_by_field_name("value")?;
        let arm: Vec<String> = named_children(values)
            .filter_map(|v| variant(self.src, v).map(|v| format!("{field}::{v}")))
            .collect();
        (!arm.is_empty()).then_some(arm)
    }

    /// `o.Status.Phase = v1.PhaseAccepted`: a phase set, for the join; and when it leaves the phase the branch
    /// it is in runs in, what this branch calls after it is a step of that move (`CallCtx::transition`).
    pub(super) fn note_phase_set(
        &mut self,
        stmt: Node<'_>,
        left: Node<'_>,
        right: Node<'_>,
        place: &Place,
    ) {
        let (Some(field), Some(v)) = (phase_field(self.src, left), variant(self.src, right)) else {
            return;
        };
        let to = format!("{field}::{v}");
        if !place.phase_arm.is_empty()
            && place.phase_arm.iter().any(|a| enum_of(a) == enum_of(&to))
            && leaves_phase(&place.phase_arm, &to)
            && !self.phase_moved.contains(&place.phase_arm)
        {
            self.phase_moved.push(place.phase_arm.clone());
        }
        let unconditional = runs_on_every_call(self.src, stmt);
        self.f.phase_sets.push(PhaseSet { to, unconditional });
    }

    /// Has code of the phase arm this call is made in already moved the object out of that phase?
    pub(super) fn after_phase_move(&self, place: &Place) -> bool {
        !place.phase_arm.is_empty() && self.phase_moved.contains(&place.phase_arm)
    }
}

fn arm_of(src: &Src<'_>, cond: Node<'_>) -> Option<Vec<String>> {
    match cond.kind() {
        "parenthesized_expression" => arm_of(src, named_children(cond).next()?),
        "binary_expression" => {
            let (l, r) = (
                cond.child_by_field_name("left")?,
                cond.child_by_field_name("right")?,
            );
            let op = cond.child_by_field_name("operator").map(|o| src.text(o));
            match op? {
                "==" => {
                    let (field, value) = match phase_field(src, l) {
                        Some(f) => (f, r),
                        None => (phase_field(src, r)?, l),
                    };
                    Some(vec![format!("{field}::{}", variant(src, value)?)])
                }
                "||" => {
                    let (mut a, b) = (arm_of(src, l)?, arm_of(src, r)?);
                    if a.iter().any(|x| b.iter().any(|y| enum_of(x) != enum_of(y))) {
                        return None;
                    }
                    a.extend(b);
                    Some(a)
                }
                "&&" => arm_of(src, l).or_else(|| arm_of(src, r)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `o.Status.Phase`, `d.Status.State`: a phase field of an object's status, by its name (`Phase`).
fn phase_field(src: &Src<'_>, n: Node<'_>) -> Option<String> {
    if n.kind() != "selector_expression" {
        return None;
    }
    let field = src.text(n.child_by_field_name("field")?);
    let lower = field.to_ascii_lowercase();
    let is_phase = matches!(lower.as_str(), "phase" | "state" | "stage")
        || lower.ends_with("phase")
        || lower.ends_with("state");
    let operand = n.child_by_field_name("operand")?;
    let of_status = operand.kind() == "selector_expression"
        && operand
            .child_by_field_name("field")
            .is_some_and(|f| src.text(f) == "Status");
    (is_phase && of_status).then(|| field.to_string())
}

/// The phase a value names: a constant's own name (`v1.PhaseReady` → `PhaseReady`), a string's text, `None` for
/// the empty string.
fn variant(src: &Src<'_>, v: Node<'_>) -> Option<String> {
    match v.kind() {
        "identifier" => Some(src.text(v).to_string()),
        "selector_expression" => v
            .child_by_field_name("operand")
            .filter(|o| o.kind() == "identifier")
            .and(v.child_by_field_name("field"))
            .map(|f| src.text(f).to_string()),
        "interpreted_string_literal" | "raw_string_literal" => {
            let s = src.text(v).trim_matches(|c| c == '"' || c == '`');
            Some(if s.is_empty() { "None" } else { s }.to_string())
        }
        // `v1.Phase("Ready")`, `string(v1.PhaseReady)`.
        "call_expression" | "type_conversion_expression" => v
            .child_by_field_name("arguments")
            .and_then(|a| named_children(a).next())
            .or_else(|| v.child_by_field_name("operand"))
            .and_then(|x| variant(src, x)),
        _ => None,
    }
}

/// Does every call of the function run this statement? Not when an `if`, `switch`, `select`, loop or `go`
/// encloses it, nor after a `return` that is not a failure's (`if err != nil { return .. }`); a closure the
/// function defines on the way is taken to be called (`update := func(o *T) { o.Status.Phase = .. }`, handed to
/// an update helper).
fn runs_on_every_call(src: &Src<'_>, stmt: Node<'_>) -> bool {
    let mut at = stmt;
    while let Some(parent) = at.parent() {
        match parent.kind() {
            "function_declaration" | "method_declaration" => return true,
            "if_statement"
            | "for_statement"
            | "expression_switch_statement"
            | "type_switch_statement"
            | "select_statement"
            | "go_statement" => return false,
            "block" | "statement_list" => {
                let mut sibling = at.prev_named_sibling();
                while let Some(s) = sibling {
                    if returns_on_success(src, s) {
                        return false;
                    }
                    sibling = s.prev_named_sibling();
                }
            }
            _ => {}
        }
        at = parent;
    }
    false
}

/// A statement that may `return` other than on a failure: a `return`, or an `if` holding one whose condition is
/// not an error test.
fn returns_on_success(src: &Src<'_>, s: Node<'_>) -> bool {
    match s.kind() {
        "return_statement" => true,
        "if_statement" => {
            let cond = s
                .child_by_field_name("condition")
                .map_or("", |c| src.text(c));
            !cond.contains("err != nil")
                && !cond.contains("Err != nil")
                && super::syntax::any_node(s, &mut |n| n.kind() == "return_statement")
        }
        _ => false,
    }
}
