//! The Go front end: controller-runtime source reduced to the same `sema` facts as the Rust front end (kinds
//! with the status subresource from kubebuilder markers, functions and methods by receiver, controller-runtime
//! client calls as typed API operations, `ctrl.Result` requeues, builder chains as Controllers, volatile values
//! written into objects), so that the rule files judge Go without knowing it. Parsed with tree-sitter-go: no Go
//! toolchain at run time.

mod body;
mod branches;
mod client;
mod controllers;
mod flow;
mod labels;
pub mod module;
mod periodic;
mod phases;
mod provenance;
mod requeues;
mod syntax;
mod types;
mod wiring;

use crate::finding::Span;
use crate::sema::{CrdDecl, FileModel, FnModel, Lang};
use std::collections::HashMap;
use syntax::{Src, named_children, unwrap_stmt_list};
use tree_sitter::{Node, Parser};

/// Deeper syntax trees than this are not walked (the walk recurses): the file is reported as CA001 instead.
/// Generated and hand-written controllers stay far below it (a few dozen levels).
pub const MAX_TREE_DEPTH: usize = 1_500;

/// Why a Go file gave no model.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GoError {
    #[error("tree-sitter-go could not be loaded: {0}")]
    Language(String),
    #[error("the parser gave no tree")]
    NoTree,
    #[error("nested deeper than {max} syntax levels at line {line}: not analysed")]
    TooDeep { line: usize, max: usize },
    #[error("syntax error at line {line}, column {column}: the file cannot be parsed as Go")]
    Syntax { line: usize, column: usize },
}

impl GoError {
    /// Where in the file the error is (line, column), 1-based.
    pub fn at(&self) -> (usize, usize) {
        match self {
            GoError::TooDeep { line, .. } => (*line, 1),
            GoError::Syntax { line, column } => (*line, *column),
            _ => (1, 1),
        }
    }
}

/// Reduces one Go file to its model. `name` is the path findings name.
pub fn analyze(name: &str, text: &str) -> Result<FileModel, GoError> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_go::LANGUAGE.into())
        .map_err(|e| GoError::Language(e.to_string()))?;
    let mut tree = parser.parse(text, None).ok_or(GoError::NoTree)?;
    // Go 1.26's `new(expr)` is newer than the grammar, which takes only a type there: a compiling file would be
    // a syntax error. Parsed again with those calls spelled as plain calls of the same length, so every node's
    // position still indexes `text`, which is what the model reads.
    if tree.root_node().has_error()
        && let Some(plain) = syntax::new_of_value_as_call(text)
    {
        tree = parser.parse(&plain, None).ok_or(GoError::NoTree)?;
    }
    let root = tree.root_node();
    check_depth(root)?;
    if root.has_error() {
        let at = first_error(root).unwrap_or(root);
        let p = at.start_position();
        return Err(GoError::Syntax {
            line: p.row + 1,
            column: p.column + 1,
        });
    }
    let src = Src::new(name, text);
    let imports = imports(&src, root);
    let mut model = FileModel {
        path: name.to_string(),
        lang: Lang::Go,
        ..Default::default()
    };
    let plain = plain_structs(&src, root);
    let mut prev_comments: Vec<Node> = Vec::new();
    for item in named_children(root) {
        match item.kind() {
            "comment" => {
                prev_comments.push(item);
                continue;
            }
            "type_declaration" => {
                model.crds.extend(crd_decls(&src, item, &prev_comments));
                model.interfaces.extend(interfaces(&src, item));
                model
                    .embedding_types
                    .extend(embedding_types(&src, &imports, item));
                model
                    .field_types
                    .extend(types::field_types(&src, &imports, item));
            }
            "const_declaration" => consts(&src, &imports, item, &mut model),
            "var_declaration" => {
                consts(&src, &imports, item, &mut model);
                wiring::package_func_values(&src, &imports, item, &mut model.func_fields);
            }
            "function_declaration" | "method_declaration" => {
                let f = body::function(&src, &imports, &plain, item, &mut model);
                model.fns.push(f);
            }
            _ => {}
        }
        prev_comments.clear();
    }
    watches_in_helpers(&src, root, &mut model);
    Ok(model)
}

