//! How deep syn (and every recursive pass after it, down to `Drop`) would recurse on a file, measured on its
//! tokens before anything is parsed, in one linear pass that never recurses itself.
//!
//! syn recurses once per level of the syntax tree, and a tree nests without any bracket too: generics
//! (`Vec<Vec<..>>`), closures (`|a| |a| ..`), unary operators (`!!..`, `&&..`), casts (`x as T as T ..`), field,
//! method and `?` chains, binary operator chains (`a + a + ..`). So the budget counts, per bracket level, the
//! operator-like tokens of the expression or type being built there (reset where a sibling starts: `;`, `,`,
//! `=>`, a new statement after a block), and sums them over the open brackets. Only real tokens count: brackets
//! in comments, strings and char literals are skipped by a small lexer, so text cannot make a file unparsable.
//!
//! The pass also cuts the file into its top-level items, so that a caller can set aside the one item that is
//! over the budget (or that syn rejects) and still analyse the rest of the file, and it recognises the top-level
//! `#[cfg(test)] mod name { .. }` items, which the analysis skips anyway, and the doc comments, from which no fact
//! comes: a caller need not parse them at all (together about two fifths of a published operator's source).

use std::ops::Range;

/// Brackets nesting deeper than this are not parsed (syn recurses several frames per bracket).
pub const MAX_BRACKETS: usize = 256;
/// Operator-like tokens along one path of nesting beyond this are not parsed. Real code stays far below (see
/// `tests::real_code_stays_under_the_budget`); the stack of a scan thread holds many times more.
pub const MAX_CHAIN: usize = 1_500;

/// Where a file goes over the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// Byte offset of the token that went over.
    pub at: usize,
    /// The top-level item it is in (byte range), blanked by [`blank`] to parse the rest.
    pub item: Range<usize>,
    pub what: Overflow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Brackets, `(` `[` `{`, nested this deep.
    Brackets(usize),
    /// Operators, generics, closures, casts, chains nested about this deep.
    Chain(usize),
}

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Overflow::Brackets(n) => write!(f, "brackets nest {n} deep (limit {MAX_BRACKETS})"),
            Overflow::Chain(n) => write!(
                f,
                "an expression or type nests about {n} levels deep without brackets (operators, generics, \
                 closures, casts or a call chain; limit {MAX_CHAIN})"
            ),
        }
    }
}

/// The outcome of [`measure`]: the items over the budget (at most one entry per item) and every top-level item.
#[derive(Debug, Default)]
pub struct Measured {
    pub too_deep: Vec<TooDeep>,
    pub items: Vec<Range<usize>>,
    /// The top-level items that are `#[cfg(test)] mod name { .. }` (outer attributes and visibility allowed),
    /// each an entry of `items`.
    pub test_modules: Vec<Range<usize>>,
    /// Doc comments (`///`, `//!`, `/** */`, `/*! */`): syn turns each line into a `#[doc = ".."]` attribute, a
    /// fifth of a published operator's bytes, and no fact comes from one.
    pub doc_comments: Vec<Range<usize>>,
    pub max_brackets: usize,
    pub max_chain: usize,
}

impl Measured {
    /// The top-level item that holds byte `at`.
    pub fn item_at(&self, at: usize) -> Option<Range<usize>> {
        self.items.iter().find(|r| r.contains(&at)).cloned()
    }
}

/// One bracket level being read.
#[derive(Debug, Default, Clone, Copy)]
struct Level {
    /// Operator-like tokens since the last sibling boundary at this level.
    run: usize,
    /// `<` not closed yet: while some are open, a `,` separates generic arguments, not siblings.
    angles: usize,
    /// An odd count of `|`: a closure's parameters are open, a `,` separates them.
    pipe_open: bool,
    /// The previous token at this level closed a `{..}` block: what follows may start a new statement.
    after_block: bool,
    /// The sum of the runs of the enclosing levels.
    base: usize,
}

