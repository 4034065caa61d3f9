//! The declared types of values a method is called on: parameters, variables, composite literals, range
//! variables over typed slices and maps, and struct fields. A call on one names the type (`Callee::OnType`), so
//! the join follows it to that type's method, or through an interface to its implementations, and not to every
//! method that shares the name.

use super::Imports;
use super::body::Walk;
use super::syntax::{self, Src, named_children, strip_ref};
use crate::sema::{Callee, FieldType, TypeRef};
use tree_sitter::Node;

/// Go's predeclared types: no method of the module's.
const PREDECLARED: &[&str] = &[
    "any",
    "bool",
    "byte",
    "comparable",
    "complex64",
    "complex128",
    "error",
    "float32",
    "float64",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "rune",
    "string",
    "uint",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uintptr",
];

/// A named type as a declaration writes it (`Syncer`, `*syncer`, `elbv2.Manager`); `None` for a literal type
/// (`[]T`, `func(..)`, `struct{..}`), a predeclared one, or a package the file does not import.
pub(super) fn type_ref(src: &Src<'_>, imports: &Imports, t: Node<'_>) -> Option<TypeRef> {
    let t = syntax::pointee(t);
    let t = match t.kind() {
        // `Store[T]`: the generic type's methods.
        "generic_type" => t.child_by_field_name("type")?,
        _ => t,
    };
    let (package, name) = match t.kind() {
        "type_identifier" => (None, src.text(t)),
        "qualified_type" => {
            let (pkg, name) = syntax::qualified_type(src, t)?;
            (Some(imports.path_of(pkg)?.to_string()), name)
        }
        _ => return None,
    };
    (!PREDECLARED.contains(&name)).then(|| TypeRef {
        package,
        name: name.to_string(),
        field: None,
        result_of: None,
    })
}

/// The element type of a slice or array type, or the value type of a map type: what ranging over it yields.
pub(super) fn element_ref(src: &Src<'_>, imports: &Imports, t: Node<'_>) -> Option<TypeRef> {
    let elem = match t.kind() {
        "slice_type" | "array_type" => t.child_by_field_name("element")?,
        "map_type" => t.child_by_field_name("value")?,
        _ => return None,
    };
    type_ref(src, imports, elem)
}

/// The named fields of the struct types a type declaration declares, with their declared types.
pub(super) fn field_types(src: &Src<'_>, imports: &Imports, decl: Node<'_>) -> Vec<FieldType> {
    let mut out = Vec::new();
    for spec in named_children(decl).filter(|s| s.kind() == "type_spec") {
        let (Some(owner), Some(body)) = (
            spec.child_by_field_name("name"),
            spec.child_by_field_name("type")
                .filter(|t| t.kind() == "struct_type"),
        ) else {
            continue;
        };
        let Some(list) = named_children(body).find(|c| c.kind() == "field_declaration_list") else {
            continue;
        };
        for field in named_children(list).filter(|f| f.kind() == "field_declaration") {
            let Some(ty) = field
                .child_by_field_name("type")
                .and_then(|t| type_ref(src, imports, t))
            else {
                continue;
            };
            for name in syntax::field_children(field, "name") {
                out.push(FieldType {
                    owner: src.text(owner).to_string(),
                    field: src.text(name).to_string(),
                    ty: ty.clone(),
                });
            }
        }
    }
    out
}

