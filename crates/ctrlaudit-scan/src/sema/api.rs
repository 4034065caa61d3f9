//! The API server operations a controller's calls make, typed: which Kubernetes verb, on which subresource. A
//! front end maps its client library's method names onto them (kube-rs's `Api::patch_status`, and next
//! controller-runtime's `Status().Patch`); rules judge the verb and the subresource, never a method's spelling.
//! A call site of one (`ApiCall`) carries where it is and on which path.

use super::ClientRef;
use crate::finding::Span;
use std::fmt;

/// The Kubernetes verb of a request, as RBAC and audit logs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    Get,
    List,
    Create,
    /// A PUT of the whole object (`replace`).
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

/// The part of the object a request reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The object itself (spec, metadata and, without a status subresource, status).
    Object,
    /// Only `metadata` (`get_metadata`, `patch_metadata`, `list_metadata`).
    Metadata,
    /// The `/status` subresource.
    Status,
    /// The `/scale` subresource.
    Scale,
}

/// An operation of a typed client on one kind (kube-rs's `Api<K>` methods), by what it asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiMethod {
    Get,
    GetOpt,
    GetMetadata,
    GetMetadataOpt,
    GetStatus,
    GetScale,
    List,
    ListMetadata,
    /// The entry API's read (`api.entry(name)`): a GET before a later `commit`.
    Entry,
    Create,
    Replace,
    ReplaceStatus,
    Patch,
    PatchStatus,
    PatchMetadata,
    Delete,
    DeleteCollection,
    /// The entry API's write (`entry.commit(..)`): a create or a replace of what `entry` read.
    Commit,
}

impl ApiMethod {
    /// Every operation, for front ends that map names onto them.
    pub const ALL: [ApiMethod; 18] = [
        Self::Get,
        Self::GetOpt,
        Self::GetMetadata,
        Self::GetMetadataOpt,
        Self::GetStatus,
        Self::GetScale,
        Self::List,
        Self::ListMetadata,
        Self::Entry,
        Self::Create,
        Self::Replace,
        Self::ReplaceStatus,
        Self::Patch,
        Self::PatchStatus,
        Self::PatchMetadata,
        Self::Delete,
        Self::DeleteCollection,
        Self::Commit,
    ];

    /// The verb the request is sent with.
    pub fn verb(self) -> Verb {
        use ApiMethod::*;
        match self {
            Get | GetOpt | GetMetadata | GetMetadataOpt | GetStatus | GetScale | Entry => Verb::Get,
            List | ListMetadata => Verb::List,
            Create => Verb::Create,
            Replace | ReplaceStatus | Commit => Verb::Update,
            Patch | PatchStatus | PatchMetadata => Verb::Patch,
            Delete => Verb::Delete,
            DeleteCollection => Verb::DeleteCollection,
        }
    }

    /// The part of the object it reads or writes.
    pub fn target(self) -> Target {
        use ApiMethod::*;
        match self {
            GetMetadata | GetMetadataOpt | ListMetadata | PatchMetadata => Target::Metadata,
            GetStatus | ReplaceStatus | PatchStatus => Target::Status,
            GetScale => Target::Scale,
            _ => Target::Object,
        }
    }

    pub fn is_read(self) -> bool {
        matches!(self.verb(), Verb::Get | Verb::List)
    }

    pub fn is_write(self) -> bool {
        !self.is_read()
    }

    /// Writes the `/status` subresource.
    pub fn is_status_write(self) -> bool {
        self.is_write() && self.target() == Target::Status
    }

    /// Sends a body that replaces or patches an object or a part of it (not a create, a delete or a commit).
    pub fn writes_body(self) -> bool {
        matches!(self.verb(), Verb::Update | Verb::Patch) && self != Self::Commit
    }

    /// Creates, deletes or writes a status: a step of the object's life, not a routine apply.
    pub fn changes_state(self) -> bool {
        self == Self::Create || self.is_status_write()
    }

    /// The operation kube-rs's `Api` names `name` (`patch_status`), if any.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// kube-rs's name of the method, for messages (`patch_status`).
    pub fn name(self) -> &'static str {
        use ApiMethod::*;
        match self {
            Get => "get",
            GetOpt => "get_opt",
            GetMetadata => "get_metadata",
            GetMetadataOpt => "get_metadata_opt",
            GetStatus => "get_status",
            GetScale => "get_scale",
            List => "list",
            ListMetadata => "list_metadata",
            Entry => "entry",
            Create => "create",
            Replace => "replace",
            ReplaceStatus => "replace_status",
            Patch => "patch",
            PatchStatus => "patch_status",
            PatchMetadata => "patch_metadata",
            Delete => "delete",
            DeleteCollection => "delete_collection",
            Commit => "commit",
        }
    }
}