impl Level {
    fn reset(&mut self) {
        self.run = 0;
        self.angles = 0;
        self.pipe_open = false;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Open(u8),
    Close,
    Punct(&'a str),
    Ident(&'a str),
    Literal,
}

/// Measures `text`. Linear in its length, constant stack.
pub fn measure(text: &str) -> Measured {
    let mut m = Measured::default();
    let mut levels: Vec<Level> = vec![Level::default()];
    let mut item_start = 0usize;
    // Where the current top-level item went over, so that each item is reported once.
    let mut poisoned: Option<(usize, Overflow)> = None;
    let mut test_module = TestModule::default();
    let mut lexer = Lexer::new(text);
    while let Some((start, end, tok)) = lexer.next_token() {
        let depth = levels.len() - 1;
        let top = levels.len() - 1;
        // A block closed at this level: unless the expression goes on (`{..}.await`, `} else {`, `} + 1`), the
        // token after it starts a sibling (the next statement or item).
        if levels[top].after_block {
            levels[top].after_block = false;
            let continues = match tok {
                Tok::Punct(p) => !matches!(p, "#" | ";" | "," | "=>"),
                Tok::Ident(i) => matches!(i, "as" | "else"),
                _ => false,
            };
            if !continues {
                levels[top].reset();
                if depth == 0 && !matches!(tok, Tok::Punct(";")) {
                    end_item(&mut m, &mut item_start, start, &mut poisoned);
                    test_module.end(&mut m);
                }
            }
        }
        test_module.token(depth, tok);
        let mut weight = 0usize;
        match tok {
            Tok::Open(b) => {
                if b == b'{' {
                    // `if a < b {`: a `<` still open before a block was a comparison.
                    levels[top].angles = 0;
                    levels[top].pipe_open = false;
                }
                let base = levels[top].base + levels[top].run;
                levels.push(Level {
                    base,
                    ..Level::default()
                });
                let brackets = levels.len() - 1;
                m.max_brackets = m.max_brackets.max(brackets);
                if brackets > MAX_BRACKETS && poisoned.is_none() {
                    poisoned = Some((start, Overflow::Brackets(brackets)));
                }
                continue;
            }
            Tok::Close => {
                if levels.len() > 1 {
                    levels.pop();
                }
                let top = levels.len() - 1;
                // Only a `}` can end a statement, but any group may be followed by `.x`: the flag is cleared by
                // a continuing token either way, so it is set for every group and judged on the next token.
                // After a block, the next token decides whether a sibling starts (and, at the top, an item).
                levels[top].after_block = lexer.last_close == b'}';
                continue;
            }
            Tok::Punct(";") => {
                levels[top].reset();
                if depth == 0 {
                    end_item(&mut m, &mut item_start, end, &mut poisoned);
                    test_module.end(&mut m);
                }
                continue;
            }
            Tok::Punct("=>") => {
                levels[top].reset();
                continue;
            }
            Tok::Punct(",") => {
                if levels[top].angles == 0 && !levels[top].pipe_open {
                    levels[top].reset();
                }
                continue;
            }
            Tok::Punct("<") => {
                levels[top].angles += 1;
                weight = 1;
            }
            Tok::Punct("<<") => {
                levels[top].angles += 2;
                weight = 2;
            }
            Tok::Punct(">") => {
                levels[top].angles = levels[top].angles.saturating_sub(1);
            }
            Tok::Punct(">>") => {
                levels[top].angles = levels[top].angles.saturating_sub(2);
            }
            Tok::Punct("|") => {
                levels[top].pipe_open = !levels[top].pipe_open;
                weight = 1;
            }
            // `&&x` is two references.
            Tok::Punct("&&") => weight = 2,
            Tok::Punct("::" | ":" | "#" | "$" | "'") => {}
            Tok::Punct(_) => weight = 1,
            Tok::Ident(
                "as" | "else" | "return" | "break" | "yield" | "box" | "move" | "async" | "dyn"
                | "impl",
            ) => weight = 1,
            Tok::Ident(_) | Tok::Literal => {}
        }
        if weight > 0 {
            let l = &mut levels[top];
            l.run += weight;
            let chain = l.base + l.run;
            m.max_chain = m.max_chain.max(chain);
            if chain > MAX_CHAIN && poisoned.is_none() {
                poisoned = Some((start, Overflow::Chain(chain)));
            }
        }
    }
    end_item(&mut m, &mut item_start, text.len(), &mut poisoned);
    test_module.end(&mut m);
    m.doc_comments = lexer.docs;
    m
}

/// Closes the top-level item that ends at `end`, recording it as too deep if it went over.
fn end_item(
    m: &mut Measured,
    item_start: &mut usize,
    end: usize,
    poisoned: &mut Option<(usize, Overflow)>,
) {
    if end <= *item_start {
        return;
    }
    let item = *item_start..end;
    if let Some((at, what)) = poisoned.take() {
        m.too_deep.push(TooDeep {
            at,
            item: item.clone(),
            what,
        });
    }
    m.items.push(item);
    *item_start = end;
}

/// `text` with the characters of `ranges` replaced by spaces, one per character, newlines kept: the rest keeps
/// its lines and columns (syn counts columns in characters), and syn sees nothing where the blanked text was.
/// Ranges may overlap (a doc comment inside a test module) and come in any order.
pub fn blank(text: &str, ranges: &[Range<usize>]) -> String {
    let mut sorted: Vec<Range<usize>> = ranges
        .iter()
        .map(|r| r.start.min(text.len())..r.end.min(text.len()))
        .filter(|r| !r.is_empty())
        .collect();
    sorted.sort_unstable_by_key(|r| r.start);
    let mut out = String::with_capacity(text.len());
    let mut done = 0usize;
    for r in sorted {
        let start = r.start.max(done);
        if r.end <= start {
            continue;
        }
        // Ranges are token boundaries, which never split a character; `get` keeps this total anyway.
        let (Some(kept), Some(gone)) = (text.get(done..start), text.get(start..r.end)) else {
            continue;
        };
        out.push_str(kept);
        out.extend(gone.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
        done = r.end;
    }
    out.push_str(text.get(done..).unwrap_or_default());
    out
}

/// The byte offset of a 1-based line and 0-based character column (as syn reports them).
pub fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut start = 0usize;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return start + l.char_indices().nth(column).map_or(l.len(), |(o, _)| o);
        }
        start += l.len();
    }
    text.len()
}

/// The 1-based line of a byte offset.
pub fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Rust's lexical grammar, as far as telling tokens from comments and literals goes.
struct Lexer<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
    last_close: u8,
    prev_dot: bool,
    /// The doc comments skipped so far.
    docs: Vec<Range<usize>>,
}

