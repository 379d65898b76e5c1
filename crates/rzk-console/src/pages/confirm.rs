//! The confirmation every write asks for: what will be written where, at which version, and a
//! button that posts the same form again with `confirm=yes`.

use maud::html;

use super::{tree_link, Page};

/// A write awaiting its confirmation.
pub(crate) enum Write<'a> {
    /// Set `path`'s data to `data`, at `version`.
    Set { path: &'a str, version: i32, data: &'a str },
    /// Delete `path` at `version`.
    Delete { path: &'a str, version: i32 },
}

/// The confirmation page of `write`, its form carrying `csrf`.
pub(crate) fn page(write: &Write<'_>, csrf: &str) -> Page {
    let (action, path, version, data, question) = match write {
        Write::Set { path, version, data } => {
            ("set", *path, *version, Some(*data), "Set the data of")
        }
        Write::Delete { path, version } => ("delete", *path, *version, None, "Delete"),
    };
    let body = html! {
        h1 { (question) " " code { (path) } "?" }
        p { "At version " (version) ". If it has changed since, nothing is written." }
        @if let Some(data) = data { p.meta { "New data:" } pre.data { (data) } }
        form.confirm method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="path" value=(path);
            input type="hidden" name="version" value=(version);
            @if let Some(data) = data { input type="hidden" name="data" value=(data); }
            input type="hidden" name="confirm" value="yes";
            button type="submit" { "Confirm" }
            " "
            a href=(tree_link(path)) { "Cancel" }
        }
    };
    Page { title: format!("Confirm: {question} {path}"), watch: None, body, timeline: false }
}
