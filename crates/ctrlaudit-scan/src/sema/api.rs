//! The API server operations a controller's calls make, typed: which Kubernetes verb, on which subresource. A
//! front end maps its client library's method names onto them (kube-rs's `Api::patch_status`, and next
//! controller-runtime's `Status().Patch`); rules judge the verb and the subresource, never a method's spelling.

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
