//! The depth pass on every kind of nesting, on chains, and on what must not count (comments, strings).

use super::*;

fn chain(text: &str) -> usize {
    measure(text).max_chain
}

#[test]
fn brackets_in_comments_strings_and_chars_do_not_count() {
    let opens = "(".repeat(300);
    let text = format!(
        "// {opens}\n/* {opens} /* nested {opens} */ */\nconst A: &str = \"{opens}\";\nconst B: &str = r#\"{opens}\"#;\nconst C: char = '(';\nconst D: &[u8] = b\"{opens}\";\nfn f<'a>(x: &'a str) {{}}\n"
    );
    let m = measure(&text);
    assert!(m.max_brackets <= 2, "{m:?}");
    assert!(m.too_deep.is_empty());
    assert_eq!(m.items.len(), 5, "{:?}", m.items);
}

#[test]
fn real_brackets_over_the_limit_poison_only_their_item() {
    let deep = format!("fn deep() {{ {}{} }}", "(".repeat(300), ")".repeat(300));
    let text = format!("fn a() {{ x.y(); }}\n{deep}\nfn b() {{}}\n");
    let m = measure(&text);
    assert_eq!(m.too_deep.len(), 1);
    let t = &m.too_deep[0];
    assert!(matches!(t.what, Overflow::Brackets(n) if n > MAX_BRACKETS));
    assert!(text[t.item.clone()].contains("fn deep"));
    assert!(!text[t.item.clone()].contains("fn a"));
    assert!(!text[t.item.clone()].contains("fn b"));
}

#[test]
fn every_kind_of_nesting_without_brackets_counts() {
    let n = 2_000;
    let shapes = [
        format!("type T = {}u8{};", "Vec<".repeat(n), ">".repeat(n)),
        format!("type T = {}u8{};", "HashMap<u8, ".repeat(n), ">".repeat(n)),
        format!("fn f() {{ let c = {}0; }}", "|a| ".repeat(n)),
        format!("fn f() {{ let c = {}0; }}", "|a, b| ".repeat(n)),
        format!("fn f() {{ let c = {}0; }}", "move || ".repeat(n)),
        format!("type T = {}u8;", "&".repeat(n)),
        format!("fn f() {{ let c = {}x; }}", "&&".repeat(n / 2)),
        format!("fn f() {{ let c = {}x; }}", "!".repeat(n)),
        format!("fn f() {{ let c = {}x; }}", "-".repeat(n)),
        format!("fn f() {{ let c = x{}; }}", " as u8".repeat(n)),
        format!("fn f() {{ let c = x{}; }}", ".a".repeat(n)),
        format!("fn f() {{ let c = x{}; }}", ".a()".repeat(n)),
        format!("fn f() {{ let c = x{}; }}", " + a".repeat(n)),
        format!("fn f() {{ let c = x{}; }}", "?".repeat(n)),
        format!("fn f() {{ let c = x{}; }}", ".await".repeat(n)),
        format!("fn f() {{ if a {{}}{} }}", " else if a {}".repeat(n)),
        format!("type T = {}u8;", "fn() -> ".repeat(n)),
        format!("type T = {}u8;", "*const ".repeat(n)),
        format!("fn f() {{ return {}x; }}", "return ".repeat(n)),
    ];
    for s in &shapes {
        let m = measure(s);
        assert!(
            m.max_chain > MAX_CHAIN && m.too_deep.len() == 1,
            "{} chain {}",
            &s[..60],
            m.max_chain
        );
    }
}

#[test]
fn siblings_do_not_add_up() {
    let many_items = "fn a() -> Result<Vec<u8>, E> { x.y()?.z().await?; Ok(()) }\n".repeat(5_000);
    assert!(chain(&many_items) < 20, "{}", chain(&many_items));
    let many_args = format!("fn f() {{ g({}); }}", "a + b, ".repeat(5_000));
    assert!(chain(&many_args) < 10);
    let many_stmts = "if a < b { c(); } if c > d { e(); }\n".repeat(3_000);
    let many_stmts = format!("fn f() {{ {many_stmts} }}");
    assert!(chain(&many_stmts) < 10, "{}", chain(&many_stmts));
    let arms = format!(
        "fn f() {{ match x {{ {} }} }}",
        "A | B => a.b().c(),\n".repeat(5_000)
    );
    assert!(chain(&arms) < 10);
    let table = format!("const T: [u8; 5000] = [{}];", "1, ".repeat(5_000));
    assert!(chain(&table) < 10);
}

