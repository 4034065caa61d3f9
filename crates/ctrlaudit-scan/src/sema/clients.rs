//! Where a Go client value comes from: the facts a front end records so that the join can tell a read through
//! the manager's cached client from one through a client that has no cache (`client.New`, `GetAPIReader()`),
//! however far the client travelled (a constructor's parameter, a struct field, a helper's result).

use super::Callee;

/// What a value that may be a client was made from.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientOrigin {
    /// A client with no cache: controller-runtime's `client.New(..)`/`client.NewWithWatch(..)`, or a manager's
    /// `GetAPIReader()`.
    Uncached,
    /// The function's parameter at this position (the receiver not counted).
    Param(usize),
    /// What this function of the module returns.
    Returned(Callee),
    /// A manager's informer cache as a reader (`mgr.GetCache()`): it serves every kind, unstructured ones too.
    Cache,
    /// A struct field (`r.client`, handed on): whatever the join traced to it. The struct type's name, the
    /// field's.
    Field(String, String),
}

/// A value stored in a struct field (`kubeClient: c` in a literal, `r.kubeClient = c`): the struct type's name,
/// the field's.
#[derive(Debug, Clone)]
pub struct ClientStore {
    pub ty: String,
    pub field: String,
    pub from: ClientOrigin,
}

/// A value handed to a function of the module (`NewTaskReconciler(noCacheClient, ..)`), by position. Only values
/// whose origin is known (a client made here, a parameter or a field passed on, a function's result) are
/// recorded.
#[derive(Debug, Clone)]
pub struct ClientArg {
    pub callee: Callee,
    pub index: usize,
    pub from: ClientOrigin,
}

/// Which client an API call is made on, where the front end cannot tell yet whether it has a cache. Which client
/// a parameter holds depends on the caller (velero's update helpers get the manager's client from reconcile and
/// one with no cache at start-up): a read through one is judged uncached only when every caller hands one the
/// join traced to no cache.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientRef {
    /// A struct field (`r.kubeClient.Get(..)`): the struct type's name, the field's.
    Field(String, String),
    /// A local holding what this function returned (`rc, err := scope.RemoteClient(); rc.Get(..)`).
    Returned(Callee),
    /// A manager's informer cache, here (`mgr.GetCache().Get(..)`, or a local holding it).
    Cache,
    /// The function's parameter at this position (the receiver not counted): `cl.Get(..)` in
    /// `func getObject(ctx, cl client.Client, ..)`.
    Param(usize),
}

/// One manager's client cache as a function sets it up (see [`FileModel::caches`]): the join gives its
/// `disabled` kinds to the reads of the controllers that function sets up.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheSite {
    pub line: usize,
    /// Kinds read from the API server every time; none for a manager whose client caches every kind.
    pub disabled: Vec<String>,
    /// `Unstructured: true`: unstructured objects are read from the cache too (controller-runtime reads them
    /// from the API server by default).
    pub unstructured: bool,
}