/// `c, _ := controller.New(..)` then `addWatch(mgr, c)`: a Controller whose watch of its own kind is added by a
/// helper of the file that the building function calls and hands a `controller.Controller` to.
fn watches_in_helpers(src: &Src<'_>, root: Node<'_>, model: &mut FileModel) {
    if model.controllers.iter().all(|c| c.kind.is_some()) {
        return;
    }
    let helpers: Vec<Node> = named_children(root)
        .filter(|d| d.kind() == "function_declaration")
        .filter(|d| {
            d.child_by_field_name("parameters")
                .is_some_and(|p| src.text(p).contains("Controller"))
        })
        .collect();
    for c in model.controllers.iter_mut().filter(|c| c.kind.is_none()) {
        let Some(builder) = model.fns.iter().find(|f| f.name == c.in_fn) else {
            continue;
        };
        for h in &helpers {
            let name = h.child_by_field_name("name").map(|n| src.text(n));
            let called = builder
                .calls
                .iter()
                .any(|call| Some(call.callee.name()) == name);
            if let (true, Some(body)) = (called, h.child_by_field_name("body")) {
                controllers::watched_kind(src, body, c);
                if c.kind.is_some() {
                    break;
                }
            }
        }
    }
}

/// The package an import path names by default: its last element (`sigs.k8s.io/controller-runtime` is
/// `controllerruntime` in the source, so the alias is what the code spells).
#[derive(Debug, Default)]
pub(crate) struct Imports {
    /// Name as used in the file → import path.
    by_name: HashMap<String, String>,
}

impl Imports {
    /// The import path a package name in the file stands for.
    pub(crate) fn path_of(&self, name: &str) -> Option<&str> {
        self.by_name.get(name).map(String::as_str)
    }

    /// `name` is the package `path` (or one under it).
    pub(crate) fn is(&self, name: &str, path: &str) -> bool {
        self.path_of(name)
            .is_some_and(|p| p == path || p.strip_prefix(path).is_some_and(|r| r.starts_with('/')))
    }

    /// `name` is a package no module being scanned can be: the standard library (no dot in the first element)
    /// and the logging, uuid and metrics libraries every controller imports. Any other import path is matched
    /// against the module's directories by the join (`Unit::resolve`).
    pub(crate) fn is_external(&self, name: &str) -> bool {
        self.is_std(name)
            || self.path_of(name).is_some_and(|p| {
                p.starts_with("github.com/go-logr/")
                    || p.starts_with("github.com/google/uuid")
                    || p.starts_with("github.com/prometheus/")
            })
    }

    /// `name` is a package of the standard library: no dot in its path's first element.
    pub(crate) fn is_std(&self, name: &str) -> bool {
        self.path_of(name)
            .is_some_and(|p| !p.split('/').next().unwrap_or(p).contains('.'))
    }
}

fn imports(src: &Src<'_>, root: Node<'_>) -> Imports {
    let mut out = Imports::default();
    for decl in named_children(root).filter(|n| n.kind() == "import_declaration") {
        let mut specs = Vec::new();
        for c in named_children(decl) {
            match c.kind() {
                "import_spec" => specs.push(c),
                "import_spec_list" => {
                    specs.extend(named_children(c).filter(|s| s.kind() == "import_spec"))
                }
                _ => {}
            }
        }
        for spec in specs {
            let Some(path) = spec.child_by_field_name("path") else {
                continue;
            };
            let path = src.text(path).trim_matches(|c| c == '"' || c == '`');
            let name = match spec.child_by_field_name("name") {
                Some(n) if n.kind() == "package_identifier" => src.text(n).to_string(),
                // `_` and `.` imports name nothing callable by a qualifier.
                Some(_) => continue,
                None => default_package_name(path),
            };
            out.by_name.insert(name, path.to_string());
        }
    }
    out
}

/// The name a package is referred to by when imported without an alias: the last element of its path, without a
/// major-version suffix (`github.com/x/y/v2` is `y`) or a `go-` prefix; controller-runtime's root package is
/// `controllerruntime`.
fn default_package_name(path: &str) -> String {
    if path == "sigs.k8s.io/controller-runtime" {
        return "controllerruntime".into();
    }
    let mut parts = path.rsplit('/');
    let mut last = parts.next().unwrap_or(path);
    if last.len() > 1
        && last.starts_with('v')
        && last[1..].chars().all(|c| c.is_ascii_digit())
        && let Some(before) = parts.next()
    {
        last = before;
    }
    last.trim_start_matches("go-").replace(['-', '.'], "")
}

