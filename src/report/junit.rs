//! `-o junit`: JUnit XML with one test case per rule of the command's lens, so CI shows which rules passed.
//!
//! A rule with findings is a failing test case; its `<failure>` names the first finding (or the count) and its text
//! lists every finding with location, evidence and help. Notes go to `<system-out>`, stats to `<properties>`.

use super::{Report, lens_of_command, note_line, push_details};
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
    suite.add_test_cases(cases(report).into_iter().map(|case| {
        let mut tc = TestCase::new(case.name, status(&case.findings));
        tc.set_classname(classname.as_str());
        tc
    }));
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