/// Multi-character punctuation, longest first.
const PUNCT: &[&str] = &[
    "<<=", ">>=", "...", "..=", "::", "->", "=>", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=",
    "*=", "/=", "%=", "^=", "&=", "|=", "<<", ">>", "..",
];

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Self {
        let b = text.as_bytes();
        let mut i = 0;
        // A shebang line (not an inner attribute `#![..]`).
        if b.starts_with(b"#!") && !text[2..].trim_start().starts_with('[') {
            i = text.find('\n').unwrap_or(text.len());
        }
        Self {
            text,
            b,
            i,
            last_close: 0,
            prev_dot: false,
            docs: Vec::new(),
        }
    }

    fn peek(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }

    /// The next token with its byte range; comments and whitespace are skipped.
    fn next_token(&mut self) -> Option<(usize, usize, Tok<'a>)> {
        loop {
            let c = *self.b.get(self.i)?;
            if c.is_ascii_whitespace() {
                self.i += 1;
            } else if c == b'/' && self.peek(1) == b'/' {
                let start = self.i;
                self.i = memchr_newline(self.b, self.i);
                // `///x` and `//!x` are doc comments, `////x` is not.
                if self.b.get(start + 2) == Some(&b'!')
                    || (self.b.get(start + 2) == Some(&b'/')
                        && self.b.get(start + 3) != Some(&b'/'))
                {
                    self.docs.push(start..self.i);
                }
            } else if c == b'/' && self.peek(1) == b'*' {
                let start = self.i;
                self.skip_block_comment();
                // `/**x*/` and `/*!x*/` are doc comments, `/***x*/` and `/**/` are not.
                let (third, fourth) = (self.b.get(start + 2), self.b.get(start + 3));
                if third == Some(&b'!')
                    || (third == Some(&b'*') && !matches!(fourth, Some(b'*' | b'/')))
                {
                    self.docs.push(start..self.i);
                }
            } else {
                break;
            }
        }
        let start = self.i;
        let c = self.b[start];
        let tok = match c {
            b'(' | b'[' | b'{' => {
                self.i += 1;
                Tok::Open(c)
            }
            b')' | b']' | b'}' => {
                self.i += 1;
                self.last_close = match c {
                    b')' => b')',
                    b']' => b']',
                    _ => b'}',
                };
                Tok::Close
            }
            b'"' => {
                self.skip_quoted(b'"');
                Tok::Literal
            }
            b'\'' => self.quote_or_lifetime(),
            b'0'..=b'9' => {
                self.i += 1;
                while self.i < self.b.len() {
                    let d = self.b[self.i];
                    let fraction = d == b'.' && !self.prev_dot && self.peek(1).is_ascii_digit();
                    let exponent_sign = (d == b'+' || d == b'-')
                        && matches!(self.b[self.i - 1], b'e' | b'E')
                        && !self.text[start..self.i].starts_with("0x");
                    if is_ident_byte(d) || fraction || exponent_sign {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                Tok::Literal
            }
            c if is_ident_byte(c) => self.ident_or_prefixed_literal(),
            _ => {
                let rest = &self.text[start..];
                // Every entry of PUNCT has one of these second characters: most punctuation is one character.
                let multi = matches!(self.peek(1), b'<' | b'>' | b'=' | b'.' | b':' | b'&' | b'|');
                let len = multi
                    .then(|| PUNCT.iter().find(|p| rest.starts_with(*p)))
                    .flatten()
                    .map_or_else(
                        || rest.chars().next().map_or(1, char::len_utf8),
                        |p| p.len(),
                    );
                self.i += len;
                Tok::Punct(&self.text[start..start + len])
            }
        };
        self.prev_dot = tok == Tok::Punct(".");
        Some((start, self.i, tok))
    }

    fn skip_block_comment(&mut self) {
        let mut depth = 0usize;
        while self.i < self.b.len() {
            if self.b[self.i] == b'/' && self.peek(1) == b'*' {
                depth += 1;
                self.i += 2;
            } else if self.b[self.i] == b'*' && self.peek(1) == b'/' {
                depth -= 1;
                self.i += 2;
                if depth == 0 {
                    return;
                }
            } else {
                self.i += 1;
            }
        }
    }

    /// A string or char body from the opening quote at `self.i`, escapes honoured, to its closing quote.
    fn skip_quoted(&mut self, quote: u8) {
        self.i += 1;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                c if c == quote => {
                    self.i += 1;
                    return;
                }
                _ => self.i += 1,
            }
        }
        self.i = self.b.len();
    }

    /// `'a'`, `'\n'`, `'\u{..}'` are literals; `'a`, `'static`, `'label` are lifetimes.
    fn quote_or_lifetime(&mut self) -> Tok<'a> {
        let start = self.i;
        if self.peek(1) == b'\\' {
            self.skip_quoted(b'\'');
            return Tok::Literal;
        }
        let Some(ch) = self.text[start + 1..].chars().next() else {
            self.i = self.b.len();
            return Tok::Punct("'");
        };
        let after = start + 1 + ch.len_utf8();
        if self.b.get(after) == Some(&b'\'') {
            self.i = after + 1;
            return Tok::Literal;
        }
        self.i = start + 1;
        while self.i < self.b.len() && is_ident_byte(self.b[self.i]) {
            self.i += 1;
        }
        Tok::Punct("'")
    }

    /// An identifier, or a literal with a prefix: `b"..."`, `b'x'`, `c"..."`, raw `r#"..."#`, `br"..."`.
    fn ident_or_prefixed_literal(&mut self) -> Tok<'a> {
        let start = self.i;
        while self.i < self.b.len() && is_ident_byte(self.b[self.i]) {
            self.i += 1;
        }
        let word = &self.text[start..self.i];
        let next = self.peek(0);
        match (word, next) {
            ("b" | "c", b'"') => {
                self.skip_quoted(b'"');
                Tok::Literal
            }
            ("b", b'\'') => {
                self.skip_quoted(b'\'');
                Tok::Literal
            }
            ("r" | "br" | "cr", b'"' | b'#') => {
                let hashes = self.b[self.i..].iter().take_while(|c| **c == b'#').count();
                if self.b.get(self.i + hashes) != Some(&b'"') {
                    // `r#ident`: a raw identifier.
                    self.i += hashes;
                    while self.i < self.b.len() && is_ident_byte(self.b[self.i]) {
                        self.i += 1;
                    }
                    return Tok::Ident(&self.text[start..self.i]);
                }
                self.i += hashes + 1;
                let closing: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                match find(&self.b[self.i..], &closing) {
                    Some(k) => self.i += k + closing.len(),
                    None => self.i = self.b.len(),
                }
                Tok::Literal
            }
            _ => Tok::Ident(word),
        }
    }
}

fn memchr_newline(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|c| *c == b'\n')
        .map_or(b.len(), |k| from + k)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

mod test_module;
use test_module::TestModule;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod real_code;
