//! CA201: a Controller whose main stream has no generation predicate, for a kind it also writes:
//! every status, annotation or finalizer write comes back as a watch event and another reconcile.

use super::{Ctx, finding};
use crate::finding::{Evidence, Finding, When, WhenKind};
use crate::unit::NO_GENERATION;
use crate::sema::{ControllerModel, Lang, Verb};

/// The steps that drop events by a predicate: kube-runtime's stream adapters (`predicate_filter`, and
/// `predicate` of older releases), controller-runtime's `WithEventFilter` and `For(.., WithPredicates(..))`.
const FILTERS: &[&str] = &["predicate_filter", "predicate", "WithEventFilter", "WithPredicates"];

/// The fix, in the terms of the Controller's language.
fn help(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => {
            "filter the main stream: `Controller::for_stream(watcher(api, cfg).default_backoff().reflect(w).applied_objects().predicate_filter(predicates::generation), reader)` (with finalizers: `generation.combine(finalizers)`)"
        }
        Lang::Go => {
            "filter the main stream: `For(&T{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))` or `WithEventFilter(predicate.GenerationChangedPredicate{})`"
        }
    }
}

/// The Controller's stream is filtered by a predicate.
fn filtered(c: &ControllerModel) -> bool {
    c.stream.iter().any(|s| FILTERS.contains(&s.method.as_str()))
}

/// The filter is generation-only (`predicates::generation`, a closure reading `.generation`), without the
/// finalizers predicate: it also drops the update that adds a finalizer.
fn hides_finalizers(c: &ControllerModel) -> bool {
    let names = || {
        c.stream
            .iter()
            .filter(|s| FILTERS.contains(&s.method.as_str()))
            .flat_map(|s| &s.arg_names)
    };
    names().any(|n| n.contains("generation")) && !names().any(|n| n.contains("finalizers"))
}

pub fn check(cx: &Ctx<'_>, out: &mut Vec<Finding>) {
    for (fi, file) in cx.unit.files.iter().enumerate() {
        for c in &file.controllers {
            if filtered(c) {
                finalizer_hidden(cx, fi, c, out);
                continue;
            }
            let Some(kind) = controlled_kind(cx, fi, c) else {
                continue;
            };
            if NO_GENERATION.contains(&kind.as_str()) {
                continue;
            }
            // A framework's Controller over a type parameter (`Controller<K>`): the user's reconcile, which this
            // crate cannot see, does the writing; what the framework adds of its own to every pass is a status
            // write. Its metadata patches (adding a finalizer) happen once per object.
            let generic = is_type_parameter(&kind);
            // Does the crate write this kind (status, metadata, spec, finalizers)?
            // Point at a write this controller's reconcile reaches, if there is one.
            // The crate's own thin wrappers (`common::patch_status(&api, ..)` over `Api<K>`) write the kind of the
            // `Api` they are handed.
            let writes_kind = |id: crate::unit::FnId| {
                cx.unit
                    .api_calls(id)
                    .chain(cx.unit.wrapper_calls(id))
                    .find(|a| {
                        let counted = if generic {
                            a.is_status_write()
                        } else {
                            // A PATCH or a PUT bumps the object's resourceVersion (a create or delete
                            // ends or starts its life instead).
                            matches!(a.method.verb(), Verb::Patch | Verb::Update)
                        };
                        counted && a.kind.as_deref() == Some(kind.as_str())
                    })
            };
            // The write must be this Controller's own: another Controller writing the same kind is that one's
            // business (and its finding's evidence). Only when which reconcile it runs is unknown does any write
            // reconcile reaches, or any write of the crate, stand in.
            let write = match cx.unit.reach_of(fi, c) {
                Some(own) => own.into_iter().find_map(writes_kind),
                None => cx.reach.keys().find_map(|id| writes_kind(*id)).or_else(|| {
                    if generic {
                        None
                    } else {
                        cx.unit.all_fns().find_map(writes_kind)
                    }
                }),
            };
            // A finalizer alone writes the object twice in its life (add, remove): not a reconcile loop.
            let Some(write) = write else {
                continue;
            };
            let mut f = finding(
                &crate::registry::CA201,
                c.span.clone(),
                When::new(WhenKind::Startup),
                format!(
                    "Controller for `{kind}` has no generation predicate: `{}` comes back as a watch event and triggers another reconcile",
                    write.text
                ),
                help(cx.lang(fi)),
            );
            f.evidence.push(Evidence::Related {
                span: write.span.clone(),
                note: "this write re-triggers the controller".into(),
            });
            out.push(f);
        }
    }
}

/// `K`, `R`, `RESOURCE`: a generic parameter (kinds are CamelCase), not a kind.
fn is_type_parameter(kind: &str) -> bool {
    kind.chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The kind a controller reconciles: from its Api, or else from the object the reconcile it runs takes.
fn controlled_kind(cx: &Ctx<'_>, fi: usize, c: &ControllerModel) -> Option<String> {
    c.kind.clone().or_else(|| {
        cx.unit
            .reconcile_fns(fi, c)
            .iter()
            .find_map(|id| cx.unit.func(*id).object_kind.clone())
    })
}

/// A generation-only predicate with `finalizer()`: the update that adds the finalizer bumps no
/// generation, so the reconcile that should follow it never comes (kube-rs-facts: combine them).
fn finalizer_hidden(
    cx: &Ctx<'_>,
    fi: usize,
    c: &ControllerModel,
    out: &mut Vec<Finding>,
) {
    if !hides_finalizers(c) {
        return;
    }
    let kind = controlled_kind(cx, fi, c);
    let uses_finalizer = cx.unit.all_fns().any(|id| {
        let f = cx.unit.func(id);
        f.uses_finalizer && cx.reach.contains_key(&id) && f.object_kind == kind
    });
    if !uses_finalizer {
        return;
    }
    let kind = kind.map(|k| format!(" for `{k}`")).unwrap_or_default();
    out.push(finding(
        &crate::registry::CA201,
        c.span.clone(),
        When::new(WhenKind::Startup),
        format!(
            "Controller{kind} filters with a generation-only predicate but its reconcile uses `finalizer()`: adding the finalizer bumps no generation, so that update is filtered out"
        ),
        "combine the predicates: `predicate_filter(predicates::generation.combine(predicates::finalizers), Default::default())`",
    ));
}