/// The file's struct types that embed no `ObjectMeta` and have no `Namespace` (`OperationKey{Name, ResourceID}`):
/// their `Name` is no object's name.
fn plain_structs(src: &Src<'_>, root: Node<'_>) -> std::collections::HashSet<String> {
    named_children(root)
        .filter(|d| d.kind() == "type_declaration")
        .flat_map(named_children)
        .filter(|s| s.kind() == "type_spec")
        .filter_map(|spec| {
            let body = spec
                .child_by_field_name("type")
                .filter(|t| t.kind() == "struct_type")?;
            // A struct with a `Namespace` beside its `Name` holds an object's key (`MachineLabels{Name,
            // Namespace, Reason}`), whatever it embeds.
            let meta = syntax::any_node(body, &mut |n| {
                n.kind() == "field_declaration"
                    && (src.text(n).contains("ObjectMeta")
                        || syntax::field_children(n, "name")
                            .iter()
                            .any(|f| src.text(*f) == "Namespace"))
            });
            let name = src.text(spec.child_by_field_name("name")?).to_string();
            (!meta).then_some(name)
        })
        .collect()
}

/// The struct types a type declaration declares that embed another type (a field with no name).
fn embedding_types(src: &Src<'_>, imports: &Imports, decl: Node<'_>) -> Vec<String> {
    named_children(decl)
        .filter(|s| s.kind() == "type_spec")
        .filter_map(|spec| {
            let body = spec
                .child_by_field_name("type")
                .filter(|t| t.kind() == "struct_type")?;
            // Another module's type (`*eks.Client`): its methods are not in the module's source. (A type of the
            // module's own is seen, and one that embeds it declares what it adds; the standard library's
            // `sync.Mutex` adds only `Lock` and `Unlock`.)
            let embeds = syntax::any_node(body, &mut |n| {
                n.kind() == "field_declaration"
                    && n.child_by_field_name("name").is_none()
                    && n.child_by_field_name("type").is_some_and(|t| {
                        syntax::qualified_type(src, syntax::pointee(t)).is_some_and(|(pkg, _)| {
                            imports.path_of(pkg).is_some() && !imports.is_std(pkg)
                        })
                    })
            });
            embeds.then_some(())?;
            Some(src.text(spec.child_by_field_name("name")?).to_string())
        })
        .collect()
}

/// The interfaces a type declaration declares, with their own methods (embedded interfaces are not expanded).
fn interfaces(src: &Src<'_>, decl: Node<'_>) -> Vec<crate::sema::InterfaceDecl> {
    named_children(decl)
        .filter(|s| s.kind() == "type_spec")
        .filter_map(|spec| {
            let name = src.text(spec.child_by_field_name("name")?).to_string();
            let body = spec
                .child_by_field_name("type")
                .filter(|t| t.kind() == "interface_type")?;
            let (methods, signatures): (Vec<String>, Vec<String>) = named_children(body)
                .filter(|m| matches!(m.kind(), "method_elem" | "method_spec"))
                .filter_map(|m| {
                    let name = src.text(m.child_by_field_name("name")?).to_string();
                    Some((name, syntax::signature(src, m)))
                })
                .unzip();
            (!methods.is_empty()).then_some(crate::sema::InterfaceDecl {
                name,
                methods,
                signatures,
            })
        })
        .collect()
}

