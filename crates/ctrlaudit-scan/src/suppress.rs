//! Suppression comments `// ctrlaudit: allow(CA202, CA203) reason: …`, read from the text because
//! syn drops ordinary comments. A suppression covers its own line and the line below it.

use crate::finding::{Finding, Span, Subject, Suppressed};

/// One allow comment.
#[derive(Debug, Clone)]
pub struct Suppression {
    pub line: usize,
    pub column: usize,
    pub codes: Vec<String>,
    pub has_reason: bool,
    /// The text after `reason:`, trimmed: SARIF's justification of each finding this comment suppresses.
    pub reason: String,
    pub end_column: usize,
}

const MARK: &str = "ctrlaudit: allow(";

/// Where a `//` comment starts, outside string literals (an allow written inside a string, such as
/// help text, is not a suppression).
fn comment_start(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut in_str = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            b'/' if !in_str && bytes.get(i + 1) == Some(&b'/') => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Finds the allow comments of a file.
pub fn parse(text: &str) -> Vec<Suppression> {
    let mut out = Vec::new();
    // Most files hold no allow comment: one vectorised search of the whole text instead of a scan per line.
    if !text.contains(MARK) {
        return out;
    }
    for (i, line) in text.lines().enumerate() {
        let Some(c) = comment_start(line) else {
            continue;
        };
        let comment = &line[c..];
        let Some(m) = comment.find(MARK) else {
            continue;
        };
        let rest = &comment[m + MARK.len()..];
        let Some(close) = rest.find(')') else {
            continue;
        };
        let codes: Vec<String> = rest[..close]
            .split(',')
            .map(|s| s.trim().to_ascii_uppercase())
            .filter(|s| !s.is_empty())
            .collect();
        let after = rest[close + 1..].trim_start();
        let reason = after
            .strip_prefix("reason:")
            .map(|r| r.split("//~").next().unwrap_or("").trim())
            .unwrap_or("");
        out.push(Suppression {
            line: i + 1,
            column: line[..c].chars().count() + 1,
            codes,
            has_reason: !reason.is_empty(),
            reason: reason.to_string(),
            end_column: line.chars().count() + 1,
        });
    }
    out
}

/// Removes suppressed findings of one file and returns the CA002 findings for allow comments that
/// matched nothing or lack a reason.
pub fn apply(file: &str, sups: &[Suppression], findings: &mut Vec<Finding>) -> Vec<Finding> {
    apply_keeping(file, sups, findings, &mut Vec::new())
}

/// [`apply`], keeping each suppressed finding with its comment's reason in `suppressed` (for SARIF).
pub fn apply_keeping(
    file: &str,
    sups: &[Suppression],
    findings: &mut Vec<Finding>,
    suppressed: &mut Vec<Suppressed>,
) -> Vec<Finding> {
    let mut used = vec![false; sups.len()];
    let mut kept = Vec::with_capacity(findings.len());
    for f in findings.drain(..) {
        let by = match &f.subject {
            Subject::Source(s) if s.file == file && f.code != crate::registry::CA002.code => {
                sups.iter().enumerate().find(|(_, sup)| {
                    let covers = s.line == sup.line || s.line == sup.line + 1;
                    covers && sup.has_reason && sup.codes.contains(&f.code)
                })
            }
            _ => None,
        };
        match by {
            Some((i, sup)) => {
                used[i] = true;
                suppressed.push(Suppressed {
                    finding: f,
                    reason: sup.reason.clone(),
                    comment: Span {
                        file: file.to_string(),
                        line: sup.line,
                        column: sup.column,
                        end_line: sup.line,
                        end_column: sup.end_column,
                    },
                });
            }
            None => kept.push(f),
        }
    }
    *findings = kept;
    let mut out = Vec::new();
    for (sup, used) in sups.iter().zip(used) {
        let span = Span {
            file: file.to_string(),
            line: sup.line,
            column: sup.column,
            end_line: sup.line,
            end_column: sup.end_column,
        };
        let codes = sup.codes.join(", ");
        let unknown: Vec<&String> = sup
            .codes
            .iter()
            .filter(|c| ctrlaudit_core::rules::find(c).is_none())
            .collect();
        let message = if !sup.has_reason {
            format!("`allow({codes})` has no reason: it suppresses nothing until it says why")
        } else if !unknown.is_empty() {
            format!(
                "`allow({codes})` names an unknown rule{}",
                ctrlaudit_core::rules::did_you_mean(unknown[0])
            )
        } else if !used {
            format!("`allow({codes})` matches no finding on this line or the next")
        } else {
            continue;
        };
        out.push(super::rules::finding(
            &crate::registry::CA002,
            span,
            message,
            "write `// ctrlaudit: allow(CODE) reason: why` on the finding's line or the line above, or remove it",
        ));
    }
    out
}

/// The rule levels of `policy` on suppressed findings, as on reported ones (a rule turned off is not listed as
/// suppressed either), in the order and without the duplicates of the reported findings.
pub fn apply_policy(policy: &crate::policy::Policy, suppressed: &mut Vec<Suppressed>) {
    suppressed.retain_mut(|s| {
        let mut one = vec![s.finding.clone()];
        policy.apply(&mut one);
        match one.pop() {
            Some(f) => {
                s.finding = f;
                true
            }
            None => false,
        }
    });
    suppressed.sort_by(|a, b| a.finding.sort_key_cmp(&b.finding));
    suppressed.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_codes_and_reason() {
        let s = parse(
            "let x = 1; // ctrlaudit: allow(ca203, CA202) reason: on purpose\n// ctrlaudit: allow(CA204)\n",
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].codes, vec!["CA203", "CA202"]);
        assert!(s[0].has_reason);
        assert!(!s[1].has_reason);
        assert_eq!(s[1].line, 2);
        assert_eq!(s[0].reason, "on purpose");
    }

    #[test]
    fn ignores_allow_text_inside_strings() {
        let s = parse("let help = \"// ctrlaudit: allow(CA203) reason: x\";\n");
        assert!(s.is_empty());
        let s = parse("let a = \"\\\"\"; // ctrlaudit: allow(CA203) reason: y\n");
        assert_eq!(s.len(), 1);
    }
}
