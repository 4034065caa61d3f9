//! Completion for kubectl's plugin completion (kubectl ≥ 1.26): `kubectl ctrlaudit <TAB>` runs
//! `kubectl_complete-ctrlaudit` from PATH with the words typed after `ctrlaudit`, the last one the word being
//! completed (empty after a space), and reads candidates one per line (`value<TAB>description`) and a last line
//! `:N`, cobra's shell directive. The binary answers when it runs under that name (a link to it, made by
//! install.sh) or as `kubectl-ctrlaudit __complete WORDS…`. The answers are derived from the clap command, so
//! they cannot drift from the flags.

use clap::builder::ValueHint;
use clap::{Arg, Command};

/// cobra's `ShellCompDirectiveDefault`: after the candidates, the shell may complete file names.
const FILES: u8 = 0;
/// cobra's `ShellCompDirectiveNoFileComp`: the candidates are all there is.
const NO_FILES: u8 = 4;

/// The name kubectl looks up on PATH for this plugin's completions.
pub const EXECUTABLE: &str = "kubectl_complete-ctrlaudit";

/// The candidates and directive for `words` (the words after `ctrlaudit`; the last is the one being
/// completed), in kubectl's plugin completion format.
pub fn answer(root: &Command, words: &[String]) -> String {
    let mut root = root.clone();
    root.build();
    let (current, done) = match words.split_last() {
        Some((last, rest)) => (last.as_str(), rest),
        None => ("", &[][..]),
    };
    let mut cmd = &root;
    let mut pending: Option<&Arg> = None;
    let mut positionals = 0usize;
    for w in done {
        if pending.take().is_some() {
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            if !long.contains('=') {
                pending = flag(cmd, |a| a.get_long() == Some(long)).filter(|a| takes_value(a));
            }
        } else if let Some(short) = w.strip_prefix('-').filter(|s| !s.is_empty()) {
            // `-n ns` takes the next word; `-nns` and bundles of switches do not.
            let mut chars = short.chars();
            if let (Some(c), None) = (chars.next(), chars.next()) {
                pending = flag(cmd, |a| a.get_short() == Some(c)).filter(|a| takes_value(a));
            }
        } else if let Some(sc) = cmd.find_subcommand(w) {
            cmd = sc;
            positionals = 0;
        } else {
            positionals += 1;
        }
    }
    let mut out = Vec::new();
    let directive = if let Some(arg) = pending {
        values(arg, current, "", &mut out)
    } else if let Some((name, value)) = current.strip_prefix("--").and_then(|l| l.split_once('=')) {
        match flag(cmd, |a| a.get_long() == Some(name)) {
            Some(arg) => values(arg, value, &format!("--{name}="), &mut out),
            None => NO_FILES,
        }
    } else if current.starts_with('-') {
        for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let help = one_line(a.get_help().map(ToString::to_string));
            if let Some(l) = a.get_long() {
                push(&mut out, &format!("--{l}"), &help, current);
            }
            if current == "-"
                && let Some(s) = a.get_short()
            {
                push(&mut out, &format!("-{s}"), &help, current);
            }
        }
        NO_FILES
    } else {
        for sc in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let about = one_line(sc.get_about().map(ToString::to_string));
            push(&mut out, sc.get_name(), &about, current);
        }
        match cmd.get_positionals().nth(positionals) {
            Some(arg) => values(arg, current, "", &mut out),
            None => NO_FILES,
        }
    };
    out.push(format!(":{directive}"));
    let mut text = out.join("\n");
    text.push('\n');
    text
}

fn flag(cmd: &Command, is: impl Fn(&Arg) -> bool) -> Option<&Arg> {
    cmd.get_arguments().find(|a| !a.is_positional() && is(a))
}

fn takes_value(a: &Arg) -> bool {
    a.get_num_args().is_none_or(|n| n.takes_values()) && a.get_action().takes_values()
}

