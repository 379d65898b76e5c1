//! The sessions holding ephemeral nodes, most nodes first, each with its nodes: who holds what
//! when a process must be found, or a session expired by hand.

use maud::html;

use super::{session_hex, tree_link, Page};
use crate::read::sessions::Sessions;

/// The page of `sessions`.
pub(crate) fn page(sessions: &Sessions) -> Page {
    let mut owners: Vec<(&i64, &Vec<String>)> = sessions.by_owner.iter().collect();
    owners.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let body = html! {
        h1 { "Sessions" }
        p.meta {
            (owners.len()) " sessions hold ephemeral nodes (read from the nodes' owners; a session \
             without one does not appear). Read " (sessions.listed) " nodes"
            @if sessions.truncated { " (the walk's limit: there may be more)" }
            "."
        }
        @for (owner, nodes) in &owners {
            section {
                h2 { code { (session_hex(**owner)) } span.meta { " " (nodes.len()) " ephemeral nodes" } }
                ul.ephemerals { @for n in *nodes { li { a href=(tree_link(n)) { (n) } } } }
            }
        }
    };
    Page { title: "Sessions".into(), watch: Some("/".into()), body, timeline: false }
}
