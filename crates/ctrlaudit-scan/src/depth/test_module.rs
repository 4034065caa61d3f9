//! The top-level `#[cfg(test)] mod name { .. }` items of a file, recognised from the depth pass's tokens: the
//! analysis skips test code, so a caller need not parse them at all.

use super::{Measured, Tok};

/// Recognises a top-level `#[cfg(test)] mod name { .. }` from its tokens as they go by: the header (outer
/// attributes, visibility, `mod`, name) up to its `{`, then the body up to the matching `}`, then nothing else
/// in the item. Anything else (`#![..]`, `mod name;`, `#[cfg(all(test, x))]`, a second item) is not one.
#[derive(Debug, Default)]
pub(super) struct TestModule<'a> {
    header: Vec<Tok<'a>>,
    state: ModState,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ModState {
    #[default]
    Header,
    Body,
    Closed,
    No,
}

/// Tokens a test module's header can have: the attributes of real modules are short.
const MAX_HEADER: usize = 64;

impl<'a> TestModule<'a> {
    /// One token at bracket depth `depth` (before the token).
    pub(super) fn token(&mut self, depth: usize, tok: Tok<'a>) {
        self.state = match (self.state, depth, tok) {
            (ModState::Header, 0, Tok::Open(b'{')) => {
                if is_test_module_header(&self.header) {
                    ModState::Body
                } else {
                    ModState::No
                }
            }
            (ModState::Header, _, _) if self.header.len() < MAX_HEADER => {
                self.header.push(tok);
                ModState::Header
            }
            (ModState::Body, 1, Tok::Close) => ModState::Closed,
            (ModState::Body, _, _) => ModState::Body,
            // `mod x {};`: the `;` ends the item.
            (ModState::Closed, 0, Tok::Punct(";")) => ModState::Closed,
            _ => ModState::No,
        };
    }

    /// The item that holds the tokens seen so far ended as `m`'s last item.
    pub(super) fn end(&mut self, m: &mut Measured) {
        if self.state == ModState::Closed
            && let Some(item) = m.items.last()
        {
            m.test_modules.push(item.clone());
        }
        self.header.clear();
        self.state = ModState::Header;
    }
}

/// `#[..]* (pub | pub(..))? mod name` with one attribute exactly `cfg(test)`: what `is_test_code` skips.
fn is_test_module_header(h: &[Tok<'_>]) -> bool {
    let mut i = 0;
    let mut cfg_test = false;
    while h.get(i) == Some(&Tok::Punct("#")) {
        if h.get(i + 1) != Some(&Tok::Open(b'[')) {
            return false;
        }
        // The attribute's tokens up to its closing bracket (nested groups counted).
        let mut depth = 1usize;
        let mut j = i + 2;
        while depth > 0 {
            match h.get(j) {
                Some(Tok::Open(_)) => depth += 1,
                Some(Tok::Close) => depth -= 1,
                Some(_) => {}
                None => return false,
            }
            j += 1;
        }
        cfg_test |= h[i + 2..j - 1]
            == [
                Tok::Ident("cfg"),
                Tok::Open(b'('),
                Tok::Ident("test"),
                Tok::Close,
            ];
        i = j;
    }
    if h.get(i) == Some(&Tok::Ident("pub")) {
        i += 1;
        if h.get(i) == Some(&Tok::Open(b'(')) {
            while h.get(i).is_some_and(|t| *t != Tok::Close) {
                i += 1;
            }
            i += 1;
        }
    }
    cfg_test
        && h.get(i) == Some(&Tok::Ident("mod"))
        && matches!(h.get(i + 1), Some(Tok::Ident(name)) if !matches!(*name, "mod" | "pub"))
        && h.len() == i + 2
}
