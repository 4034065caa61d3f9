//! Small readers over tree-sitter-go nodes: text, spans, children by field, and the few type shapes the front
//! end asks about.

use crate::finding::Span;
use crate::sema::Pos;
use tree_sitter::Node;

/// The file being read: its name for spans and its text for node contents.
pub(crate) struct Src<'t> {
    pub(crate) name: &'t str,
    pub(crate) text: &'t str,
}

impl<'t> Src<'t> {
    pub(crate) fn new(name: &'t str, text: &'t str) -> Self {
        Self { name, text }
    }

    /// The node's source text (empty if its bytes are not on a character boundary, which a parse of valid UTF-8
    /// never gives).
    pub(crate) fn text(&self, n: Node<'_>) -> &'t str {
        self.text.get(n.byte_range()).unwrap_or("")
    }

    /// The node's place, 1-based.
    pub(crate) fn span(&self, n: Node<'_>) -> Span {
        let (a, b) = (n.start_position(), n.end_position());
        Span {
            file: self.name.to_string(),
            line: a.row + 1,
            column: a.column + 1,
            end_line: b.row + 1,
            end_column: b.column + 1,
        }
    }

    /// The node's place, 1-based, for facts that know their file from elsewhere.
    pub(crate) fn pos(&self, n: Node<'_>) -> Pos {
        let (a, b) = (n.start_position(), n.end_position());
        let n = |v: usize| u32::try_from(v + 1).unwrap_or(u32::MAX);
        Pos {
            line: n(a.row),
            column: n(a.column),
            end_line: n(b.row),
            end_column: n(b.column),
        }
    }

    /// The node's text with runs of whitespace collapsed and cut at `max` characters.
    pub(crate) fn compact(&self, n: Node<'_>, max: usize) -> String {
        let mut out = String::new();
        for w in self.text(n).split_whitespace() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(w);
        }
        if out.chars().count() > max {
            out = out.chars().take(max).collect::<String>() + "…";
        }
        out
    }
}

/// The named children of a node (comments included).
pub(crate) fn named_children<'a>(n: Node<'a>) -> impl Iterator<Item = Node<'a>> {
    (0..n.named_child_count()).filter_map(move |i| n.named_child(i))
}

/// Every child of `n` under the field `field` (a `var a, b = …` has two names).
pub(crate) fn field_children<'a>(n: Node<'a>, field: &str) -> Vec<Node<'a>> {
    let mut cursor = n.walk();
    n.children_by_field_name(field, &mut cursor).collect()
}

/// A `statement_list` (how the grammar groups a block's statements) as its statements; anything else as itself.
pub(crate) fn unwrap_stmt_list(n: Node<'_>) -> Vec<Node<'_>> {
    if n.kind() == "statement_list" {
        named_children(n).collect()
    } else {
        vec![n]
    }
}

/// The type's own name, without pointer, package or type arguments: `*appv1.Widget` is `Widget`.
pub(crate) fn base_type(src: &Src<'_>, t: Node<'_>) -> String {
    match t.kind() {
        "pointer_type" | "parenthesized_type" => named_children(t)
            .last()
            .map(|i| base_type(src, i))
            .unwrap_or_default(),
        "qualified_type" => t
            .child_by_field_name("name")
            .map(|n| src.text(n).to_string())
            .unwrap_or_default(),
        "generic_type" => t
            .child_by_field_name("type")
            .map(|n| base_type(src, n))
            .unwrap_or_default(),
        _ => src.text(t).to_string(),
    }
}

/// A result list that returns controller-runtime's `Result` (`(ctrl.Result, error)`, `(reconcile.Result, error)`).
pub(crate) fn mentions_result(src: &Src<'_>, result: Node<'_>) -> bool {
    let text = src.text(result);
    text.contains(".Result")
        || text
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| w == "Result")
}

/// The `key: value` elements of a composite literal (`T{..}` or `&T{..}`), as (key, value); none for anything
/// else. The grammar wraps each side in `literal_element`, which is looked through.
pub(crate) fn keyed_elements(lit: Node<'_>) -> Vec<(Node<'_>, Node<'_>)> {
    let lit = strip_ref(lit);
    if lit.kind() != "composite_literal" {
        return Vec::new();
    }
    let Some(body) = lit.child_by_field_name("body") else {
        return Vec::new();
    };
    named_children(body)
        .filter(|e| e.kind() == "keyed_element")
        .filter_map(|e| {
            let mut parts = named_children(e).map(unwrap_literal_element);
            Some((parts.next()?, parts.next()?))
        })
        .collect()
}

