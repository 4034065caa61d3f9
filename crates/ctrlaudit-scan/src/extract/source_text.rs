//! The compact text of a block taken from the source it was parsed from, instead of printing its syntax tree
//! back to tokens and tokens to a string: the same characters as [`compact`](super::lower::compact) for any
//! code, at a fraction of the cost (printing a function body was a fifth of a kube-heavy scan). Comments,
//! doc comments included, are dropped: a `/// retries on 409` is not code that handles a conflict.

/// Where in `text` the tokens of `file` (parsed from `text`) count their offsets from: `syn::parse_file` drops
/// a byte-order mark and a shebang line before it tokenizes.
pub fn parsed_from(text: &str, file: &syn::File) -> usize {
    let bom = if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    bom + file.shebang.as_ref().map_or(0, String::len)
}

/// A character that belongs to a word (identifier, keyword, number): a space between two of them is kept.
fn word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// What the scanner is inside of.
#[derive(Clone, Copy, PartialEq)]
enum In {
    Code,
    /// A `"…"` string (byte and C strings too); escapes are skipped over.
    Str,
    /// A raw string closed by `"` and this many `#`.
    Raw(usize),
    /// A `'x'` character literal.
    Char,
}

/// `src` (the source text of a parsed node) with comments removed and whitespace dropped, except one space
/// between two word characters; inside literals spaces follow the same rule, as [`compact`] does on the
/// printed tokens (`"a b"` stays, `"{} is"` becomes `"{}is"`).
///
/// [`compact`]: super::lower::compact
pub fn compact_source(src: &str) -> String {
    // Most code is ASCII: its bytes are its characters, read a run at a time.
    if src.is_ascii() {
        compact_ascii(src.as_bytes())
    } else {
        compact_chars(&src.chars().collect::<Vec<char>>(), src.len())
    }
}

fn compact_chars<C: Copy + Into<char>>(chars: &[C], len: usize) -> String {
    let ch = |j: usize| -> char { chars[j].into() };
    let mut out = String::with_capacity(len);
    let mut state = In::Code;
    // Whitespace or a comment was skipped since the last character written (code only).
    let mut gap = false;
    let mut i = 0;
    let at = |j: usize| chars.get(j).map(|c| (*c).into());
    while i < chars.len() {
        let c = ch(i);
        match state {
            In::Code => {
                if c.is_whitespace() {
                    gap = true;
                    i += 1;
                    continue;
                }
                if c == '/' && at(i + 1) == Some('/') {
                    while i < chars.len() && ch(i) != '\n' {
                        i += 1;
                    }
                    gap = true;
                    continue;
                }
                if c == '/' && at(i + 1) == Some('*') {
                    i = block_comment_end(chars, i);
                    gap = true;
                    continue;
                }
                if gap && out.chars().last().is_some_and(word) && word(c) {
                    out.push(' ');
                }
                gap = false;
                let prev_is_word = i > 0 && word(ch(i - 1));
                if c == '"' {
                    state = In::Str;
                } else if c == '\'' {
                    // A character literal (`'x'`, `'\n'`), not a lifetime or label (`'a`).
                    if at(i + 1) == Some('\\') || (at(i + 1).is_some() && at(i + 2) == Some('\'')) {
                        state = In::Char;
                    }
                } else if (c == 'r' || ((c == 'b' || c == 'c') && at(i + 1) == Some('r')))
                    && !prev_is_word
                {
                    // `r"…"`, `r#"…"#`, `br"…"`, `cr"…"`: the prefix is written as code, the body as raw.
                    let start = if c == 'r' { i + 1 } else { i + 2 };
                    let mut j = start;
                    while at(j) == Some('#') {
                        j += 1;
                    }
                    if at(j) == Some('"') {
                        out.extend(chars[i..=j].iter().map(|c| (*c).into()));
                        state = In::Raw(j - start);
                        i = j + 1;
                        continue;
                    }
                }
                out.push(c);
                i += 1;
            }
            In::Str | In::Char => {
                let close = if state == In::Str { '"' } else { '\'' };
                if c == '\\' {
                    out.push(c);
                    if let Some(n) = at(i + 1) {
                        literal_char(&mut out, chars, i + 1, n);
                    }
                    i += 2;
                    continue;
                }
                literal_char(&mut out, chars, i, c);
                if c == close {
                    state = In::Code;
                }
                i += 1;
            }
            In::Raw(hashes) => {
                literal_char(&mut out, chars, i, c);
                i += 1;
                if c == '"' && (0..hashes).all(|k| at(i + k) == Some('#')) {
                    out.extend(chars[i..i + hashes].iter().map(|c| (*c).into()));
                    i += hashes;
                    state = In::Code;
                }
            }
        }
    }
    out
}

