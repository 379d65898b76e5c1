//! An election, a lock, a queue or a barrier as its members see it: who leads or holds, who
//! waits, in order, with each one's token (its node's czxid) and owning session. Elections
//! and locks are read with the recipes' own readers, so the order is the one a recipe
//! decides by.

use rzk_client::{Client, MultiReadResult};
use rzk_recipes::election::{
    LatchOptions, LeaderLatch, Participant, Participants, RaceElection, RaceOptions,
};
use rzk_recipes::lock::{LockLayout, LockStatus};
use rzk_recipes::session::Session;

use super::child;
use super::scan::{sequence_of, Kind};
use super::ReadError;

/// What a member does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// Leads the election.
    Leader,
    /// Queues for leadership.
    Follower,
    /// Holds the lock (`exclusive`, `read`, `write`, `lease`).
    Holds(&'static str),
    /// Waits for it.
    Waits(&'static str),
}

/// One participant, holder or waiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    /// Its id (the node's data).
    pub id: String,
    /// Its node's path.
    pub node: String,
    /// Its token: the node's czxid.
    pub token: i64,
    /// The session owning the node.
    pub session: i64,
    /// What it does.
    pub role: Role,
}

/// A recipe's state at one read.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecipeView {
    /// Members in the recipe's order: the leader or holders first.
    pub members: Vec<Member>,
    /// Children the recipe cannot order (a recipe refuses to lead beside them).
    pub foreign: Vec<String>,
    /// Items of a queue, members of a barrier.
    pub count: usize,
    /// When the first member's (or the queue head's) node was created, ms since the epoch.
    pub first_since_ms: Option<i64>,
    /// A barrier's `ready` node exists.
    pub ready: bool,
}

fn member(p: &Participant, role: Role) -> Member {
    Member { id: p.id.clone(), node: p.node.clone(), token: p.token.0, session: p.session.0, role }
}

fn election(p: &Participants) -> RecipeView {
    let members = p
        .list
        .iter()
        .enumerate()
        .map(|(i, x)| member(x, if i == 0 { Role::Leader } else { Role::Follower }))
        .collect();
    RecipeView { members, foreign: p.foreign.clone(), ..RecipeView::default() }
}

/// Reads the recipe of `kind` at `path`.
///
/// # Errors
/// The recipes' or the client's error (`NoNode` for a path that is gone).
pub(crate) async fn read(
    session: &Session,
    path: &str,
    kind: Kind,
) -> Result<RecipeView, ReadError> {
    let client = session.client()?;
    let mut view = match kind {
        // A recipe that is never started only reads.
        Kind::LeaderLatch => election(
            &LeaderLatch::new(session, path, LatchOptions::default())?.participants().await?,
        ),
        Kind::RaceElection => {
            let race = RaceElection::new(session, path, RaceOptions::default())?;
            let holder = race.holder().await?;
            RecipeView {
                members: holder.iter().map(|h| member(h, Role::Leader)).collect(),
                ..RecipeView::default()
            }
        }
        // The scan named the layout, so it is not detected again (a second getChildren).
        Kind::Mutex => lock(&LockStatus::read(session, path, LockLayout::Mutex).await?),
        Kind::ReadWriteLock => lock(&LockStatus::read(session, path, LockLayout::ReadWrite).await?),
        Kind::Semaphore => {
            let layout = LockLayout::Semaphore { max_leases: None };
            lock(&LockStatus::read(session, path, layout).await?)
        }
        Kind::PlainElection => plain(&client, path).await?,
        Kind::Queue | Kind::CuratorQueue | Kind::DoubleBarrier | Kind::Registry => {
            counted(&client, path).await?
        }
    };
    if view.first_since_ms.is_none() {
        if let Some(first) = view.members.first() {
            let stat = client.check_stat(&first.node).await?;
            view.first_since_ms = stat.map(|s| s.ctime);
        }
    }
    Ok(view)
}

fn lock(s: &LockStatus) -> RecipeView {
    let members = (s.holders.iter().map(|e| member(&e.participant, Role::Holds(e.kind.as_str()))))
        .chain(s.waiters.iter().map(|e| member(&e.participant, Role::Waits(e.kind.as_str()))))
        .collect();
    let mut view = RecipeView { members, foreign: s.foreign.clone(), ..RecipeView::default() };
    if let LockLayout::Semaphore { .. } = s.layout {
        view.count = s.holders.len();
    }
    view
}

/// ZooKeeper's plain election: the lowest sequence leads, whatever the prefix. One getChildren
/// and one multi-read, as the recipes read theirs; a node gone between the two is not listed.
async fn plain(client: &Client, path: &str) -> Result<RecipeView, rzk_client::Error> {
    let mut children: Vec<(u64, String)> = client
        .list_children(path)
        .await?
        .into_iter()
        .filter_map(|c| sequence_of(&c).map(|(_, seq)| (seq, c.clone())))
        .collect();
    children.sort_unstable();
    let mut members = Vec::with_capacity(children.len());
    if children.is_empty() {
        return Ok(RecipeView::default());
    }
    let mut reader = client.new_multi_reader();
    for (_, name) in &children {
        reader.add_get_data(&child(path, name))?;
    }
    for ((_, name), r) in children.iter().zip(reader.commit().await?) {
        if let MultiReadResult::Data { data, stat } = r {
            let role = if members.is_empty() { Role::Leader } else { Role::Follower };
            let id = String::from_utf8_lossy(&data).into_owned();
            let (node, token, session) = (child(path, name), stat.czxid, stat.ephemeral_owner);
            members.push(Member { id, node, token, session, role });
        }
    }
    Ok(RecipeView { members, ..RecipeView::default() })
}

/// Queues and barriers: how many children, the oldest one's age, a barrier's `ready`.
async fn counted(client: &Client, path: &str) -> Result<RecipeView, rzk_client::Error> {
    let mut children = client.list_children(path).await?;
    children.sort_unstable();
    let ready = children.iter().any(|c| c == "ready");
    let head = children.iter().find(|c| *c != "ready");
    let first_since_ms = match head {
        Some(h) => client.check_stat(&child(path, h)).await?.map(|s| s.ctime),
        None => None,
    };
    let count = children.len() - usize::from(ready);
    Ok(RecipeView { count, first_since_ms, ready, ..RecipeView::default() })
}
