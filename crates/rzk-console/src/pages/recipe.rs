//! An election, a lock, a queue or a barrier: the leader or holders first, then the queue in
//! order, each with its id, token, session and node; children the recipe cannot order are
//! called out, since every recipe refuses to lead beside them.

use maud::{html, Markup};

use super::{age, name_of, now_ms, session_hex, tree_link, utc, Page};
use crate::read::recipe::{RecipeView, Role};
use crate::read::scan::Kind;

/// Which members a page of a recipe shows: `len` from the `from`th.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub from: usize,
    pub len: usize,
}

/// The page of the recipe of `kind` at `path`, its members from `window`.
pub(crate) fn page(
    path: &str,
    kind: Kind,
    view: &RecipeView,
    window: Window,
    writes: Option<&str>,
) -> Page {
    let now = now_ms();
    let body = html! {
        h1 { (kind.title()) " " code { (path) } }
        p.meta {
            a href=(tree_link(path)) { "Browse the nodes" }
            @if let Some(since) = view.first_since_ms {
                " · " (first_label(kind)) " " (utc(since)) " (" (age(since, now)) " ago)"
            }
        }
        @match kind {
            Kind::Queue | Kind::CuratorQueue => {
                p.summary { strong { (view.count) } " items" }
            }
            Kind::DoubleBarrier => {
                p.summary { strong { (view.count) } " members; "
                    @if view.ready { "ready: they may leave" } @else { "not ready yet" } }
            }
            _ => { (members(path, kind, view, window, writes)) }
        }
        @if !view.foreign.is_empty() {
            section.warning {
                h2 { "Foreign children" }
                p { "Nodes this recipe cannot order. A recipe refuses to lead or hold beside them." }
                ul { @for f in &view.foreign { li { code { (f) } } } }
            }
        }
    };
    let timeline = matches!(kind, Kind::LeaderLatch | Kind::RaceElection | Kind::PlainElection);
    Page {
        title: format!("{} {path}", kind.title()),
        watch: Some(path.to_string()),
        body,
        timeline,
    }
}

fn first_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Queue | Kind::CuratorQueue => "head queued",
        Kind::Mutex | Kind::ReadWriteLock | Kind::Semaphore => "first holder's node created",
        _ => "leader's node created",
    }
}

fn members(
    path: &str,
    kind: Kind,
    view: &RecipeView,
    window: Window,
    writes: Option<&str>,
) -> Markup {
    let from = window.from.min(view.members.len());
    let to = (from + window.len.max(1)).min(view.members.len());
    let link = |from: usize| {
        super::link("recipe", &[("path", path), ("kind", kind.slug()), ("from", &from.to_string())])
    };
    let leading = view.members.iter().filter(|m| matches!(m.role, Role::Leader | Role::Holds(_)));
    let leaders = leading.count();
    html! {
        p.summary {
            @match (kind, leaders) {
                (Kind::Mutex | Kind::ReadWriteLock | Kind::Semaphore, 0) => { "Nobody holds it." }
                (Kind::Mutex | Kind::ReadWriteLock | Kind::Semaphore, n) => {
                    strong { (n) } " holding, " (view.members.len() - n) " waiting"
                }
                (_, 0) => { "No leader." }
                (_, _) => {
                    "Leader: " strong.leader { (view.members[0].id) }
                    ", " (view.members.len() - 1) " following"
                }
            }
        }
        table.members {
            thead { tr { th.num { "#" } th { "Role" } th { "Id" } th.num { "Token (czxid)" } th { "Session" } th { "Node" } @if writes.is_some() { th {} } } }
            tbody {
                @for (i, m) in view.members.iter().enumerate().skip(from).take(to - from) {
                    tr class=(role_class(m.role)) {
                        td.num { (i) }
                        td { (role_label(m.role)) }
                        td { (m.id) }
                        td.num { (m.token) }
                        td { code { (session_hex(m.session)) } }
                        td { a href=(tree_link(&m.node)) { code { (name_of(&m.node)) } } }
                        @if let Some(csrf) = writes {
                            td {
                                form method="post" action="delete" {
                                    input type="hidden" name="csrf" value=(csrf);
                                    input type="hidden" name="path" value=(m.node);
                                    button type="submit" { "Ask to go…" }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if from > 0 || to < view.members.len() {
            p.pages {
                "Members " (from + 1) "–" (to) " of " (view.members.len()) ". "
                @if from > 0 { a href=(link(0)) { "← First" } " " }
                @if to < view.members.len() { a.next href=(link(to)) { "Next " (window.len) " →" } }
            }
        }
    }
}

fn role_label(role: Role) -> String {
    match role {
        Role::Leader => "leader".into(),
        Role::Follower => "follower".into(),
        Role::Holds(kind) => format!("holds ({kind})"),
        Role::Waits(kind) => format!("waits ({kind})"),
    }
}

fn role_class(role: Role) -> &'static str {
    match role {
        Role::Leader | Role::Holds(_) => "holding",
        Role::Follower | Role::Waits(_) => "waiting",
    }
}
