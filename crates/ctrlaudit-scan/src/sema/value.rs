//! Values as typed expressions: the numbers and durations a requeue is built from, and where the characters of a
//! label value come from. A front end lowers its syntax into these once; the crate join and the rules evaluate
//! them with what the whole crate knows (its consts, the arguments a helper was called with) and never read code
//! text again.

use std::collections::HashMap;

/// A function a value is computed by, named as the crate join resolves it (see `Unit::resolve`).
#[derive(Debug, Clone, PartialEq)]
pub enum Callee {
    /// A method called on some receiver: `err.retry_after()`, `e.metric_label()`.
    Method(String),
    /// A method called on `self`: `self.ensure_service(..)`.
    SelfMethod(String),
    /// A function by its path's last two segments (`requeue::delay`, `Self::label`, `kind`), or as the front end
    /// names it for the crate join (`module::f`, `super::f`, `<generic>::f` for a trait method on a type
    /// parameter).
    Path(String),
    /// A method called on a value whose declared type is another package's (`w watch.Interface`, then `w.Stop()`):
    /// that package's import path and the method. A method of the module when the package is one of its own, and
    /// nothing of the module's when the package is another module's.
    TypedMethod(String, String),
    /// A Go method called on a value whose declared type the front end knows (`s Syncer`, `for _, s := range
    /// []Syncer{..}`, `r.tgbManager` with the field declared `tgbManager Manager`): the join follows it to that
    /// type's method, or to the implementations of that interface, however many types share the method's name.
    OnType(Box<TypeRef>, String),
}

/// A Go type as a declaration names it, for [`Callee::OnType`].
#[derive(Debug, Clone, PartialEq)]
pub struct TypeRef {
    /// The import path of the type's package when it is written qualified (`elbv2.TargetGroupBindingManager`);
    /// `None` for a type of the declaring file's own package.
    pub package: Option<String>,
    pub name: String,
    /// The value is this field of a value of the type (`s.tgbManager`, `s` a `*synthesizer`): its type is the
    /// one the field is declared with.
    pub field: Option<String>,
    /// The value is what this method returns, called on that value (`cache := c.mgr.GetCache()`): of another
    /// module's type when the method is, since another module returns none of the module's types.
    pub result_of: Option<String>,
}

impl TypeRef {
    /// A built-in object kind of a `k8s.io/api/…` package (`*v1.Pod`): an object, whose `Name` and `Namespace`
    /// are its identity. Other types of API packages are mostly parts of objects (a spec, a header match) whose
    /// `Name` is no object's.
    pub fn is_builtin_object(&self) -> bool {
        self.package
            .as_deref()
            .is_some_and(|p| p.starts_with("k8s.io/api/"))
            && (crate::unit::BUILTIN_WITH_STATUS.contains(&self.name.as_str())
                || crate::unit::NO_GENERATION.contains(&self.name.as_str())
                || OTHER_BUILTIN_KINDS.contains(&self.name.as_str()))
    }
}

/// Built-in kinds neither [`crate::unit::BUILTIN_WITH_STATUS`] nor [`crate::unit::NO_GENERATION`] lists.
const OTHER_BUILTIN_KINDS: &[&str] = &[
    "EndpointSlice",
    "StorageClass",
    "VolumeAttachment",
    "CSINode",
    "CSIDriver",
    "ResourceClaim",
    "ResourceSlice",
    "ControllerRevision",
    "PodTemplate",
    "LimitRange",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "IngressClass",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
];

impl Callee {
    /// The function's own name, without module or receiver.
    pub fn name(&self) -> &str {
        match self {
            Callee::Method(n) | Callee::SelfMethod(n) => n,
            Callee::Path(p) => p.rsplit("::").next().unwrap_or(p),
            Callee::TypedMethod(_, m) | Callee::OnType(_, m) => m,
        }
    }
}

/// Arithmetic the evaluator follows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// A number or a duration as written, lowered: what is constant evaluates, what is not stays named.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A number literal.
    Num(f64),
    /// A duration constant of a time library, in seconds (`Duration::ZERO`, `Duration::SECOND`).
    Secs(f64),
    /// A name: a const of the crate (by its last segment when `qualified`: `consts::RETRY`), or, when bare, a
    /// parameter whose argument the crate join may know.
    Name { name: String, qualified: bool },
    /// `Duration::from_secs(n)`, `from_millis`, `chrono::Duration::seconds`: `arg` × `scale` seconds.
    FromUnit { scale: f64, arg: Box<Value> },
    /// `Duration::new(secs, nanos)`.
    DurationNew { secs: Box<Value>, nanos: Box<Value> },
    /// `d.as_secs()`, `d.as_millis()`: a duration as a number, × `scale`.
    AsUnit { scale: f64, of: Box<Value> },
    Binary {
        op: Op,
        left: Box<Value>,
        right: Box<Value>,
    },
    /// `a.min(b)`.
    Min(Box<Value>, Box<Value>),
    /// `a.max(b)`.
    Max(Box<Value>, Box<Value>),
    /// `if c { a } else { b }`: one of two, chosen at run time.
    Choice {
        then: Box<Value>,
        otherwise: Box<Value>,
    },
    /// `x.unwrap_or(d)`, `x.unwrap_or_else(|| d)`: what `of` gives, or `default`.
    OrDefault { of: Box<Value>, default: Box<Value> },
    /// What a function returns.
    Call {
        callee: Callee,
        receiver: Option<Box<Value>>,
        args: Vec<Value>,
    },
    /// Randomised (`rand`, `jitter`): deliberately not a constant.
    Jittered,
    /// Anything else.
    Unknown,
}

