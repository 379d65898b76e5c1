//! Validation of writes: request + current state -> transaction or error code.
//!
//! Checks run in the order ZooKeeper's `PrepRequestProcessor` runs them, so that a request
//! that is wrong in several ways gets the same error from both servers. Nothing here mutates
//! state; a `multi` validates each op against a [`View`] that overlays the effects of the ops
//! before it (ZooKeeper's "outstanding changes").

use std::collections::HashMap;
use std::ops::Deref;
use std::rc::Rc;

use rzk_proto::{perms, Acl, CreateMode, CreateOp, CreateRequest, ErrorCode, Id, MultiOp};

use crate::acl;
use crate::path::{self, validate_path};
use crate::state::{State, SPECIAL_PATHS};
use crate::txn::{is_session_owner, ttl_owner, TxnOp, CONTAINER_OWNER, TTL_MS_MAX};

/// What validation needs to know about a node.
#[derive(Debug, Clone)]
struct Meta<'a> {
    version: i32,
    cversion: i32,
    aversion: i32,
    ephemeral_owner: i64,
    num_children: usize,
    acl: AclRef<'a>,
}

/// A node's ACL as a multi sees it: the tree's, or one set earlier in the same multi. Shared,
/// not copied, each time a later op looks the node up.
#[derive(Debug, Clone)]
enum AclRef<'a> {
    Tree(&'a [Acl]),
    Multi(Rc<[Acl]>),
}

impl Deref for AclRef<'_> {
    type Target = [Acl];

    fn deref(&self) -> &[Acl] {
        match self {
            AclRef::Tree(acl) => acl,
            AclRef::Multi(acl) => acl,
        }
    }
}

/// The state as a write sees it: the tree plus the effects of earlier ops in the same multi.
pub(crate) struct View<'a> {
    state: &'a State,
    overlay: HashMap<String, Option<Meta<'a>>>,
}

/// Who is asking.
pub(crate) struct Caller<'a> {
    pub session_id: i64,
    pub auth: &'a [Id],
    pub extended_types_enabled: bool,
    pub acl_limits: acl::AclLimits,
    /// Most bytes one multi's creates may add to their ACLs by expanding `auth` entries.
    pub txn_acl_bytes_max: usize,
}

impl<'a> View<'a> {
    pub(crate) fn new(state: &'a State) -> Self {
        View { state, overlay: HashMap::new() }
    }

    fn get(&self, p: &str) -> Option<Meta<'a>> {
        if let Some(m) = self.overlay.get(p) {
            return m.clone();
        }
        let n = self.state.node(p)?;
        Some(Meta {
            version: n.meta.version,
            cversion: n.meta.cversion,
            aversion: n.meta.aversion,
            ephemeral_owner: n.meta.ephemeral_owner,
            num_children: n.children.len(),
            acl: AclRef::Tree(self.state.acl_of(n)),
        })
    }

    /// Records the effect of a validated op so later ops in the multi see it.
    fn record(&mut self, op: &TxnOp) {
        match op {
            TxnOp::Create { path: p, acl, ephemeral_owner, .. } => {
                let parent = path::parent(p).expect("validated");
                if let Some(mut m) = self.get(parent) {
                    m.cversion = m.cversion.wrapping_add(1);
                    m.num_children += 1;
                    self.overlay.insert(parent.to_string(), Some(m));
                }
                let meta = Meta {
                    version: 0,
                    cversion: 0,
                    aversion: 0,
                    ephemeral_owner: *ephemeral_owner,
                    num_children: 0,
                    acl: AclRef::Multi(Rc::from(acl.as_slice())),
                };
                self.overlay.insert(p.clone(), Some(meta));
            }
            TxnOp::Delete { path: p } => {
                let parent = path::parent(p).expect("validated");
                if let Some(mut m) = self.get(parent) {
                    m.num_children = m.num_children.saturating_sub(1);
                    self.overlay.insert(parent.to_string(), Some(m));
                }
                self.overlay.insert(p.clone(), None);
            }
            TxnOp::SetData { path: p, version, .. } => {
                if let Some(mut m) = self.get(p) {
                    m.version = *version;
                    self.overlay.insert(p.clone(), Some(m));
                }
            }
            TxnOp::SetAcl { path: p, acl, aversion } => {
                if let Some(mut m) = self.get(p) {
                    m.aversion = *aversion;
                    m.acl = AclRef::Multi(Rc::from(acl.as_slice()));
                    self.overlay.insert(p.clone(), Some(m));
                }
            }
            _ => {}
        }
    }
}

type Prep<T> = Result<T, ErrorCode>;

/// `checkAndIncVersion`: -1 matches anything; the new version wraps like Java's int.
fn check_version(current: i32, expected: i32) -> Prep<i32> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BadVersion);
    }
    Ok(current.wrapping_add(1))
}

fn require(allowed: bool) -> Prep<()> {
    if allowed {
        Ok(())
    } else {
        Err(ErrorCode::NoAuth)
    }
}

fn valid(p: &str) -> Prep<()> {
    validate_path(p).map_err(|_| ErrorCode::BadArguments)
}