/// The kinds a type declaration declares, from the kubebuilder markers in the comments right above it:
/// `+kubebuilder:object:root=true` makes it a kind, `+kubebuilder:subresource:status` gives it the status
/// subresource.
fn crd_decls(src: &Src<'_>, decl: Node<'_>, comments: &[Node<'_>]) -> Vec<CrdDecl> {
    let markers: Vec<&str> = comments.iter().map(|c| src.text(*c)).collect();
    let marked = |m: &str| {
        markers
            .iter()
            .any(|c| c.trim_start_matches('/').trim().starts_with(m))
    };
    let root = marked("+kubebuilder:object:root=true") || marked("+genclient");
    let has_status = marked("+kubebuilder:subresource:status");
    if !root && !has_status {
        return Vec::new();
    }
    let mut out = Vec::new();
    for spec in named_children(decl).filter(|s| s.kind() == "type_spec") {
        let Some(name) = spec.child_by_field_name("name") else {
            continue;
        };
        let kind = src.text(name);
        // The list type carries the same markers in some projects: it is no kind of its own.
        if kind.ends_with("List") {
            continue;
        }
        out.push(CrdDecl {
            kind: kind.to_string(),
            has_status,
            span: src.span(name),
        });
    }
    out
}

/// Package-level constants (and variables initialised with a constant) that evaluate to a number or a duration:
/// `const requeueAfter = 30 * time.Second` is 30 seconds wherever a requeue names it.
fn consts(src: &Src<'_>, imports: &Imports, decl: Node<'_>, model: &mut FileModel) {
    for spec in syntax::specs(decl) {
        let names: Vec<Node> = syntax::field_children(spec, "name");
        let Some(values) = spec.child_by_field_name("value") else {
            continue;
        };
        let values: Vec<Node> = named_children(values).collect();
        if names.len() != values.len() {
            continue;
        }
        for (n, v) in names.into_iter().zip(values) {
            let value = requeues::lower_value(src, imports, v);
            let consts = HashMap::new();
            let evaluated = value
                .secs(&consts, &crate::sema::unbound)
                .or_else(|| value.number(&consts, &crate::sema::unbound));
            if let Some(x) = evaluated {
                model.consts.push((src.text(n).to_string(), x));
            }
        }
    }
}

/// The deepest path of the tree, walked without recursion; too deep is an error at the node where the limit is
/// crossed.
fn check_depth(root: Node<'_>) -> Result<(), GoError> {
    let mut cursor = root.walk();
    let mut depth = 0usize;
    loop {
        if depth > MAX_TREE_DEPTH {
            return Err(GoError::TooDeep {
                line: cursor.node().start_position().row + 1,
                max: MAX_TREE_DEPTH,
            });
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return Ok(());
            }
            depth -= 1;
        }
    }
}

/// The first error or missing node in document order, found without recursion.
fn first_error(root: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = root.walk();
    loop {
        let n = cursor.node();
        if n.is_error() || n.is_missing() {
            return Some(n);
        }
        // Only a subtree that holds an error is entered.
        if n.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

/// The statements of a block (`{ … }`), whichever way the grammar nests them.
pub(crate) fn statements(block: Node<'_>) -> Vec<Node<'_>> {
    named_children(block).flat_map(unwrap_stmt_list).collect()
}

/// A function's span: its name.
pub(crate) fn fn_span(src: &Src<'_>, decl: Node<'_>) -> Span {
    decl.child_by_field_name("name")
        .map_or_else(|| src.span(decl), |n| src.span(n))
}

/// A model of a function without body facts: name, receiver type, parameters.
pub(crate) fn fn_header(src: &Src<'_>, decl: Node<'_>) -> FnModel {
    let name = decl
        .child_by_field_name("name")
        .map(|n| src.text(n).to_string())
        .unwrap_or_default();
    let self_ty = decl
        .child_by_field_name("receiver")
        .and_then(|r| named_children(r).find(|p| p.kind() == "parameter_declaration"))
        .and_then(|p| p.child_by_field_name("type"))
        .map(|t| syntax::base_type(src, t));
    let mut params = Vec::new();
    if let Some(list) = decl.child_by_field_name("parameters") {
        for p in named_children(list) {
            let names = syntax::field_children(p, "name");
            if names.is_empty() {
                params.push(String::new());
            }
            params.extend(names.into_iter().map(|n| src.text(n).to_string()));
        }
    }
    let signature = syntax::signature(src, decl);
    let returns_action = decl
        .child_by_field_name("result")
        .is_some_and(|r| syntax::mentions_result(src, r));
    let span = fn_span(src, decl);
    FnModel {
        name,
        self_ty,
        span,
        last_line: decl.end_position().row + 1,
        params,
        signature,
        returns_action,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
