//! Znode path rules (`PathUtils.validatePath`) and helpers.

/// Why a path is invalid. Every variant maps to `BadArguments` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Empty string.
    #[error("path must not be empty")]
    Empty,
    /// Does not start with `/`.
    #[error("path must start with / character")]
    NoLeadingSlash,
    /// Ends with `/` (other than the root).
    #[error("path must not end with / character")]
    TrailingSlash,
    /// Contains `//`.
    #[error("empty node name specified @{0}")]
    EmptySegment(usize),
    /// Contains a `.` or `..` segment.
    #[error("relative paths not allowed @{0}")]
    Relative(usize),
    /// Contains NUL, a control character, a surrogate/private-use character or U+FFF0..U+FFFF.
    #[error("invalid character @{0}")]
    InvalidChar(usize),
}

fn is_invalid_char(c: char) -> bool {
    let c = c as u32;
    c == 0
        || (0x0001..=0x001f).contains(&c)
        || (0x007f..=0x009f).contains(&c)
        // Java strings are UTF-16: every non-BMP character becomes surrogates (D800..DFFF),
        // which ZooKeeper rejects together with the private-use area up to F8FF.
        || (0xd800..=0xf8ff).contains(&c)
        || c > 0xffff
        || (0xfff0..=0xffff).contains(&c)
}

/// Validates a full path as ZooKeeper does for writes.
pub fn validate_path(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathError::NoLeadingSlash);
    }
    if path.len() == 1 {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err(PathError::TrailingSlash);
    }
    for (i, c) in path.char_indices() {
        if is_invalid_char(c) {
            return Err(PathError::InvalidChar(i));
        }
    }
    let mut offset = 1;
    for seg in path[1..].split('/') {
        if seg.is_empty() {
            return Err(PathError::EmptySegment(offset));
        }
        if seg == "." || seg == ".." {
            return Err(PathError::Relative(offset));
        }
        offset += seg.len() + 1;
    }
    Ok(())
}

/// The parent of a path (`/` for top-level nodes), or `None` when there is no `/` at all.
pub fn parent(path: &str) -> Option<&str> {
    let i = path.rfind('/')?;
    Some(if i == 0 { "/" } else { &path[..i] })
}

/// The last segment of a path.
pub fn name(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// Joins a parent path and a child name.
pub fn join(parent: &str, child: &str) -> String {
    let mut s = String::with_capacity(parent.len() + 1 + child.len());
    s.push_str(parent);
    if parent != "/" {
        s.push('/');
    }
    s.push_str(child);
    s
}

/// Iterates the proper ancestors of `path` from the nearest to `/`.
pub fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut cur = path;
    std::iter::from_fn(move || {
        if cur == "/" {
            return None;
        }
        cur = parent(cur)?;
        Some(cur)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_and_invalid_paths() {
        for ok in ["/", "/a", "/a/b", "/zookeeper/config", "/a.b", "/...", "/é"] {
            assert_eq!(validate_path(ok), Ok(()), "{ok}");
        }
        assert_eq!(validate_path(""), Err(PathError::Empty));
        assert_eq!(validate_path("a"), Err(PathError::NoLeadingSlash));
        assert_eq!(validate_path("/a/"), Err(PathError::TrailingSlash));
        assert_eq!(validate_path("/a//b"), Err(PathError::EmptySegment(3)));
        assert_eq!(validate_path("/a/./b"), Err(PathError::Relative(3)));
        assert_eq!(validate_path("/a/.."), Err(PathError::Relative(3)));
        assert!(matches!(validate_path("/a\u{0}"), Err(PathError::InvalidChar(_))));
        assert!(matches!(validate_path("/\u{1F600}"), Err(PathError::InvalidChar(_))));
        assert!(matches!(validate_path("/\u{fffd}"), Err(PathError::InvalidChar(_))));
        assert!(matches!(validate_path("/\u{e000}"), Err(PathError::InvalidChar(_))));
    }

    #[test]
    fn parents_and_ancestors() {
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/"), Some("/"));
        assert_eq!(parent("noslash"), None);
        assert_eq!(name("/a/b"), "b");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(join("/a", "b"), "/a/b");
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), ["/a/b", "/a", "/"]);
        assert_eq!(ancestors("/a").collect::<Vec<_>>(), ["/"]);
        assert_eq!(ancestors("/").count(), 0);
    }
}