impl ApiMethod {
    /// How code in `lang` spells the operation: kube-rs's `Api` method (`patch_status`), controller-runtime's
    /// client method (`Status().Patch`).
    pub fn spelled(self, lang: super::Lang) -> &'static str {
        match lang {
            super::Lang::Rust => self.name(),
            super::Lang::Go => match self {
                Self::Get
                | Self::GetOpt
                | Self::GetMetadata
                | Self::GetMetadataOpt
                | Self::Entry => "Get",
                Self::GetStatus => "Get",
                Self::GetScale => "SubResource(\"scale\").Get",
                Self::List | Self::ListMetadata => "List",
                Self::Create => "Create",
                Self::Replace | Self::Commit => "Update",
                Self::ReplaceStatus => "Status().Update",
                Self::Patch | Self::PatchMetadata => "Patch",
                Self::PatchStatus => "Status().Patch",
                Self::Delete => "Delete",
                Self::DeleteCollection => "DeleteAllOf",
            },
        }
    }
}

impl fmt::Display for ApiMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A sign in code that it tells one API error from another: a status code, a reason, a predicate or a constant
/// it names. The front end records what a body names; which signs mean "409 Conflict" is decided here, once,
/// for every language and rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorSign {
    /// An HTTP status code (`e.code == 409`, `409 =>`, `"409"`).
    Code(u16),
    /// A one-word reason (`reason == "Conflict"`).
    Reason(String),
    /// A predicate called on an error (`is_conflict()`).
    Predicate(String),
    /// An upper-case constant (`StatusCode::CONFLICT`).
    Constant(String),
}

/// The sign of a function that runs calls in a conflict retry (`retry.RetryOnConflict`, Go): those calls handle
/// a 409 (`in_retry`), the function's others need not.
pub const RETRY_ON_CONFLICT: &str = "retry_on_conflict";

/// The callee a Go function is recorded as handed to (`FnModel::func_args`) when a conflict retry runs it, or
/// the closure it returns (`retry.RetryOnConflict(backoff, r.update(ctx, req))`).
pub const RETRIED: &str = "k8s.io/client-go/util/retry::RetryOnConflict";

impl ErrorSign {
    /// Tests for a 409 itself (`apierrors.IsConflict(err)`), which may be of any of the function's calls.
    pub fn tests_conflict(&self) -> bool {
        self.is_conflict() && !matches!(self, Self::Predicate(p) if p == RETRY_ON_CONFLICT)
    }

    /// Names the 409 Conflict the API server answers a write whose resourceVersion is stale.
    pub fn is_conflict(&self) -> bool {
        match self {
            Self::Code(c) => *c == 409,
            Self::Reason(r) => r == "Conflict",
            Self::Predicate(p) => p.contains("is_conflict") || p == RETRY_ON_CONFLICT,
            Self::Constant(c) => c.contains("CONFLICT"),
        }
    }
}

/// Whether code showing `signs` tells a 409 Conflict apart.
pub fn tells_conflict(signs: &[ErrorSign]) -> bool {
    signs.iter().any(ErrorSign::is_conflict)
}

/// The condition of the branch a call is on, as written (whitespace collapsed, cut at
/// [`Guard::MAX_TEXT`] characters), and what kind of condition it is: what a finding says of when it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    pub kind: GuardKind,
    pub text: String,
}

impl Guard {
    pub const MAX_TEXT: usize = 60;
}

/// What a branch's condition asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardKind {
    /// Did the spec change: a generation compared with the observed one, a spec hash, or the spec compared with
    /// the one last acted on.
    SpecChange,
    /// Does the actual state differ from the desired one: a `!=` comparison, a `needs_update`-style flag.
    Drift,
    /// Anything else (a feature switched on in the spec, an `Option` present): the branch runs on every pass on
    /// which its condition holds.
    Other,
}

