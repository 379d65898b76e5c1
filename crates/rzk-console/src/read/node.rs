//! One node as the tree browser shows it: its data rendered for a person (text, JSON
//! pretty-printed, or hex), its `Stat`, its ACL, and one page of its children.

use rzk_client::{Acl, Client, Stat};

/// A node's data, as shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shown {
    /// No data (a null buffer or zero bytes).
    Empty,
    /// Valid JSON, pretty-printed.
    Json(String),
    /// UTF-8 text without control characters other than whitespace.
    Text(String),
    /// Anything else, as hex lines of 16 bytes.
    Hex(String),
}

/// How `data` reads best, from at most `max` of its bytes; and whether it was cut.
pub(crate) fn show(data: &[u8], max: usize) -> (Shown, bool) {
    let cut = data.len() > max;
    let data = &data[..data.len().min(max)];
    if data.is_empty() {
        return (Shown::Empty, cut);
    }
    if !cut {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
            if v.is_object() || v.is_array() {
                let pretty = serde_json::to_string_pretty(&v).unwrap_or_default();
                return (Shown::Json(pretty), cut);
            }
        }
    }
    match std::str::from_utf8(data) {
        Ok(text) if text.chars().all(|c| !c.is_control() || c.is_whitespace()) => {
            (Shown::Text(text.to_string()), cut)
        }
        _ => (Shown::Hex(hex_lines(data)), cut),
    }
}

/// `data` as `offset: hex bytes  |ascii|` lines of 16 bytes.
fn hex_lines(data: &[u8]) -> String {
    let mut out = String::new();
    for (i, row) in data.chunks(16).enumerate() {
        let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = row
            .iter()
            .map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' })
            .collect();
        out.push_str(&format!("{:08x}  {:<47}  |{ascii}|\n", i * 16, hex.join(" ")));
    }
    out
}

/// One node and a page of its children.
#[derive(Debug, Clone)]
pub(crate) struct NodeView {
    /// Its path.
    pub path: String,
    /// Its data, as shown, and whether it was cut at the limit.
    pub data: (Shown, bool),
    /// Its data as it is, when it is UTF-8 and whole: what a write form starts from (the
    /// shown JSON is re-indented and its keys sorted; writing that back would rewrite it).
    pub text: Option<String>,
    /// Its stat.
    pub stat: Stat,
    /// Its ACL.
    pub acl: Vec<Acl>,
    /// The children on this page, in name order.
    pub children: Vec<String>,
    /// All its children.
    pub total_children: usize,
    /// The name the next page starts after, if there is one.
    pub next_after: Option<String>,
}

/// Reads `path` and the page of its children after the name `after` (from the first without
/// it), `page` names long.
///
/// # Errors
/// The client's error (`NoNode` for a path that does not exist).
pub(crate) async fn read(
    client: &Client,
    path: &str,
    after: Option<&str>,
    page: usize,
    data_max: usize,
) -> Result<NodeView, rzk_client::Error> {
    let (data, stat) = client.get_data(path).await?;
    let (acl, _) = client.get_acl(path).await?;
    let mut children = client.list_children(path).await?;
    children.sort_unstable();
    let total_children = children.len();
    let start = after.map_or(0, |a| children.partition_point(|c| c.as_str() <= a));
    let end = (start + page.max(1)).min(total_children);
    let next_after = (end < total_children).then(|| children[end - 1].clone());
    let children = children.drain(start..end).collect();
    let text = (data.len() <= data_max).then(|| String::from_utf8(data.clone()).ok()).flatten();
    let data = show(&data, data_max);
    let path = path.to_string();
    Ok(NodeView { path, data, text, stat, acl, children, total_children, next_after })
}

#[cfg(test)]
mod tests {
    use super::{show, Shown};

    #[test]
    fn data_is_shown_as_json_text_or_hex() {
        let (json, _) = show(br#"{"b":1,"a":[true]}"#, 100);
        assert!(matches!(json, Shown::Json(ref s) if s.contains("\"a\": [\n")), "{json:?}");
        assert_eq!(show(b"plain text\n", 100), (Shown::Text("plain text\n".into()), false));
        assert_eq!(show(b"", 100), (Shown::Empty, false));
        let (hex, cut) = show(&[0, 1, 0xff, b'a'], 100);
        let Shown::Hex(hex) = hex else { panic!("{hex:?}") };
        assert!(
            hex.starts_with("00000000  00 01 ff 61 ") && hex.ends_with("  |...a|\n"),
            "{hex:?}"
        );
        assert!(!cut);
        // A number is JSON too, but reads better as the text it is.
        assert_eq!(show(b"42", 100).0, Shown::Text("42".into()));
    }

    #[test]
    fn data_past_the_limit_is_cut_and_not_parsed() {
        let (shown, cut) = show(br#"{"a":1}"#, 3);
        assert_eq!((shown, cut), (Shown::Text("{\"a".into()), true));
    }
}