/// Names the evaluator may know beyond the crate's consts: a helper's parameters bound to the arguments of the
/// call being followed.
pub type Bindings<'a> = &'a dyn Fn(&str) -> Option<Value>;

/// No bindings.
pub fn unbound(_: &str) -> Option<Value> {
    None
}

impl Value {
    /// The value as a number, with the crate's `consts` (durations among them, in seconds).
    pub fn number(&self, consts: &HashMap<String, f64>, args: Bindings<'_>) -> Option<f64> {
        match self {
            Value::Num(n) => Some(*n),
            Value::Name { name, qualified } => consts.get(name).copied().or_else(|| {
                (!qualified)
                    .then(|| args(name))
                    .flatten()?
                    .number(consts, &unbound)
            }),
            Value::AsUnit { scale, of } => Some(of.secs(consts, &unbound)? * scale),
            Value::Min(a, b) => Some(a.number(consts, args)?.min(b.number(consts, args)?)),
            Value::Max(a, b) => Some(a.number(consts, args)?.max(b.number(consts, args)?)),
            Value::Binary { op, left, right } => {
                let (l, r) = (left.number(consts, args)?, right.number(consts, args)?);
                match op {
                    Op::Add => Some(l + r),
                    Op::Sub => Some(l - r),
                    Op::Mul => Some(l * r),
                    Op::Div => (r != 0.0).then(|| l / r),
                }
            }
            _ => None,
        }
    }