/// A call of a kube `Api` method. `M` is what it asks of the API server; `()` before it is known.
#[derive(Debug, Clone)]
pub struct ApiCall<M = ApiMethod> {
    /// What it asks of the API server: verb and subresource.
    pub method: M,
    pub span: Span,
    /// The `K` of `Api<K>` when known.
    pub kind: Option<String>,
    /// The body of a patch/replace sets a top-level `status`.
    pub body_has_status: bool,
    /// Inside the body of a `for`/`while` loop and awaited there.
    pub awaited_in_iteration: bool,
    /// Inside `loop`/`while` (a retry shape) or a closure handed to a retry helper.
    pub in_retry: bool,
    /// The error is propagated with `?`, `unwrap()` or `expect()` (Go: not dropped, see `branches::drops_result`).
    pub propagated: bool,
    /// On an error path (see `Requeue::on_error`): a create → 409 → get arm, a fallback after a failure.
    pub on_error: bool,
    /// Inside an `if`/`match` branch, and right after this reconcile changed something (see
    /// `Requeue::after_change`): a read-your-write, not a read on every pass.
    pub after_change_on_branch: bool,
    /// Inside an `if`/`match` branch of its function.
    pub on_branch: bool,
    /// On the deletion path (see [`CallPath::Deletion`]).
    pub on_deletion: bool,
    /// The condition of the innermost `if` it is under, when that condition says when it runs.
    pub guard: Option<Guard>,
    /// On a branch arm that, after this call, creates, deletes or writes a status (an API call, or a call of a
    /// function named for it: `set_phase`, `update_status`): a creation or state-transition step, which runs until
    /// its write lands rather than on every pass.
    pub then_writes_on_branch: bool,
    /// In a match arm on a phase, after code of that arm set the phase to another variant (see [`leaves_phase`]):
    /// the write that moves the object on, once, not a write of every pass in that phase.
    pub leaves_phase: bool,
    /// A server-side apply (`Patch::Apply`, `PatchParams::apply(..)`): puts an object in its desired state.
    pub server_side_apply: bool,
    /// A list limited to a few items (`metav1.ListOptions{Limit: 1}`): it costs the API server what a get does.
    pub one_page: bool,
    /// A PUT of an object this function built from a literal and never read into (`ds := &apps.DaemonSet{..}`
    /// then `Update(ctx, ds, ..)`): it carries no resourceVersion, so the API server never answers it 409.
    pub unversioned: bool,
    /// A read served from the client's informer cache (controller-runtime's manager client), not by the API
    /// server. kube-rs's `Api` reads are never cached.
    pub cached: bool,
    /// The client it is made on, where only the join can tell whether that client has a cache (Go).
    pub client: Option<ClientRef>,
    /// Rendered receiver and method for messages: `api.patch`.
    pub text: String,
    /// The receiver is what a function returns (`ctx.process_api(ns).get(..)`, or a binding of it) whose type
    /// this file does not know: (its name, called as a method). An API call only if the crate join finds that
    /// function returning an `Api` (see `Unit::api_calls`).
    pub via_producer: Option<(String, bool)>,
}

impl<M> ApiCall<M> {
    /// The same call site, making `method`.
    pub fn with_method<N>(self, method: N) -> ApiCall<N> {
        ApiCall {
            method,
            span: self.span,
            kind: self.kind,
            body_has_status: self.body_has_status,
            awaited_in_iteration: self.awaited_in_iteration,
            in_retry: self.in_retry,
            propagated: self.propagated,
            on_error: self.on_error,
            after_change_on_branch: self.after_change_on_branch,
            on_branch: self.on_branch,
            on_deletion: self.on_deletion,
            guard: self.guard,
            then_writes_on_branch: self.then_writes_on_branch,
            leaves_phase: self.leaves_phase,
            server_side_apply: self.server_side_apply,
            one_page: self.one_page,
            unversioned: self.unversioned,
            cached: self.cached,
            client: self.client,
            text: self.text,
            via_producer: self.via_producer,
        }
    }
}

impl ApiCall {
    pub fn is_read(&self) -> bool {
        self.method.is_read()
    }
    pub fn is_write(&self) -> bool {
        self.method.is_write()
    }
    /// Creates, deletes or writes a status: a step of the object's life, not a routine apply.
    pub fn changes_state(&self) -> bool {
        self.method.changes_state()
    }
    pub fn is_status_write(&self) -> bool {
        self.method.is_status_write()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_writes_are_writes_of_the_status_subresource() {
        let status: Vec<_> = ApiMethod::ALL
            .into_iter()
            .filter(|m| m.is_status_write())
            .collect();
        assert_eq!(status, [ApiMethod::ReplaceStatus, ApiMethod::PatchStatus]);
        assert!(ApiMethod::GetStatus.is_read());
        assert_eq!(ApiMethod::Commit.verb(), Verb::Update);
        assert!(!ApiMethod::Commit.writes_body());
    }
}