/// A `literal_element` (the grammar's wrapper of each side of `key: value`) as what it holds.
pub(crate) fn unwrap_literal_element(n: Node<'_>) -> Node<'_> {
    if n.kind() == "literal_element" {
        n.named_child(0).unwrap_or(n)
    } else {
        n
    }
}

/// The value a composite literal gives `key` (`RequeueAfter` of `ctrl.Result{RequeueAfter: d}`).
pub(crate) fn keyed_value<'a>(src: &Src<'_>, lit: Node<'a>, key: &str) -> Option<Node<'a>> {
    keyed_elements(lit)
        .into_iter()
        .find_map(|(k, v)| (src.text(k) == key).then_some(v))
}

/// The `const`/`var` specs of a declaration, through the grouped form (`const ( a = 1; b = 2 )`).
pub(crate) fn specs(decl: Node<'_>) -> Vec<Node<'_>> {
    named_children(decl)
        .flat_map(|c| {
            if matches!(c.kind(), "const_spec_list" | "var_spec_list") {
                named_children(c).collect()
            } else {
                vec![c]
            }
        })
        .filter(|s| matches!(s.kind(), "const_spec" | "var_spec"))
        .collect()
}

/// The type a pointer type points to (`*eks.Client` → `eks.Client`); any other type as it is.
pub(crate) fn pointee(t: Node<'_>) -> Node<'_> {
    match t.kind() {
        "pointer_type" => t.named_child(0).unwrap_or(t),
        _ => t,
    }
}

/// A function's or an interface method's signature, its types without package qualifiers and spaces, one per
/// place (`a, b int` is `int,int`): `Context,string->*WorkflowTemplate,error`. The same method declared in an
/// interface of one package and implemented in another spells its types with different qualifiers.
pub(crate) fn signature(src: &Src<'_>, decl: Node<'_>) -> String {
    let types = |list: Option<Node<'_>>| -> Vec<String> {
        let Some(list) = list else { return Vec::new() };
        if list.kind() != "parameter_list" {
            return vec![unqualified(src.text(list))];
        }
        named_children(list)
            .filter(|p| p.kind().ends_with("parameter_declaration"))
            .flat_map(|p| {
                let ty = p
                    .child_by_field_name("type")
                    .map_or(String::new(), |t| unqualified(src.text(t)));
                let ty = if p.kind() == "variadic_parameter_declaration" {
                    format!("...{ty}")
                } else {
                    ty
                };
                std::iter::repeat_n(ty, field_children(p, "name").len().max(1))
            })
            .collect()
    };
    format!(
        "{}->{}",
        types(decl.child_by_field_name("parameters")).join(","),
        types(decl.child_by_field_name("result")).join(",")
    )
}

/// A type's text without whitespace and package qualifiers: `map[string] *v1.Pod` → `map[string]*Pod`.
fn unqualified(ty: &str) -> String {
    let mut out = String::with_capacity(ty.len());
    let mut word = String::new();
    for c in ty.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if c == '.' && !word.is_empty() {
            // A qualifier: dropped with its dot (`...` of a variadic type has no word before it).
            word.clear();
        } else {
            out.push_str(&word);
            word.clear();
            if !c.is_whitespace() {
                out.push(c);
            }
        }
    }
    out.push_str(&word);
    out
}

/// `&x` and `(x)` as `x`.
pub(crate) fn strip_ref(n: Node<'_>) -> Node<'_> {
    let mut n = n;
    loop {
        match n.kind() {
            "unary_expression"
                if n.child_by_field_name("operator")
                    .is_some_and(|o| o.kind() == "&") =>
            {
                match n.child_by_field_name("operand") {
                    Some(o) => n = o,
                    None => return n,
                }
            }
            "parenthesized_expression" => match n.named_child(0) {
                Some(o) => n = o,
                None => return n,
            },
            _ => return n,
        }
    }
}

/// The identifier an expression is rooted at: `w` of `w.Status.Conditions[0]`, `&w`, `w.DeepCopy()`.
pub(crate) fn root_ident<'t>(src: &Src<'t>, n: Node<'_>) -> Option<&'t str> {
    let n = strip_ref(n);
    match n.kind() {
        "identifier" => Some(src.text(n)),
        "selector_expression" => root_ident(src, n.child_by_field_name("operand")?),
        "index_expression" => root_ident(src, n.child_by_field_name("operand")?),
        "call_expression" => {
            let f = n.child_by_field_name("function")?;
            if f.kind() == "selector_expression" {
                root_ident(src, f.child_by_field_name("operand")?)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `pkg.Name` as (`pkg`, `Name`) when the operand is a bare identifier.
pub(crate) fn qualified<'t>(src: &Src<'t>, n: Node<'_>) -> Option<(&'t str, &'t str)> {
    if n.kind() != "selector_expression" {
        return None;
    }
    let op = n.child_by_field_name("operand")?;
    let field = n.child_by_field_name("field")?;
    (op.kind() == "identifier").then(|| (src.text(op), src.text(field)))
}

/// `pkg.Name` as a type (`prometheus.Labels`, `corev1client.SecretInterface`): the package and the name.
pub(crate) fn qualified_type<'t>(src: &Src<'t>, t: Node<'_>) -> Option<(&'t str, &'t str)> {
    if t.kind() != "qualified_type" {
        return None;
    }
    Some((
        src.text(t.child_by_field_name("package")?),
        src.text(t.child_by_field_name("name")?),
    ))
}

/// The function, method or closure `n` is in.
pub(crate) fn enclosing_fn(n: Node<'_>) -> Option<Node<'_>> {
    let mut f = n.parent();
    while let Some(x) = f.filter(|x| {
        !matches!(
            x.kind(),
            "function_declaration" | "method_declaration" | "func_literal"
        )
    }) {
        f = x.parent();
    }
    f
}

/// Does the subtree hold a node for which `pred` holds? Walked without recursion.
pub(crate) fn any_node(n: Node<'_>, pred: &mut dyn FnMut(Node<'_>) -> bool) -> bool {
    let mut cursor = n.walk();
    loop {
        if pred(cursor.node()) {
            return true;
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.node() == n {
                return false;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return false;
            }
        }
    }
}

/// `AlreadyExists` → `already_exists`: an apimachinery error predicate's reason in `sema::ErrorSign`'s words.
pub(crate) fn snake(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` with each `new(expr)` of Go 1.26 spelled `neW(expr)`, a plain call the grammar parses, or `None`
/// when there is none. `new(T)` of a type that is no expression (`new([]T)`, `new(map[K]V)`, `new(func())`, …)
/// is left as it is; `new(T)` of a named type parses either way. Strings, runes and comments are skipped.
pub(crate) fn new_of_value_as_call(text: &str) -> Option<String> {
    const TYPE_ONLY: &[&str] = &["[", "map[", "chan", "<-", "func", "struct", "interface"];
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut changed = false;
    let mut i = 0;
    let ident = |c: u8| c == b'_' || c.is_ascii_alphanumeric();
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = text[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
            }
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'`' => {
                i = text[i + 1..].find('`').map_or(b.len(), |p| i + 1 + p + 1);
            }
            b'n' if b[i..].starts_with(b"new")
                && (i == 0 || !(ident(b[i - 1]) || b[i - 1] == b'.')) =>
            {
                let rest = text[i + 3..].trim_start_matches([' ', '\t']);
                if let Some(arg) = rest.strip_prefix('(') {
                    let arg = arg.trim_start();
                    if !TYPE_ONLY.iter().any(|t| arg.starts_with(t)) {
                        out[i + 2] = b'W';
                        changed = true;
                    }
                }
                i += 3;
            }
            c if ident(c) => {
                while i < b.len() && ident(b[i]) {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were replaced by ASCII bytes: still UTF-8.
    changed.then(|| String::from_utf8(out).ok()).flatten()
}

/// A receive from a timer's or ticker's channel (`<-ticker.C`, `<-t.timer.C`, an injected clock's `<-tk.C()`),
/// as the code spells it: the goroutine waits for the tick. (`<-time.After(d)` is the call `time.After`.)
pub(crate) fn timer_receive(src: &Src<'_>, n: Node<'_>) -> Option<String> {
    let op = n.child_by_field_name("operator")?;
    if src.text(op) != "<-" {
        return None;
    }
    let operand = n.child_by_field_name("operand")?;
    let channel = match operand.kind() {
        "call_expression"
            if operand
                .child_by_field_name("arguments")
                .is_some_and(|a| a.named_child_count() == 0) =>
        {
            operand.child_by_field_name("function")?
        }
        _ => operand,
    };
    let field = (channel.kind() == "selector_expression")
        .then(|| channel.child_by_field_name("field"))
        .flatten()?;
    if src.text(field) != "C" || drains_buffered(src, n, operand) {
        return None;
    }
    Some(format!("<-{}", src.compact(operand, 60)))
}

/// `if len(t.C) > 0 { <-t.C }`: a receive only once the channel holds a value, which never waits (a ticker's
/// channel drained after `Reset`).
fn drains_buffered(src: &Src<'_>, n: Node<'_>, channel: Node<'_>) -> bool {
    let guard = format!("len({})", src.text(channel));
    std::iter::successors(n.parent(), |p| p.parent())
        .take_while(|p| {
            !matches!(
                p.kind(),
                "function_declaration" | "method_declaration" | "func_literal"
            )
        })
        .find(|p| p.kind() == "if_statement")
        .and_then(|i| i.child_by_field_name("condition"))
        .is_some_and(|c| src.text(c).contains(&guard))
}