    /// The value as a duration in seconds. `None` when computed at run time or jittered.
    pub fn secs(&self, consts: &HashMap<String, f64>, args: Bindings<'_>) -> Option<f64> {
        match self {
            Value::Secs(s) => Some(*s),
            Value::Name { name, qualified } => consts.get(name).copied().or_else(|| {
                (!qualified)
                    .then(|| args(name))
                    .flatten()?
                    .secs(consts, &unbound)
            }),
            Value::FromUnit { scale, arg } => Some(arg.number(consts, args)? * scale),
            Value::DurationNew { secs, nanos } => {
                Some(secs.number(consts, args)? + nanos.number(consts, args).unwrap_or(0.0) / 1e9)
            }
            Value::Binary { op, left, right } => {
                let l = left.secs(consts, args);
                let r = right.secs(consts, args);
                match (l, r, op) {
                    (Some(l), Some(r), Op::Add) => Some(l + r),
                    (Some(l), None, Op::Mul) => Some(l * right.number(consts, args)?),
                    (None, Some(r), Op::Mul) => Some(r * left.number(consts, args)?),
                    (Some(l), None, Op::Div) => {
                        let d = right.number(consts, args)?;
                        (d != 0.0).then(|| l / d)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// An upper bound of a duration that is computed but capped: `Duration::from_secs(left.min(5).max(1))` is at
    /// most 5 s, whatever `left` is. `None` when nothing caps it.
    pub fn secs_at_most(&self, consts: &HashMap<String, f64>) -> Option<f64> {
        if let Some(s) = self.secs(consts, &unbound) {
            return Some(s);
        }
        match self {
            Value::FromUnit { scale, arg } if *scale >= 1e-3 => {
                Some(arg.number_at_most(consts)? * scale)
            }
            Value::Min(a, b) => {
                let cap = b.secs_at_most(consts);
                cap.into_iter()
                    .chain(a.secs_at_most(consts))
                    .reduce(f64::min)
            }
            _ => None,
        }
    }

    /// [`Value::secs_at_most`] for a number: `x.min(5)` is at most 5; `.max(1)` after it keeps the cap; `if c { 300 }
    /// else { 10 }` counts as its shorter value, which holds while the condition does.
    fn number_at_most(&self, consts: &HashMap<String, f64>) -> Option<f64> {
        if let Some(v) = self.number(consts, &unbound) {
            return Some(v);
        }
        match self {
            Value::Choice { then, otherwise } => Some(
                then.number_at_most(consts)?
                    .min(otherwise.number_at_most(consts)?),
            ),
            Value::Min(a, b) => {
                let cap = b.number_at_most(consts);
                cap.into_iter()
                    .chain(a.number_at_most(consts))
                    .reduce(f64::min)
            }
            Value::Max(a, b) => Some(a.number_at_most(consts)?.max(b.number(consts, &unbound)?)),
            _ => None,
        }
    }

    /// Is some part of the value chosen by a run-time condition?
    pub fn is_chosen(&self) -> bool {
        self.any(&|v| matches!(v, Value::Choice { .. }))
    }

    /// Is some part of the value randomised?
    pub fn is_jittered(&self) -> bool {
        self.any(&|v| matches!(v, Value::Jittered))
    }

    /// Does `pred` hold for this value or any value it is built from?
    pub fn any(&self, pred: &dyn Fn(&Value) -> bool) -> bool {
        if pred(self) {
            return true;
        }
        match self {
            Value::FromUnit { arg: a, .. } | Value::AsUnit { of: a, .. } => a.any(pred),
            Value::DurationNew { secs: a, nanos: b }
            | Value::Binary {
                left: a, right: b, ..
            }
            | Value::Min(a, b)
            | Value::Max(a, b)
            | Value::Choice {
                then: a,
                otherwise: b,
            }
            | Value::OrDefault { of: a, default: b } => a.any(pred) || b.any(pred),
            Value::Call { receiver, args, .. } => {
                receiver.as_ref().is_some_and(|r| r.any(pred)) || args.iter().any(|a| a.any(pred))
            }
            _ => false,
        }
    }
}

/// Where some characters of a text come from, when they grow with the objects or errors seen.
#[derive(Debug, Clone, PartialEq)]
pub enum TextSource {
    /// An object's name, namespace or uid (`obj.name_any()`, `metadata.uid`).
    ObjectIdentity,
    /// An error's message (`e.to_string()`).
    ErrorText,
    /// A value's Debug text (`{:?}`); `of_self` when it is the receiver's own (`{self:?}`).
    Debug { of_self: bool },
    /// The function's parameter at this position (the receiver not counted): what it carries is what the
    /// function's callers pass (see [`crate::sema::Call::args`]).
    Param(usize),
}

/// A text value: a metric label's value, or what a function returns as text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextExpr {
    /// As written, compacted, for messages; no judgement reads it.
    pub display: String,
    /// What its characters are built from, as far as the front end can tell.
    pub sources: Vec<TextSource>,
    /// The whole text is what one function returns (`e.metric_label()`, `labels::of(kind)`): the crate join can
    /// look at that function's returned text.
    pub call: Option<Callee>,
    /// The bindings it formats, when it is a `format!` (`format!("{phase:?}")`, `format!("{}", phase)`).
    pub formats: Vec<String>,
}

impl TextExpr {
    /// Does it carry an object's identity or an error's text (not a Debug text: whose that is, is a judgement)?
    pub fn carries_identity_or_error(&self) -> bool {
        self.sources
            .iter()
            .any(|s| matches!(s, TextSource::ObjectIdentity | TextSource::ErrorText))
    }

    /// The positions of the function's parameters it is made of.
    pub fn params(&self) -> impl Iterator<Item = usize> + '_ {
        self.sources.iter().filter_map(|s| match s {
            TextSource::Param(i) => Some(*i),
            _ => None,
        })
    }

    pub fn has_debug(&self) -> bool {
        self.sources
            .iter()
            .any(|s| matches!(s, TextSource::Debug { .. }))
    }

    pub fn debug_of_self(&self) -> bool {
        self.sources.contains(&TextSource::Debug { of_self: true })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Box<Value> {
        Box::new(Value::Name {
            name: n.into(),
            qualified: false,
        })
    }
    fn from_secs(v: Value) -> Value {
        Value::FromUnit {
            scale: 1.0,
            arg: Box::new(v),
        }
    }

    #[test]
    fn constants_evaluate_and_run_time_values_do_not() {
        let consts = HashMap::from([("REQUEUE".to_string(), 10.0)]);
        let five_minutes = from_secs(Value::Binary {
            op: Op::Mul,
            left: Box::new(Value::Num(5.0)),
            right: Box::new(Value::Num(60.0)),
        });
        assert_eq!(five_minutes.secs(&consts, &unbound), Some(300.0));
        assert_eq!(
            from_secs(*name("REQUEUE")).secs(&consts, &unbound),
            Some(10.0)
        );
        assert_eq!(from_secs(*name("left")).secs(&consts, &unbound), None);
    }

    #[test]
    fn a_parameter_takes_the_value_it_was_given() {
        let consts = HashMap::from([("SHORT".to_string(), 5.0)]);
        let v = from_secs(*name("secs"));
        let given = |n: &str| (n == "secs").then(|| *name("SHORT"));
        assert_eq!(v.secs(&consts, &given), Some(5.0));
        assert_eq!(v.secs(&consts, &unbound), None);
    }

    #[test]
    fn a_capped_or_chosen_duration_has_an_upper_bound() {
        let consts = HashMap::from([("RETRY".to_string(), 5.0)]);
        let capped = from_secs(Value::Max(
            Box::new(Value::Min(name("left"), name("RETRY"))),
            Box::new(Value::Num(1.0)),
        ));
        assert_eq!(capped.secs_at_most(&consts), Some(5.0));
        let chosen = from_secs(Value::Choice {
            then: Box::new(Value::Num(300.0)),
            otherwise: Box::new(Value::Num(10.0)),
        });
        assert!(chosen.is_chosen());
        assert_eq!(chosen.secs_at_most(&consts), Some(10.0));
        assert_eq!(from_secs(*name("left")).secs_at_most(&consts), None);
    }
}
