//! The overview: the recipes found under the tree, grouped by kind, each with its size at a
//! glance, and the console's own session.

use maud::html;
use rzk_recipes::session::Session;

use super::{age, link, now_ms, session_hex, tree_link, utc, Page};
use crate::read::scan::{Kind, Scan};
use crate::read::servers::Identity;

/// The `srvr` fields the overview shows of each server.
const SERVER_FIELDS: [&str; 5] = ["Mode", "Zookeeper version", "Zxid", "Connections", "Node count"];

/// The `mntr` figures it shows, where the server answers `mntr`.
const MNTR_FIGURES: [&str; 6] = [
    "zk_avg_latency",
    "zk_outstanding_requests",
    "zk_num_alive_connections",
    "zk_watch_count",
    "zk_ephemerals_count",
    "zk_approximate_data_size",
];

/// The overview of `scan` and `servers`, read over `session`.
pub(crate) fn page(scan: &Scan, servers: &[Identity], session: &Session) -> Page {
    let now = now_ms();
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
        @if !servers.is_empty() {
            section {
                h2 { "Servers" }
                table.servers {
                    thead { tr { th { "Server" } @for f in SERVER_FIELDS { th { (f) } } } }
                    tbody {
                        @for s in servers {
                            tr {
                                td { code { (s.host) } }
                                @match &s.fields {
                                    Ok(fields) => {
                                        @for f in SERVER_FIELDS {
                                            td { (fields.iter().find(|(k, _)| k == f).map_or("", |(_, v)| v.as_str())) }
                                        }
                                    }
                                    Err(why) => { td.meta colspan=(SERVER_FIELDS.len()) { "does not answer srvr: " (why) } }
                                }
                            }
                        }
                    }
                }
                table.figures {
                    thead { tr { th { "mntr" } @for f in MNTR_FIGURES { th { (f.trim_start_matches("zk_")) } } } }
                    tbody {
                        @for s in servers {
                            tr {
                                td { code { (s.host) } }
                                @match &s.figures {
                                    Ok(figures) => {
                                        @for f in MNTR_FIGURES {
                                            td.num { (figures.iter().find(|(k, _)| k == f).map_or("", |(_, v)| v.as_str())) }
                                        }
                                    }
                                    Err(why) => { td.meta colspan=(MNTR_FIGURES.len()) { (why) } }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if scan.found.is_empty() {
            p { "No recipe found. " a href=(link("tree", &[("path", "/")])) { "Browse the tree" } "." }
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
        @if !scan.data.is_empty() {
            section {
                h2 { "Data nodes" span.meta { " " (scan.data_total) " nodes with data and no children (config, counters, flags)" } }
                table.data {
                    thead { tr { th { "Path" } th.num { "Bytes" } th.num { "Version" } th { "Changed" } } }
                    tbody {
                        @for d in &scan.data {
                            tr {
                                td { a href=(tree_link(&d.path)) { (d.path) } }
                                td.num { (d.stat.data_length) }
                                td.num { (d.stat.version) }
                                td { (utc(d.stat.mtime)) " (" (age(d.stat.mtime, now)) " ago)" }
                            }
                        }
                    }
                }
                @if scan.data.len() < scan.data_total { p.meta { "The first " (scan.data.len()) " are listed." } }
            }
        }
    };
    Page { title: "Overview".into(), watch: Some("/".into()), body, timeline: false }
}

/// The page of the recipe of `kind` at `path`.
pub(crate) fn recipe_link(path: &str, kind: Kind) -> String {
    match kind {
        Kind::Registry => link("services", &[("base", path)]),
        kind => link("recipe", &[("path", path), ("kind", kind.slug())]),
    }
}
