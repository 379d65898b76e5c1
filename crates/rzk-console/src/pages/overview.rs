//! The overview: the recipes found under the tree, grouped by kind, each with its size at a
//! glance, and the console's own session.

use maud::html;
use rzk_recipes::session::Session;

use super::{link, session_hex, Page};
use crate::read::scan::{Kind, Scan};

/// The overview of `scan`, read over `session`.
pub(crate) fn page(scan: &Scan, session: &Session) -> Page {
    let mut groups: Vec<&str> = scan.found.iter().map(|f| f.kind.group()).collect();
    groups.sort_unstable();
    groups.dedup();
    let body = html! {
        h1 { "Overview" }
        p.meta {
            "Session " (session.session_id().map_or("none".to_string(), |s| session_hex(s.0)))
            ", " (format!("{:?}", session.state()).to_lowercase())
            ". Read " (scan.listed) " nodes"
            @if scan.truncated { " (the scan's limit: deeper recipes are not listed; browse the tree)" }
            "."
        }
        @if scan.found.is_empty() {
            p { "No recipe found. " a href=(link("/tree", &[("path", "/")])) { "Browse the tree" } "." }
        }
        @for group in &groups {
            section {
                h2 { (group) }
                table {
                    thead { tr { th { "Path" } th { "Recipe" } th.num { "Children" } } }
                    tbody {
                        @for f in scan.found.iter().filter(|f| f.kind.group() == *group) {
                            tr {
                                td { a href=(recipe_link(&f.path, f.kind)) { (f.path) } }
                                td { (f.kind.title()) }
                                td.num { (f.children) }
                            }
                        }
                    }
                }
            }
        }
    };
    Page { title: "Overview".into(), watch: Some("/".into()), body }
}

/// The page of the recipe of `kind` at `path`.
pub(crate) fn recipe_link(path: &str, kind: Kind) -> String {
    match kind {
        Kind::Registry => link("/services", &[("base", path)]),
        kind => link("/recipe", &[("path", path), ("kind", kind.slug())]),
    }
}