/// An argument's values: its possible values, the rules for a rule argument, else the shell's file names when
/// it names a path.
fn values(arg: &Arg, current: &str, prefix: &str, out: &mut Vec<String>) -> u8 {
    let possible = arg.get_possible_values();
    if !possible.is_empty() {
        for v in possible.iter().filter(|v| !v.is_hide_set()) {
            let help = one_line(v.get_help().map(ToString::to_string));
            push(
                out,
                &format!("{prefix}{}", v.get_name()),
                &help,
                &format!("{prefix}{current}"),
            );
        }
        return NO_FILES;
    }
    if arg
        .get_value_names()
        .is_some_and(|n| n.iter().any(|n| n == "CODE"))
    {
        for r in ctrlaudit_core::rules::RULES {
            push(
                out,
                &format!("{prefix}{}", r.code),
                r.name,
                &format!("{prefix}{current}"),
            );
        }
        return NO_FILES;
    }
    let path_hint = matches!(
        arg.get_value_hint(),
        ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
    );
    if path_hint || names_a_path(arg) {
        FILES
    } else {
        NO_FILES
    }
}

/// An argument whose value is a file or directory (`PATHS`, `--kubeconfig`, `--config`, `--baseline FILE`,
/// `--output-file`): clap infers no hint from `PathBuf`, so the value's name decides.
fn names_a_path(arg: &Arg) -> bool {
    arg.get_value_names().is_some_and(|names| {
        names.iter().any(|n| {
            ["FILE", "PATH", "DIR", "KUBECONFIG", "CONFIG"]
                .iter()
                .any(|p| n.contains(p))
        })
    })
}

fn push(out: &mut Vec<String>, candidate: &str, help: &str, current: &str) {
    if candidate.len() >= current.len()
        && candidate.is_char_boundary(current.len())
        && candidate[..current.len()].eq_ignore_ascii_case(current)
    {
        out.push(if help.is_empty() {
            candidate.to_string()
        } else {
            format!("{candidate}\t{help}")
        });
    }
}

/// The first sentence of a help text, on one line (shells show one line per candidate).
fn one_line(help: Option<String>) -> String {
    let help = help.unwrap_or_default();
    let first = help.lines().next().unwrap_or_default();
    first
        .split(". ")
        .next()
        .unwrap_or(first)
        .trim_end_matches('.')
        .to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::CommandFactory;

    fn ask(words: &[&str]) -> (Vec<String>, String) {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let text = answer(&crate::cli::Cli::command(), &words);
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let directive = lines.pop().unwrap();
        let names = lines
            .iter()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect();
        (names, directive)
    }

    #[test]
    fn subcommands_then_their_flags_then_flag_values() {
        let (names, d) = ask(&[""]);
        assert!(
            names.contains(&"scan".into()) && names.contains(&"live".into()),
            "{names:?}"
        );
        assert!(!names.contains(&"help".into()) || names.len() > 2);
        assert_eq!(d, ":4");
        let (names, _) = ask(&["sc"]);
        assert_eq!(names, vec!["scan"]);
        let (names, d) = ask(&["scan", "--fail"]);
        assert_eq!(names, vec!["--fail-on"]);
        assert_eq!(d, ":4");
        let (names, d) = ask(&["scan", "-o", ""]);
        assert!(
            names.contains(&"sarif".into()) && names.contains(&"json".into()),
            "{names:?}"
        );
        assert_eq!(d, ":4");
        let (names, _) = ask(&["scan", "--output=j"]);
        assert_eq!(names, vec!["--output=json", "--output=junit"]);
        // Global flags complete under a subcommand too.
        let (names, _) = ask(&["live", "--kube"]);
        assert_eq!(names, vec!["--kubeconfig"]);
    }

    #[test]
    fn paths_are_left_to_the_shell_and_rules_are_listed() {
        let (names, d) = ask(&["scan", ""]);
        assert!(names.is_empty(), "{names:?}");
        assert_eq!(d, ":0", "scan's PATHS are file names");
        let (_, d) = ask(&["scan", "--kubeconfig", ""]);
        assert_eq!(d, ":0");
        let (names, d) = ask(&["rules", "CA20"]);
        assert!(
            names.iter().all(|n| n.starts_with("CA20")) && names.len() >= 6,
            "{names:?}"
        );
        assert_eq!(d, ":4");
        let (names, _) = ask(&["scan", "--deny", "CA30"]);
        assert!(names.contains(&"CA301".into()), "{names:?}");
        let (names, _) = ask(&["completions", ""]);
        assert!(
            names.contains(&"bash".into()) && names.contains(&"zsh".into()),
            "{names:?}"
        );
    }
}
