//! `-o junit`: JUnit XML with one test case per rule of the command's lens, so CI shows which rules passed.
//!
//! A rule with findings at or above `--fail-on` is a failing test case; its `<failure>` names the first of them (or
//! the count) and its text lists each with location, evidence and help. Findings below `--fail-on` fail nothing, as
//! they do not fail the exit code (see [`test_case`]). Notes go to the suite's `<system-out>`, stats and the
//! threshold to `<properties>`.

use super::{FailOn, Report, lens_of_command, note_line, push_details};
use crate::finding::{Finding, Severity};
use crate::rules::{RULES, find};
use anyhow::Context;
use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

struct Case<'a> {
    name: String,
    findings: Vec<&'a Finding>,
}

/// Renders the report as a JUnit XML document followed by a newline.
pub fn render(report: &Report<'_>) -> anyhow::Result<String> {
    let classname = format!("ctrlaudit.{}", report.command);
    let mut suite = TestSuite::new(format!("ctrlaudit {}", report.command));
    suite.add_properties(report.stats.iter().map(|(k, v)| Property::new(k, v)));
    // The threshold the failures were judged by, so a reader of the XML alone can tell why an info finding passed.
    suite.add_property(Property::new("fail-on", report.fail_on.as_str()));
    suite.add_test_cases(
        cases(report)
            .into_iter()
            .map(|case| test_case(case, &classname, report.fail_on)),
    );
    if !report.notes.is_empty() {
        let notes: Vec<String> = report.notes.iter().map(note_line).collect();
        suite.set_system_out(notes.join("\n"));
    }
    let mut junit = quick_junit::Report::new("kubectl-ctrlaudit");
    junit.add_test_suite(suite);
    junit.to_string().context("serializing the JUnit report")
}

/// One case per rule of the lens, in registry order; a finding of a rule outside the lens (or unknown to the
/// registry) still gets a case of its own, so nothing is lost.
fn cases<'a>(report: &Report<'a>) -> Vec<Case<'a>> {
    let lens = lens_of_command(report.command);
    let mut cases: Vec<Case<'a>> = RULES
        .iter()
        .filter(|r| lens.is_none_or(|l| r.has_lens(l)))
        .map(|r| Case {
            name: format!("{} {}", r.code, r.name),
            findings: report
                .findings
                .iter()
                .filter(|f| f.code == r.code)
                .collect(),
        })
        .collect();
    for f in report.findings {
        let listed = RULES
            .iter()
            .any(|r| r.code == f.code && lens.is_none_or(|l| r.has_lens(l)));
        if listed {
            continue;
        }
        let name = match find(&f.code) {
            Some(r) => format!("{} {}", r.code, r.name),
            None => f.code.clone(),
        };
        match cases.iter_mut().find(|c| c.name == name) {
            Some(c) => c.findings.push(f),
            None => cases.push(Case {
                name,
                findings: vec![f],
            }),
        }
    }
    cases
}

/// The case of one rule: a failure for the findings at or above `fail_on`; the findings below it do not fail it.
///
/// A rule whose findings are all below the threshold is a `<skipped>` case whose message and text list them:
/// Jenkins' `junit` step marks a build unstable only for `<failure>`/`<error>` and shows a skip's message on the
/// case's page; GitLab's test report counts it as skipped, not failed, and shows the skip's text as the case's
/// details. A passing case with `<system-out>` would not fail either, but GitLab drops a passing case's output and
/// Jenkins truncates it, so the advisory findings would vanish from the report. Next to a failure, the findings
/// below the threshold go to the case's `<system-out>`, which both show for a failed case.
fn test_case(case: Case<'_>, classname: &str, fail_on: FailOn) -> TestCase {
    let (failing, below): (Vec<&Finding>, Vec<&Finding>) = case
        .findings
        .iter()
        .partition(|f| fail_on.trips(f.severity));
    let advisory = (!below.is_empty()).then(|| {
        let listed: Vec<String> = below.iter().map(|f| describe(f)).collect();
        (
            format!(
                "{} below --fail-on {}",
                plural_findings(below.len()),
                fail_on.as_str()
            ),
            listed.join("\n\n"),
        )
    });
    let mut tc = match (failing.is_empty(), advisory) {
        (true, Some((message, text))) => {
            let mut status = TestCaseStatus::skipped();
            status.set_message(message).set_description(text);
            TestCase::new(case.name, status)
        }
        (_, advisory) => {
            let mut tc = TestCase::new(case.name, status(&failing));
            if let Some((message, text)) = advisory {
                tc.set_system_out(format!("{message}:\n\n{text}"));
            }
            tc
        }
    };
    tc.set_classname(classname);
    tc
}

fn plural_findings(n: usize) -> String {
    if n == 1 {
        "1 finding".to_string()
    } else {
        format!("{n} findings")
    }
}

/// Passed without findings; otherwise one failure whose type is the most severe finding's severity.
fn status(findings: &[&Finding]) -> TestCaseStatus {
    let Some(first) = findings.first() else {
        return TestCaseStatus::success();
    };
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    let message = match findings.len() {
        1 => first.message.clone(),
        n => format!("{n} findings; first: {}", first.message),
    };
    let worst = findings
        .iter()
        .map(|f| f.severity)
        .max()
        .unwrap_or(Severity::Info);
    let description: Vec<String> = findings.iter().map(|f| describe(f)).collect();
    status
        .set_message(message)
        .set_type(worst.as_str())
        .set_description(description.join("\n\n"));
    status
}

fn describe(f: &Finding) -> String {
    let mut body = format!(
        "{}: {}\n{}",
        f.severity.as_str(),
        f.message,
        f.subject.label()
    );
    push_details(&mut body, f, "  ");
    body
}