#[test]
fn lexes_the_corners() {
    // A lifetime is no char literal, a char literal holding a quote or a bracket is one token.
    let m = measure("fn f<'a>(x: &'a u8) -> char { let c = '\\''; let d = '{'; '}' }\nfn g() {}");
    assert_eq!(m.items.len(), 2, "{m:?}");
    assert_eq!(m.max_brackets, 1);
    // Raw strings with hashes, raw identifiers, byte chars, nested block comments, shebang.
    let m = measure(
        "#!/usr/bin/env rust-script\nconst A: &str = r##\"\"# ( \"##;\nfn r#match() { let b = b'('; /* ( /* ( */ ( */ }\n",
    );
    assert_eq!(m.items.len(), 2, "{m:?}");
    assert_eq!(m.max_brackets, 1);
    // Unterminated literals and comments end the file, never the lexer.
    for t in ["\"((((", "/* (((", "r#\"((", "'", "b'", "r###", "0x", "1e+"] {
        let _ = measure(t);
    }
}

#[test]
fn blank_keeps_lines_and_columns() {
    let text = "fn a() {}\nfn b() {\n  x\n}\nfn c() {}\n";
    let m = measure(text);
    let b = m
        .item_at(text.find("fn b").expect("fn b"))
        .expect("its item");
    let out = blank(text, &[b]);
    assert_eq!(out.lines().count(), text.lines().count());
    assert!(out.contains("fn a() {}") && out.contains("fn c() {}") && !out.contains("fn b"));
    assert_eq!(offset_of(text, 5, 3), text.find("c()").expect("c"));
    assert_eq!(line_of(text, text.find("fn c").expect("fn c")), 5);
}

#[test]
fn test_modules_are_recognised_and_nothing_else() {
    let text = "use a::b;\n#[cfg(test)]\n/// doc\npub(crate) mod tests { fn f() { let s = \"}\"; } }\nfn real() {}\n#[cfg(test)] mod t2 {}\n";
    let m = measure(text);
    let found: Vec<&str> = m
        .test_modules
        .iter()
        .map(|r| text[r.clone()].trim())
        .collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("#[cfg(test)]") && found[0].ends_with("} }"),
        "{found:?}"
    );
    assert!(!found[0].contains("fn real"), "{found:?}");
    assert_eq!(found[1], "#[cfg(test)] mod t2 {}");
    for not in [
        "#[cfg(not(test))] mod x { fn a() {} }\n",
        "#[cfg(all(test, unix))] mod x { fn a() {} }\n",
        "#[cfg(test)] mod x;\n",
        "#[cfg(test)] fn x() {}\n",
        "#![cfg(test)]\nmod x { fn a() {} }\n",
        "#[cfg(test)] mod x { fn a() {} }.await;\n",
        "mod x { #[cfg(test)] mod y {} }\n",
    ] {
        assert!(measure(not).test_modules.is_empty(), "{not}");
    }
}

#[test]
fn doc_comments_are_recognised_and_nothing_else() {
    let text = "//! crate doc\n/// item doc\n/** block doc */\nfn f() {\n    /*! inner block */\n    //// not doc\n    /***/ /**/ /*** not doc */\n    // plain\n    let s = \"/// in a string\";\n}\n///\n";
    let m = measure(text);
    let found: Vec<&str> = m.doc_comments.iter().map(|r| &text[r.clone()]).collect();
    assert_eq!(
        found,
        [
            "//! crate doc",
            "/// item doc",
            "/** block doc */",
            "/*! inner block */",
            "///"
        ]
    );
}

#[test]
fn blanking_keeps_lines_and_columns() {
    let text = "/// é doc\nfn a() {}\n/** é\n ü */ fn b() {}\n";
    let m = measure(text);
    let blanked = blank(text, &m.doc_comments);
    // One space per character: what follows a blanked comment on its line keeps its (character) column.
    assert_eq!(blanked, "         \nfn a() {}\n     \n      fn b() {}\n");
    // Overlapping ranges, in any order, and ranges past the end.
    assert_eq!(blank("abcdef\ngh", &[3..5, 1..4, 8..100]), "a    f\ng ");
    let file = syn::parse_file(&blanked).expect("parses");
    assert_eq!(file.items.len(), 2);
}
