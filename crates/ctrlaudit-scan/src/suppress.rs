//! Suppression comments `// ctrlaudit: allow(CA202, polling-requeue) reason: …`, read from the text because
//! syn drops ordinary comments. A suppression covers its own line and the line below it. Forms that look like
//! one but are not read (`ctrlaudit:allow(` without the space, a block comment) are reported, not ignored: an
//! allow that silently does nothing is how a gate gets argued around.

use crate::finding::{Finding, Span, Subject, Suppressed};

/// One allow comment, or a comment that looks like one in a form that is not read.
#[derive(Debug, Clone)]
pub struct Suppression {
    pub line: usize,
    pub column: usize,
    /// The rules as written, each resolved to its code when it names a rule (`polling-requeue` is `CA203`);
    /// what names no rule stays as written, upper-cased.
    pub codes: Vec<String>,
    pub has_reason: bool,
    /// The text after `reason:`, trimmed: SARIF's justification of each finding this comment suppresses.
    pub reason: String,
    pub end_column: usize,
    /// Why this comment is not read as an allow (it suppresses nothing and is reported as CA002), or `None`.
    pub ignored: Option<&'static str>,
}

const MARK: &str = "ctrlaudit: allow(";

/// The comments of one line: where each starts (in bytes) and whether it is a block comment, outside string and
/// character literals. `in_block` carries a block comment from one line to the next.
fn comments(line: &str, in_block: &mut bool) -> Vec<(usize, bool)> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut in_str = false;
    let mut i = 0;
    if *in_block {
        out.push((0, true));
    }
    while i < bytes.len() {
        if *in_block {
            if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                *in_block = false;
                i += 1;
            }
            i += 1;
            continue;
        }
        match bytes[i] {
            b'\\' if in_str => i += 1,
            b'"' => in_str = !in_str,
            // A character literal of a quote (`'"'`) is no string.
            b'\''
                if !in_str
                    && bytes.get(i + 1) == Some(&b'"')
                    && bytes.get(i + 2) == Some(&b'\'') =>
            {
                i += 2
            }
            b'/' if !in_str && bytes.get(i + 1) == Some(&b'/') => {
                out.push((i, false));
                break;
            }
            b'/' if !in_str && bytes.get(i + 1) == Some(&b'*') => {
                out.push((i, true));
                *in_block = true;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `ctrlaudit`, optional space, `:`, optional space, `allow`, optional space, `(` at the start of `text`: the
/// length of the mark and whether it is the one form that is read.
fn mark_at(text: &str) -> Option<(usize, bool)> {
    let rest = text.strip_prefix("ctrlaudit")?;
    let after_name = rest.trim_start();
    let rest = after_name.strip_prefix(':')?;
    let after_colon = rest.trim_start();
    let rest = after_colon.strip_prefix("allow")?;
    let after_allow = rest.trim_start();
    let rest = after_allow.strip_prefix('(')?;
    let exact = text.len() - rest.len() == MARK.len() && text.starts_with(MARK);
    Some((text.len() - rest.len(), exact))
}

/// Finds the allow comments of a file, and the comments that look like one but are not read.
pub fn parse(text: &str) -> Vec<Suppression> {
    let mut out = Vec::new();
    // Most files hold no allow comment: one vectorised search of the whole text instead of a scan per line.
    if !text.contains("ctrlaudit") {
        return out;
    }
    let mut in_block = false;
    for (i, line) in text.lines().enumerate() {
        let starts_in_block = in_block;
        let found = comments(line, &mut in_block);
        if !line.contains("ctrlaudit") {
            continue;
        }
        for (c, block) in found {
            let comment = &line[c..];
            let Some((m, (len, exact))) = comment
                .match_indices("ctrlaudit")
                .find_map(|(m, _)| Some((m, mark_at(&comment[m..])?)))
            else {
                continue;
            };
            let rest = &comment[m + len..];
            let Some(close) = rest.find(')') else {
                continue;
            };
            let codes: Vec<String> = rest[..close]
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| {
                    ctrlaudit_core::rules::find(s)
                        .map_or_else(|| s.to_ascii_uppercase(), |r| r.code.to_string())
                })
                .collect();
            let after = rest[close + 1..].trim_start();
            let reason = after
                .strip_prefix("reason:")
                .map(|r| r.split("//~").next().unwrap_or("").trim())
                .map(|r| r.strip_suffix("*/").unwrap_or(r).trim())
                .unwrap_or("");
            let ignored = if block || (starts_in_block && c == 0) {
                Some("a block comment is not read as an allow")
            } else if !exact {
                Some("only `// ctrlaudit: allow(` is read, with one space after the colon")
            } else {
                None
            };
            out.push(Suppression {
                line: i + 1,
                column: line[..c].chars().count() + 1,
                codes,
                has_reason: !reason.is_empty(),
                reason: reason.to_string(),
                end_column: line.chars().count() + 1,
                ignored,
            });
            break;
        }
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
    // Per comment, per code: which of its codes suppressed something.
    let mut used: Vec<Vec<bool>> = sups.iter().map(|s| vec![false; s.codes.len()]).collect();
    let mut kept = Vec::with_capacity(findings.len());
    for f in findings.drain(..) {
        let by = match &f.subject {
            Subject::Source(s) if s.file == file && f.code != crate::registry::CA002.code => {
                sups.iter().enumerate().find(|(_, sup)| {
                    let covers = s.line == sup.line || s.line == sup.line + 1;
                    covers && sup.ignored.is_none() && sup.has_reason && sup.codes.contains(&f.code)
                })
            }
            _ => None,
        };
        match by {
            Some((i, sup)) => {
                for (u, c) in used[i].iter_mut().zip(&sup.codes) {
                    *u |= *c == f.code;
                }
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
        let unused: Vec<&String> = sup
            .codes
            .iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|(c, _)| c)
            .collect();
        let message = if let Some(why) = sup.ignored {
            format!("`allow({codes})` is not read: {why}, so it suppresses nothing")
        } else if !sup.has_reason {
            format!("`allow({codes})` has no reason: it suppresses nothing until it says why")
        } else if !unknown.is_empty() {
            format!(
                "`allow({codes})` names an unknown rule{}",
                ctrlaudit_core::rules::did_you_mean(unknown[0])
            )
        } else if unused.len() == sup.codes.len() {
            format!("`allow({codes})` matches no finding on this line or the next")
        } else if let [one] = unused[..] {
            format!("`{one}` of `allow({codes})` matches no finding on this line or the next")
        } else if !unused.is_empty() {
            let list: Vec<&str> = unused.iter().map(|c| c.as_str()).collect();
            format!(
                "`{}` of `allow({codes})` match no finding on this line or the next",
                list.join("`, `")
            )
        } else {
            continue;
        };
        out.push(super::rules::about_source(
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

    #[test]
    fn rule_names_resolve_to_codes() {
        let s = parse("// ctrlaudit: allow(polling-requeue, ca202, no-such-rule) reason: x\n");
        assert_eq!(s[0].codes, vec!["CA203", "CA202", "NO-SUCH-RULE"]);
        assert_eq!(s[0].ignored, None);
    }

    #[test]
    fn look_alike_forms_are_kept_as_ignored() {
        let text = "a(); // ctrlaudit:allow(CA203) reason: x\n\
                    b(); /* ctrlaudit: allow(CA203) reason: y */\n\
                    /*\n ctrlaudit: allow(CA204) reason: z\n*/\n\
                    c(); // ctrlaudit :  allow (CA203) reason: w\n\
                    let q = '\"'; // ctrlaudit: allow(CA203) reason: read\n";
        let s = parse(text);
        let got: Vec<(usize, bool, &str)> = s
            .iter()
            .map(|s| (s.line, s.ignored.is_some(), s.reason.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, true, "x"),
                (2, true, "y"),
                (4, true, "z"),
                (6, true, "w"),
                (7, false, "read")
            ]
        );
    }

    fn finding_at(line: usize, code: &'static crate::registry::Rule) -> Finding {
        crate::rules::finding(
            code,
            Span {
                file: "f.rs".into(),
                line,
                column: 1,
                end_line: line,
                end_column: 2,
            },
            crate::finding::When::new(crate::finding::WhenKind::EveryReconcile),
            "m".into(),
            "h",
        )
    }

    #[test]
    fn each_unused_code_of_a_list_is_reported() {
        let sups = parse("// ctrlaudit: allow(CA203, CA204, CA202) reason: r\nx();\n");
        let mut findings = vec![finding_at(2, &crate::registry::CA203)];
        let ca002 = apply("f.rs", &sups, &mut findings);
        assert!(findings.is_empty());
        assert_eq!(ca002.len(), 1);
        assert!(
            ca002[0]
                .message
                .starts_with("`CA204`, `CA202` of `allow(CA203, CA204, CA202)` match no finding"),
            "{}",
            ca002[0].message
        );
        // An ignored form suppresses nothing and says why.
        let sups = parse("x(); // ctrlaudit:allow(CA203) reason: r\n");
        let mut findings = vec![finding_at(1, &crate::registry::CA203)];
        let ca002 = apply("f.rs", &sups, &mut findings);
        assert_eq!(findings.len(), 1);
        assert!(
            ca002[0].message.contains("is not read"),
            "{}",
            ca002[0].message
        );
    }
}