/// Where the block comment opening at `i` (`/*`) ends: just past its `*/`, nested comments counted, or the end of
/// the text when it is not closed.
fn block_comment_end<C: Copy + Into<char>>(chars: &[C], mut i: usize) -> usize {
    let at = |j: usize| chars.get(j).map(|c| (*c).into());
    let mut depth = 0usize;
    while i < chars.len() {
        if at(i) == Some('/') && at(i + 1) == Some('*') {
            depth += 1;
            i += 2;
        } else if at(i) == Some('*') && at(i + 1) == Some('/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// [`compact_chars`] of ASCII text, the same output at a fraction of the cost: a word, or a literal's run of
/// ordinary characters, is copied at once, and the last character written is read off the output in place.
fn compact_ascii(b: &[u8]) -> String {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let at = |j: usize| b.get(j).copied();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut state = In::Code;
    let mut gap = false;
    let mut i = 0;
    // A literal's space is kept only between two word characters (see `literal_char`).
    let literal_space = |out: &Vec<u8>, next: Option<u8>| {
        out.last().is_some_and(|c| word(*c)) && next.is_some_and(word)
    };
    while i < b.len() {
        let c = b[i];
        match state {
            In::Code => {
                if c.is_ascii_whitespace() || c == 0x0b {
                    gap = true;
                    i += 1;
                    continue;
                }
                if c == b'/' && at(i + 1) == Some(b'/') {
                    i += b[i..]
                        .iter()
                        .position(|c| *c == b'\n')
                        .unwrap_or(b.len() - i);
                    gap = true;
                    continue;
                }
                if c == b'/' && at(i + 1) == Some(b'*') {
                    i = block_comment_end(b, i);
                    gap = true;
                    continue;
                }
                let is_word = word(c);
                if gap && is_word && out.last().is_some_and(|c| word(*c)) {
                    out.push(b' ');
                }
                gap = false;
                if c == b'"' {
                    state = In::Str;
                } else if c == b'\'' {
                    if at(i + 1) == Some(b'\\') || (at(i + 1).is_some() && at(i + 2) == Some(b'\''))
                    {
                        state = In::Char;
                    }
                } else if is_word {
                    let prev_is_word = i > 0 && word(b[i - 1]);
                    if !prev_is_word
                        && (c == b'r' || ((c == b'b' || c == b'c') && at(i + 1) == Some(b'r')))
                    {
                        let start = if c == b'r' { i + 1 } else { i + 2 };
                        let mut j = start;
                        while at(j) == Some(b'#') {
                            j += 1;
                        }
                        if at(j) == Some(b'"') {
                            out.extend_from_slice(&b[i..=j]);
                            state = In::Raw(j - start);
                            i = j + 1;
                            continue;
                        }
                    }
                    // The rest of the word: none of it can start a literal or a comment.
                    let end = b[i..]
                        .iter()
                        .position(|c| !word(*c))
                        .map_or(b.len(), |n| i + n);
                    out.extend_from_slice(&b[i..end]);
                    i = end;
                    continue;
                }
                out.push(c);
                i += 1;
            }
            In::Str | In::Char => {
                let close = if state == In::Str { b'"' } else { b'\'' };
                if c == b'\\' {
                    out.push(c);
                    if let Some(n) = at(i + 1)
                        && (n != b' ' || literal_space(&out, at(i + 2)))
                    {
                        out.push(n);
                    }
                    i += 2;
                    continue;
                }
                if c == b' ' {
                    if literal_space(&out, at(i + 1)) {
                        out.push(c);
                    }
                    i += 1;
                    continue;
                }
                if c == close {
                    state = In::Code;
                    out.push(c);
                    i += 1;
                    continue;
                }
                // A run of ordinary characters of the literal.
                let end = b[i..]
                    .iter()
                    .position(|x| *x == b'\\' || *x == b' ' || *x == close)
                    .map_or(b.len(), |n| i + n);
                out.extend_from_slice(&b[i..end]);
                i = end;
            }
            In::Raw(hashes) => {
                if c == b' ' {
                    if literal_space(&out, at(i + 1)) {
                        out.push(c);
                    }
                    i += 1;
                    continue;
                }
                out.push(c);
                i += 1;
                if c == b'"' && (0..hashes).all(|k| at(i + k) == Some(b'#')) {
                    out.extend_from_slice(&b[i..i + hashes]);
                    i += hashes;
                    state = In::Code;
                }
            }
        }
    }
    // ASCII in, ASCII out.
    String::from_utf8(out).unwrap_or_default()
}

/// Writes one character of a literal: a space only between two word characters, like `compact` does to the
/// printed text (which cannot tell a literal's spaces from the spaces between tokens).
fn literal_char<C: Copy + Into<char>>(out: &mut String, chars: &[C], i: usize, c: char) {
    if c == ' ' {
        let next: Option<char> = chars.get(i + 1).map(|c| (*c).into());
        if !(out.chars().last().is_some_and(word) && next.is_some_and(word)) {
            return;
        }
    }
    out.push(c);
}

/// The error signs (see [`ErrorSign`]) a block's compact text names: integer literals that are HTTP status
/// codes, string literals that are one capitalised word or a status code, `is_*` predicates called, and
/// upper-case constants. Read token by token, so `4090`, a `"Conflict of interest"` message or a comment are not
/// signs.
///
/// [`ErrorSign`]: crate::sema::ErrorSign
pub fn error_signs(compact: &str) -> Vec<crate::sema::ErrorSign> {
    // As in `compact_source`: ASCII text is read as bytes, without a copy as `char`s.
    if compact.is_ascii() {
        signs_in(compact.as_bytes())
    } else {
        signs_in(&compact.chars().collect::<Vec<char>>())
    }
}

fn signs_in<C: Copy + Into<char>>(chars: &[C]) -> Vec<crate::sema::ErrorSign> {
    use crate::sema::ErrorSign;
    let ch = |j: usize| -> char { chars[j].into() };
    let at = |j: usize| -> Option<char> { chars.get(j).map(|c| (*c).into()) };
    let text =
        |r: std::ops::Range<usize>| -> String { chars[r].iter().map(|c| (*c).into()).collect() };
    let mut out: Vec<ErrorSign> = Vec::new();
    let mut push = |s: ErrorSign| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    let status = |digits: &str| {
        digits
            .parse::<u16>()
            .ok()
            .filter(|c| (100..=599).contains(c))
    };
    let mut i = 0;
    while i < chars.len() {
        let c = ch(i);
        if c == '"' {
            let mut j = i + 1;
            let mut lit = String::new();
            while j < chars.len() && ch(j) != '"' {
                if ch(j) == '\\' {
                    j += 1;
                }
                if let Some(c) = at(j) {
                    lit.push(c);
                }
                j += 1;
            }
            if let Some(code) = status(&lit) {
                push(ErrorSign::Code(code));
            } else if lit.starts_with(|c: char| c.is_ascii_uppercase())
                && lit.chars().all(|c| c.is_ascii_alphabetic())
            {
                push(ErrorSign::Reason(lit));
            }
            i = j + 1;
        } else if c == '\'' {
            // A character literal (`'"'`, `'\''`) is skipped whole; a lifetime is not a literal.
            if at(i + 1) == Some('\\') {
                i += 4;
            } else if at(i + 2) == Some('\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (ch(i).is_alphanumeric() || ch(i) == '_') {
                i += 1;
            }
            // `409`, `409u16`, `4_09`: the digits before a suffix (counted, not copied out).
            let mut value: u32 = 0;
            for c in (start..i)
                .map(ch)
                .take_while(|c| c.is_ascii_digit() || *c == '_')
            {
                if let Some(d) = c.to_digit(10) {
                    value = value.saturating_mul(10).saturating_add(d);
                }
            }
            if (100..=599).contains(&value) {
                push(ErrorSign::Code(value as u16));
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (ch(i).is_alphanumeric() || ch(i) == '_') {
                i += 1;
            }
            // Copied out only when it is a sign.
            let word = || (start..i).map(ch);
            if word().take(3).eq("is_".chars()) && at(i) == Some('(') {
                push(ErrorSign::Predicate(text(start..i)));
            } else if i - start >= 3
                && word().all(|c| c.is_ascii_uppercase() || c == '_')
                && word().any(|c| c.is_ascii_uppercase())
            {
                push(ErrorSign::Constant(text(start..i)));
            }
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::lower::compact;
    use super::*;
    use syn::visit::Visit;

    #[test]
    fn error_signs_are_read_token_by_token() {
        use crate::sema::{ErrorSign, tells_conflict};
        let signs = error_signs(&compact_source(
            r#"{ match e { Err(kube::Error::Api(ae)) if ae.code == 409 => {} _ => {} } }"#,
        ));
        assert_eq!(signs, [ErrorSign::Code(409)]);
        for conflict in [
            r#"{ if ae.reason == "Conflict" { retry() } }"#,
            r#"{ if e.is_conflict() { retry() } }"#,
            r#"{ if status == StatusCode::CONFLICT { retry() } }"#,
            r#"{ if code == 409u16 { retry() } }"#,
        ] {
            assert!(
                tells_conflict(&error_signs(&compact_source(conflict))),
                "{conflict}"
            );
        }
        for not in [
            r#"{ let n = 4090; let m = "Conflict of interest"; }"#,
            "{ // on 409, give up\n let c = '\"'; let s = \"x\"; }",
            r#"{ if e.is_not_found() { create() } }"#,
        ] {
            assert!(!tells_conflict(&error_signs(&compact_source(not))), "{not}");
        }
    }

    #[test]
    fn drops_comments_and_spaces_like_printed_tokens() {
        let src =
            "{ let a = b . c ( 1 ) ; // 409 here\n /* and /* nested */ */ if x { return y } }";
        assert_eq!(compact_source(src), "{let a=b.c(1);if x{return y}}");
    }

    #[test]
    fn literals_lifetimes_and_raw_strings() {
        let src = r####"{ let s: &'static str = r#"a "b" c"#; let q = '"'; let t = "x \" // y"; f::<'a>(br"z") }"####;
        let block: syn::Block = syn::parse_str(src).expect("block");
        assert_eq!(compact_source(src), compact(&block));
    }

    /// Every block of every Rust fixture: the source text compacts to what the printed tokens compact to,
    /// except where a doc comment (printed as an attribute) is inside.
    #[test]
    fn same_as_printed_tokens_on_every_fixture_block() {
        struct Blocks<'s>(&'s str, usize);
        impl<'ast> Visit<'ast> for Blocks<'_> {
            fn visit_block(&mut self, b: &'ast syn::Block) {
                let r = b.brace_token.span.join().byte_range();
                let text = &self.0[r];
                if !text.contains("///") && !text.contains("//!") && !text.contains("/**") {
                    assert_eq!(compact_source(text), compact(b), "block:\n{text}");
                    self.1 += 1;
                }
                syn::visit::visit_block(self, b);
            }
        }
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/scan");
        let mut checked = 0;
        for entry in walk(std::path::Path::new(root)) {
            let text = std::fs::read_to_string(&entry).expect("fixture");
            let Ok(file) = syn::parse_file(&text) else {
                continue;
            };
            let mut v = Blocks(&text[parsed_from(&text, &file)..], 0);
            v.visit_file(&file);
            checked += v.1;
        }
        assert!(checked > 500, "only {checked} blocks compared");
    }

    /// The ASCII fast path writes what the character-by-character one writes, on every fixture's text and on
    /// every cut of it (a cut can end inside a literal or a comment).
    #[test]
    fn ascii_path_is_the_char_path() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/scan");
        let mut texts = vec![
            r####"{ let s = r#"a "b" c"#; let q = '"'; let t = "x \" // y"; f::<'a>(br"z", c"w", b'\'', ' ') }"####
                .to_string(),
            "x /* a /* b */ c */ y // z\n\t\x0b\x0c w \"  a  b \\  c\" r\"  q \"".to_string(),
        ];
        texts.extend(
            walk(std::path::Path::new(root))
                .iter()
                .filter_map(|p| std::fs::read_to_string(p).ok())
                .filter(|t| t.is_ascii()),
        );
        for text in &texts {
            let bytes = text.as_bytes();
            assert_eq!(
                compact_ascii(bytes),
                compact_chars(bytes, bytes.len()),
                "{text}"
            );
            for cut in (0..bytes.len()).step_by(97) {
                let part = &bytes[cut..];
                assert_eq!(compact_ascii(part), compact_chars(part, part.len()));
            }
        }
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).expect("fixtures dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
        out
    }
}
