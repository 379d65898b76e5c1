//! Which ACL the nodes the recipes create get: Curator's `ACLProvider`. A session's provider
//! names one for each path the recipes create (the participant nodes, the containers and
//! parents made for them); a recipe given its own (`with_acls`) uses that instead, as a
//! Curator builder's `withACL` overrides the provider.

use std::sync::Arc;

use rzk_client::{Acl, Acls};

/// Names the ACL of a node by its path (Curator's `ACLProvider`).
pub trait AclProvider: Send + Sync + 'static {
    /// The ACL of any path the provider does not name otherwise.
    fn default_acl(&self) -> Vec<Acl>;

    /// The ACL of the node created at `path` (the client's path, under any chroot).
    fn acl_for_path(&self, path: &str) -> Vec<Acl> {
        let _ = path;
        self.default_acl()
    }
}

/// ZooKeeper's `OPEN_ACL_UNSAFE` everywhere: Curator's `DefaultACLProvider`, the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAclProvider;

impl AclProvider for OpenAclProvider {
    fn default_acl(&self) -> Vec<Acl> {
        Acls::anyone_all().as_slice().to_vec()
    }
}

/// Everything to the identities of the session that creates the node, and nothing to anyone
/// else (ZooKeeper's `CREATOR_ALL_ACL`): with digest credentials or a SASL login, another
/// identity can neither join a lock nor read who holds it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CreatorOnlyAclProvider;

impl AclProvider for CreatorOnlyAclProvider {
    fn default_acl(&self) -> Vec<Acl> {
        Acls::creator_all().as_slice().to_vec()
    }
}

/// A session's provider, shared by its recipes.
#[derive(Clone)]
pub(crate) struct SharedProvider(pub Arc<dyn AclProvider>);

impl std::fmt::Debug for SharedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AclProvider")
    }
}

impl Default for SharedProvider {
    fn default() -> Self {
        SharedProvider(Arc::new(OpenAclProvider))
    }
}

/// The ACL a recipe creates its nodes with.
#[derive(Clone, Debug)]
pub(crate) struct NodeAcls {
    given: Option<Acls<'static>>,
    provider: SharedProvider,
}

/// The ACL of one node, borrowed for its create.
pub(crate) enum AclAt {
    Given(Acls<'static>),
    Provided(Vec<Acl>),
}

impl AclAt {
    pub(crate) fn acls(&self) -> Acls<'_> {
        match self {
            AclAt::Given(a) => *a,
            AclAt::Provided(v) => Acls::new(v),
        }
    }
}

impl NodeAcls {
    /// `given`, else the provider of `session`'s configuration.
    pub(crate) fn new(session: &crate::session::Session, given: Option<Acls<'static>>) -> NodeAcls {
        NodeAcls { given, provider: session.acl_provider() }
    }

    /// The same, with `acls` for every node.
    pub(crate) fn given(self, acls: Acls<'static>) -> NodeAcls {
        NodeAcls { given: Some(acls), ..self }
    }

    /// The ACL of the node at `path`.
    pub(crate) fn at(&self, path: &str) -> AclAt {
        match self.given {
            Some(a) => AclAt::Given(a),
            None => AclAt::Provided(self.provider.0.acl_for_path(path)),
        }
    }
}
