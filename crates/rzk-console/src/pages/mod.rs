//! The pages, as HTML: one layout, and a file per page that turns a `read` value into its
//! content. Every value from the tree is spliced in by maud, which escapes it; the only
//! unescaped text is the console's own.
//!
//! A page's content is also served alone (the `X-Rzk-Fragment` request header), which is
//! what a live page fetches to replace its `<main>`; a page without JavaScript is the same
//! HTML, whole.

pub(crate) mod confirm;
pub(crate) mod overview;
pub(crate) mod recipe;
pub(crate) mod services;
pub(crate) mod sessions;
pub(crate) mod tree;

use maud::{html, Markup, DOCTYPE};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// What a handler renders.
pub(crate) struct Page {
    /// The title, after "rzk console".
    pub title: String,
    /// The path whose changes refresh the page, if it is live.
    pub watch: Option<String>,
    /// The content of `<main>`.
    pub body: Markup,
    /// An election's page: the live script keeps a timeline of its terms beside it.
    pub timeline: bool,
}

/// The whole document around `page`.
pub(crate) fn document(page: &Page) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "rzk console · " (page.title) }
                link rel="stylesheet" href="assets/console.css";
                script src="assets/live.js" defer {}
            }
            body {
                header {
                    a.brand href="./" { "rzk console" }
                    nav {
                        a href="./" { "Overview" }
                        a href=(link("tree", &[("path", "/")])) { "Tree" }
                        a href="sessions" { "Sessions" }
                    }
                    span #live { @if page.watch.is_some() { "connecting…" } @else { "static" } }
                }
                main #main data-watch=[page.watch.as_deref()] { (page.body) }
                @if page.timeline {
                    aside {
                        h2 { "Terms seen while this page is open" }
                        ol #terms {}
                    }
                }
            }
        }
    }
}

/// Characters left as they are in a query value: the unreserved ones and `/`, so that paths
/// stay readable in the address bar.
const QUERY_VALUE: &AsciiSet =
    &NON_ALPHANUMERIC.remove(b'/').remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// `base?k=v&...`, each value percent-encoded.
pub(crate) fn link(base: &str, query: &[(&str, &str)]) -> String {
    let mut out = base.to_string();
    for (i, (k, v)) in query.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(k);
        out.push('=');
        out.extend(utf8_percent_encode(v, QUERY_VALUE));
    }
    out
}

/// The tree browser's link to `path`.
pub(crate) fn tree_link(path: &str) -> String {
    link("tree", &[("path", path)])
}

/// `path`'s last name (`/` for the root).
pub(crate) fn name_of(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some((_, "")) | None => path,
        Some((_, name)) => name,
    }
}

/// A session id as ZooKeeper logs print it.
pub(crate) fn session_hex(id: i64) -> String {
    format!("0x{id:x}")
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// How long ago `ms` was, from `now_ms`, in the largest unit that fits.
pub(crate) fn age(ms: i64, now_ms: i64) -> String {
    // `ms` may be anything a registry's JSON says.
    let s = now_ms.saturating_sub(ms).max(0) / 1000;
    match s {
        0..=119 => format!("{s} s"),
        120..=7_199 => format!("{} min", s / 60),
        7_200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

/// Now, in ms since the epoch.
pub(crate) fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// An error's page content.
pub(crate) fn error(what: &str, detail: &str) -> Markup {
    html! {
        h1 { (what) }
        p.error { (detail) }
        p { a href="./" { "Back to the overview" } }
    }
}

#[cfg(test)]
mod tests {
    use super::{age, link, name_of, utc};

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_796_342_399_000), "2026-12-03 23:59:59 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(age(0, 61_000), "61 s");
        assert_eq!(age(0, 3 * 86_400_000), "3 days");
    }

    #[test]
    fn links_encode_what_a_name_may_hold() {
        assert_eq!(link("tree", &[("path", "/a b/<x>&y")]), "tree?path=/a%20b/%3Cx%3E%26y");
        assert_eq!(name_of("/"), "/");
        assert_eq!(name_of("/a/b"), "b");
    }
}