impl<'t> Walk<'_, 't> {
    pub(super) fn local_type(&self, name: &str) -> Option<&str> {
        self.locals.get(name).map(String::as_str)
    }

    pub(super) fn fn_name(&self) -> &str {
        &self.f.name
    }

    pub(super) fn src(&self) -> &Src<'t> {
        self.src
    }

    pub(super) fn imports(&self) -> &Imports {
        self.imports
    }

    /// The parameters of the function walked: their positions, types and typed clients.
    pub(super) fn declare_params(&mut self, list: Node<'_>) {
        let mut position = 0;
        for p in named_children(list).filter(|p| p.kind().ends_with("parameter_declaration")) {
            let names = syntax::field_children(p, "name");
            let ty_node = p.child_by_field_name("type");
            let ty = ty_node.map(|t| syntax::base_type(self.src, t));
            let client = ty_node.and_then(|t| self.typed_client_kind(t));
            // An unnamed parameter (`func(string)`) still takes its place.
            position += names.len().max(1);
            for (i, n) in names.iter().enumerate() {
                let name = self.src.text(*n).to_string();
                self.params.insert(name.clone(), position - names.len() + i);
                if let Some(kind) = &client {
                    self.typed_clients.insert(name.clone(), kind.clone());
                }
                self.note_package(&name, ty_node);
                if let Some(t) = ty_node {
                    self.declare_type(&name, t);
                }
                if let Some(ty) = &ty {
                    self.locals.insert(name, ty.clone());
                }
            }
        }
    }

    /// `name` is declared with type `t` (a parameter, `var name T`, `make(T)`): its type, or what ranging over it
    /// yields, and the named type a map of it is keyed by a pointer to.
    pub(super) fn declare_type(&mut self, name: &str, t: Node<'_>) {
        if let Some(r) = type_ref(self.src, self.imports, t) {
            self.local_types.insert(name.to_string(), r);
        } else if let Some(r) = element_ref(self.src, self.imports, t) {
            self.local_elems.insert(name.to_string(), r);
        }
        let key = (t.kind() == "map_type")
            .then(|| t.child_by_field_name("key"))
            .flatten()
            .filter(|k| k.kind() == "pointer_type");
        match key {
            Some(k) => self
                .map_keys
                .insert(name.to_string(), syntax::base_type(self.src, k)),
            None => self.map_keys.remove(name),
        };
    }

    /// `name := v`: the type a composite literal (`&syncer{..}`, `[]Syncer{..}`) or `new(T)` gives it.
    pub(super) fn bind_type(&mut self, name: &str, v: Node<'_>) {
        self.local_types.remove(name);
        self.local_elems.remove(name);
        let v = strip_ref(v);
        let t = match v.kind() {
            "composite_literal" => v.child_by_field_name("type"),
            "call_expression"
                if v.child_by_field_name("function")
                    .is_some_and(|f| matches!(self.src.text(f), "new" | "make")) =>
            {
                v.child_by_field_name("arguments")
                    .and_then(|a| a.named_child(0))
            }
            _ => None,
        };
        if let Some(t) = t {
            self.declare_type(name, t);
            return;
        }
        // `cache := c.mgr.GetCache()`: the result of a method of a typed value (see `TypeRef::result_of`).
        if let Some(f) = (v.kind() == "call_expression")
            .then(|| v.child_by_field_name("function"))
            .flatten()
            .filter(|f| f.kind() == "selector_expression")
            && let (Some(op), Some(m)) = (
                f.child_by_field_name("operand"),
                f.child_by_field_name("field"),
            )
            && let Some(Callee::OnType(t, _)) = self.typed_callee(op, self.src.text(m))
            && t.result_of.is_none()
        {
            let result_of = Some(self.src.text(m).to_string());
            self.local_types
                .insert(name.to_string(), TypeRef { result_of, ..*t });
        }
    }

    /// `for _, s := range syncers`: `s` takes the element type of `syncers`.
    pub(super) fn bind_range(&mut self, clause: Node<'_>) {
        let (Some(left), Some(right)) = (
            clause.child_by_field_name("left"),
            clause.child_by_field_name("right"),
        ) else {
            return;
        };
        let names: Vec<Node> = named_children(left).collect();
        let ranged = (right.kind() == "identifier").then(|| self.src.text(right));
        let elem = ranged.and_then(|r| self.local_elems.get(r).cloned());
        // `for vpa, pods := range controlledPods` of a `map[*VerticalPodAutoscaler][]*Pod`: the key is an object.
        if let Some(key) = names.first().map(|k| self.src.text(*k).to_string()) {
            match ranged.and_then(|r| self.map_keys.get(r).cloned()) {
                Some(t) => self.locals.insert(key, t),
                None => self.locals.remove(&key),
            };
        }
        if let Some(value) = names.get(1) {
            let name = self.src.text(*value).to_string();
            // The kind an API call on the value names: a slice's element (`[]*batchv1.Job`), or the item of a
            // list's `Items` (`jobs.Items` of a `batchv1.JobList`).
            match elem
                .as_ref()
                .map(|r| r.name.clone())
                .or_else(|| self.items_kind(right))
            {
                Some(k) => self.range_kinds.insert(name.clone(), k),
                None => self.range_kinds.remove(&name),
            };
            // An item of a slice of built-in objects (`for _, pod := range pods`, `pods []*v1.Pod`) is an object: its
            // `Namespace` is an object's identity to CA402.
            if let Some(r) = elem.as_ref().filter(|r| r.is_builtin_object()) {
                self.locals.insert(name.clone(), r.name.clone());
            }
            match elem {
                Some(r) => self.local_types.insert(name, r),
                None => self.local_types.remove(&name),
            };
        }
    }

    /// The parameters of a closure that are built-in objects (`go func(pod *v1.Pod) { .. }(pods[i])`), bound as
    /// objects while its body is walked: each name with what it shadowed, to be put back after.
    pub(super) fn literal_params(&mut self, lit: Node<'_>) -> Vec<(String, Option<String>)> {
        let mut shadowed = Vec::new();
        let Some(list) = lit.child_by_field_name("parameters") else {
            return shadowed;
        };
        for p in named_children(list).filter(|p| p.kind() == "parameter_declaration") {
            let Some(t) = p
                .child_by_field_name("type")
                .and_then(|t| type_ref(self.src, self.imports, t))
                .filter(TypeRef::is_builtin_object)
            else {
                continue;
            };
            for n in syntax::field_children(p, "name") {
                let name = self.src.text(n).to_string();
                let before = self.locals.insert(name.clone(), t.name.clone());
                shadowed.push((name, before));
            }
        }
        shadowed
    }

    /// `list.Items` of a local holding a list kind (`var jobs batchv1.JobList`): the kind of its items.
    pub(super) fn items_kind(&self, n: Node<'_>) -> Option<String> {
        if n.kind() != "selector_expression"
            || n.child_by_field_name("field")
                .is_none_or(|f| self.src.text(f) != "Items")
        {
            return None;
        }
        let list = n
            .child_by_field_name("operand")
            .filter(|o| o.kind() == "identifier")?;
        let kind = self.locals.get(self.src.text(list))?;
        kind.strip_suffix("List")
            .filter(|k| !k.is_empty())
            .map(str::to_string)
    }

    /// A call `x.M(..)` or `x.f.M(..)` on a value whose type is declared: that type's method.
    pub(super) fn typed_callee(&self, op: Node<'_>, method: &str) -> Option<Callee> {
        let on = match op.kind() {
            "identifier" => self.local_types.get(self.src.text(op))?.clone(),
            // `synthesizers[i].PostSynthesize(ctx)`.
            "index_expression" => {
                let of = op.child_by_field_name("operand")?;
                (of.kind() == "identifier")
                    .then(|| self.local_elems.get(self.src.text(of)))
                    .flatten()?
                    .clone()
            }
            "selector_expression" => {
                let base = op.child_by_field_name("operand")?;
                let field = self.src.text(op.child_by_field_name("field")?).to_string();
                if base.kind() != "identifier" {
                    return None;
                }
                let x = self.src.text(base);
                let owner = if self.recv.as_deref() == Some(x) {
                    TypeRef {
                        package: None,
                        name: self.f.self_ty.clone()?,
                        field: None,
                        result_of: None,
                    }
                } else {
                    self.local_types.get(x)?.clone()
                };
                // One step from a declared type only: a field of a field, or of a method's result, is not followed.
                if owner.field.is_some() || owner.result_of.is_some() {
                    return None;
                }
                TypeRef {
                    field: Some(field),
                    ..owner
                }
            }
            _ => return None,
        };
        Some(Callee::OnType(Box::new(on), method.to_string()))
    }
}
