//! The tree browser: a node's data (text, JSON or hex), its `Stat`, its ACL and its children,
//! a page at a time, with the path as links up to the root.

use maud::{html, Markup};

use super::{age, link, name_of, now_ms, session_hex, tree_link, utc, Page};
use rzk_recipes::session::is_session_owner;

use crate::read::node::{NodeView, Shown};
use crate::read::scan::{classify, Kind};

/// The page of `view`; `kind` is the recipe its children make, if any; with `writes` (the
/// CSRF token) its data can be set and the node deleted.
pub(crate) fn page(view: &NodeView, kind: Option<Kind>, writes: Option<&str>) -> Page {
    let s = &view.stat;
    let now = now_ms();
    let body = html! {
        h1 { (crumbs(&view.path)) }
        @if let Some(kind) = kind {
            p.meta { "Its children make a " a href=(super::overview::recipe_link(&view.path, kind)) { (kind.title()) } "." }
        }
        section {
            h2 { "Data" span.meta { " " (s.data_length) " bytes, version " (s.version) } }
            (data(&view.data.0, view.data.1))
        }
        @if let Some(csrf) = writes { (write_forms(view, csrf)) }
        section {
            h2 { "Stat" }
            table.stat {
                tr { th { "czxid" } td { (s.czxid) } th { "created" } td { (utc(s.ctime)) " (" (age(s.ctime, now)) " ago)" } }
                tr { th { "mzxid" } td { (s.mzxid) } th { "modified" } td { (utc(s.mtime)) " (" (age(s.mtime, now)) " ago)" } }
                tr { th { "pzxid" } td { (s.pzxid) } th { "ephemeral owner" } td { (owner(s.ephemeral_owner)) } }
                tr { th { "version" } td { (s.version) } th { "cversion" } td { (s.cversion) } }
                tr { th { "aversion" } td { (s.aversion) } th { "children" } td { (s.num_children) } }
            }
        }
        section {
            h2 { "ACL" }
            ul.acl {
                @for a in &view.acl {
                    li { code { (a.auth_id().scheme) ":" (a.auth_id().id) } " " (perms(a.permission().bits())) }
                }
            }
        }
        section {
            h2 { "Children" span.meta { " " (view.total_children) } }
            @if view.children.is_empty() { p.meta { "None." } }
            ul.children {
                @for c in &view.children {
                    li { a href=(tree_link(&crate::read::child(&view.path, c))) { (c) } }
                }
            }
            @if let Some(after) = &view.next_after {
                p { a.next href=(link("tree", &[("path", &view.path), ("after", after)])) { "Next " (view.children.len()) " →" } }
            }
        }
    };
    Page { title: view.path.clone(), watch: Some(view.path.clone()), body, timeline: false }
}

/// Set the data (as text, at the version shown) or delete the node; each asks to confirm.
fn write_forms(view: &NodeView, csrf: &str) -> Markup {
    let text = view.text.as_deref().unwrap_or_default();
    let version = view.stat.version;
    html! {
        section.write {
            h2 { "Change" }
            form method="post" action="set" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="path" value=(view.path);
                input type="hidden" name="version" value=(version);
                textarea name="data" rows="6" cols="80" { (text) }
                br;
                button type="submit" { "Set data at version " (version) "…" }
            }
            form method="post" action="delete" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="path" value=(view.path);
                input type="hidden" name="version" value=(version);
                button type="submit" { "Delete this node…" }
            }
        }
    }
}

/// The recipe a page of children makes (the first page's names decide).
pub(crate) fn kind_of(view: &NodeView) -> Option<Kind> {
    classify(&view.children).filter(|k| *k != Kind::PlainElection)
}

/// `/a/b/c` as links to `/`, `/a`, `/a/b` and the name `c`.
fn crumbs(path: &str) -> Markup {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    html! {
        a href=(tree_link("/")) { "/" }
        @for (i, _) in parts.iter().enumerate() {
            @let prefix = format!("/{}", parts[..=i].join("/"));
            @if i + 1 == parts.len() { span { (name_of(&prefix)) } } @else { a href=(tree_link(&prefix)) { (name_of(&prefix)) } "/" }
        }
    }
}

fn data(shown: &Shown, cut: bool) -> Markup {
    html! {
        @match shown {
            Shown::Empty => p.meta { "No data." },
            Shown::Json(text) => { p.meta { "JSON" } pre.data { (text) } }
            Shown::Text(text) => pre.data { (text) },
            Shown::Hex(text) => { p.meta { "Binary, as hex" } pre.data { (text) } }
        }
        @if cut { p.meta { "Cut at the console's limit." } }
    }
}

/// Who owns a node: a session, or which kind of node the owner word marks.
fn owner(word: i64) -> Markup {
    html! {
        @if is_session_owner(word) { code { (session_hex(word)) } }
        @else if word == 0 { "none (persistent)" }
        @else if word == i64::MIN { "none (a container)" }
        @else { "none (a TTL node)" }
    }
}

/// `cdrwa`, as zkCli prints a permission set.
fn perms(bits: i32) -> String {
    [(4, 'c'), (8, 'd'), (2, 'w'), (1, 'r'), (16, 'a')]
        .iter()
        .map(|&(bit, c)| if bits & bit != 0 { c } else { '-' })
        .collect()
}