pub(crate) fn create(view: &View<'_>, c: &Caller<'_>, req: &CreateRequest) -> Prep<TxnOp> {
    let mode = CreateMode::from_flags(req.flags).ok_or(ErrorCode::BadArguments)?;
    if mode.is_ttl() {
        if !c.extended_types_enabled {
            return Err(ErrorCode::Unimplemented);
        }
        if req.ttl_ms <= 0 || req.ttl_ms > TTL_MS_MAX {
            return Err(ErrorCode::BadArguments);
        }
    } else if req.op == CreateOp::Ttl && req.ttl_ms >= 0 {
        return Err(ErrorCode::BadArguments);
    }
    if req.path.contains('\0') {
        return Err(ErrorCode::BadArguments);
    }
    let parent = path::parent(&req.path).ok_or(ErrorCode::BadArguments)?;
    let acl = acl::fixup(&req.acl, c.auth, c.acl_limits).ok_or(ErrorCode::InvalidAcl)?;
    let pmeta = view.get(parent).ok_or(ErrorCode::NoNode)?;
    require(acl::check(&pmeta.acl, perms::CREATE, c.auth))?;
    let final_path = if mode.is_sequential() {
        format!("{}{:010}", req.path, pmeta.cversion)
    } else {
        req.path.clone()
    };
    valid(&final_path)?;
    if view.get(&final_path).is_some() {
        return Err(ErrorCode::NodeExists);
    }
    if is_session_owner(pmeta.ephemeral_owner) {
        return Err(ErrorCode::NoChildrenForEphemerals);
    }
    let ephemeral_owner = match mode {
        _ if mode.is_ephemeral() => c.session_id,
        CreateMode::Container => CONTAINER_OWNER,
        _ if mode.is_ttl() => ttl_owner(req.ttl_ms),
        _ => 0,
    };
    Ok(TxnOp::Create {
        path: final_path,
        data: req.data.clone(),
        acl,
        ephemeral_owner,
        parent_cversion: pmeta.cversion.wrapping_add(1),
    })
}

pub(crate) fn delete(view: &View<'_>, c: &Caller<'_>, p: &str, version: i32) -> Prep<TxnOp> {
    if p.contains('\0') || SPECIAL_PATHS.contains(&p) {
        return Err(ErrorCode::BadArguments);
    }
    let parent = path::parent(p).ok_or(ErrorCode::BadArguments)?;
    let pmeta = view.get(parent).ok_or(ErrorCode::NoNode)?;
    require(acl::check(&pmeta.acl, perms::DELETE, c.auth))?;
    let meta = view.get(p).ok_or(ErrorCode::NoNode)?;
    check_version(meta.version, version)?;
    if meta.num_children > 0 {
        return Err(ErrorCode::NotEmpty);
    }
    Ok(TxnOp::Delete { path: p.to_string() })
}

pub(crate) fn set_data(
    view: &View<'_>,
    c: &Caller<'_>,
    p: &str,
    data: &Option<Vec<u8>>,
    version: i32,
) -> Prep<TxnOp> {
    valid(p)?;
    let meta = view.get(p).ok_or(ErrorCode::NoNode)?;
    require(acl::check(&meta.acl, perms::WRITE, c.auth))?;
    let version = check_version(meta.version, version)?;
    Ok(TxnOp::SetData { path: p.to_string(), data: data.clone(), version })
}

pub(crate) fn set_acl(
    view: &View<'_>,
    c: &Caller<'_>,
    p: &str,
    acl: &[Acl],
    version: i32,
) -> Prep<TxnOp> {
    valid(p)?;
    let acl = acl::fixup(acl, c.auth, c.acl_limits).ok_or(ErrorCode::InvalidAcl)?;
    let meta = view.get(p).ok_or(ErrorCode::NoNode)?;
    require(acl::check(&meta.acl, perms::ADMIN, c.auth))?;
    let aversion = check_version(meta.aversion, version)?;
    Ok(TxnOp::SetAcl { path: p.to_string(), acl, aversion })
}

pub(crate) fn check(view: &View<'_>, c: &Caller<'_>, p: &str, version: i32) -> Prep<TxnOp> {
    valid(p)?;
    let meta = view.get(p).ok_or(ErrorCode::NoNode)?;
    require(acl::check(&meta.acl, perms::READ, c.auth))?;
    check_version(meta.version, version)?;
    Ok(TxnOp::Check { path: p.to_string() })
}

/// Validates a multi. On failure returns the index of the failing op and its error.
pub(crate) fn multi(
    state: &State,
    c: &Caller<'_>,
    ops: &[MultiOp],
) -> Result<Vec<TxnOp>, (usize, ErrorCode)> {
    let mut view = View::new(state);
    let mut out = Vec::with_capacity(ops.len());
    let mut acl_grown = 0usize;
    for (i, op) in ops.iter().enumerate() {
        let txn = match op {
            MultiOp::Create(req) => create(&view, c, req),
            MultiOp::Delete { path, version } => delete(&view, c, path, *version),
            MultiOp::SetData { path, data, version } => set_data(&view, c, path, data, *version),
            MultiOp::Check { path, version } => check(&view, c, path, *version),
            MultiOp::GetData { .. } | MultiOp::GetChildren { .. } => Err(ErrorCode::BadArguments),
        }
        .map_err(|e| (i, e))?;
        if let (TxnOp::Create { acl, .. }, MultiOp::Create(req)) = (&txn, op) {
            // Each op's `auth` entries are expanded on their own, so a multi of small creates
            // could otherwise carry thousands of full-size lists in one transaction. Only the
            // growth counts: what the request carried itself was already bounded by its frame.
            let wire = |l: &[Acl]| l.iter().map(acl::wire_bytes).sum::<usize>();
            acl_grown = acl_grown.saturating_add(wire(acl).saturating_sub(wire(&req.acl)));
            if acl_grown > c.txn_acl_bytes_max {
                return Err((i, ErrorCode::InvalidAcl));
            }
        }
        view.record(&txn);
        out.push(txn);
    }
    Ok(out)
}
