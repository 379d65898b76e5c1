//! The writes `--allow-writes` adds: setting a node's data at the version the page showed,
//! deleting a node at its version, and asking a participant to go (deleting its node). Each
//! is a form POST that first answers a confirmation page; only the confirmed POST writes.
//!
//! **Invariant:** no write without the console's CSRF token, which only its own pages carry
//! (another site cannot read them), and no write at another version than the one confirmed:
//! a node changed meanwhile is refused with 409, not overwritten.

use std::sync::Arc;

use axum::extract::{Form, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::auth::same;
use super::reply::{answer, error_page, Answer, Refusal};
use crate::pages::{self, confirm::Write};
use crate::shared::Shared;

/// The largest form a write accepts: ZooKeeper's default `jute.maxbuffer` (1 MiB) of data, and
/// room for the other fields.
pub(crate) const WRITE_FORM_BYTES_MAX: usize = 1024 * 1024 + 4096;

/// Bytes of the CSRF token, from the operating system's randomness.
const CSRF_BYTES: usize = 32;

/// A fresh CSRF token, hex, from the operating system's randomness.
pub(crate) fn csrf_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; CSRF_BYTES];
    getrandom::getrandom(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A write form's fields.
#[derive(Deserialize)]
pub(super) struct WriteForm {
    csrf: String,
    path: String,
    version: Option<i32>,
    data: Option<String>,
    /// `yes` on the confirmation page's POST.
    confirm: Option<String>,
}

/// POST /set.
pub(super) async fn set(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Form(f): Form<WriteForm>,
) -> Answer {
    let version = checked(&shared, &headers, &f)?.ok_or_else(|| no_version(&headers))?;
    // Browsers send a textarea's line ends as CRLF; the node's were LF.
    let data = f.data.as_deref().unwrap_or_default().replace("\r\n", "\n");
    if f.confirm.as_deref() != Some("yes") {
        let write = Write::Set { path: &f.path, version, data: &data };
        return Ok(answer(
            &headers,
            StatusCode::OK,
            pages::confirm::page(&write, shared.writes().unwrap_or_default()),
        ));
    }
    let client = shared.session.client().map_err(|e| refused(&f.path, &e.to_string()))?;
    match client.set_data(&f.path, data.as_bytes(), Some(version)).await {
        Ok(_) => Ok(see_other(&pages::tree_link(&f.path))),
        Err(e) => Err(write_failed(&headers, &f.path, version, e)),
    }
}

/// POST /delete: a node, or a participant asked to go.
pub(super) async fn delete(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Form(f): Form<WriteForm>,
) -> Answer {
    let given = checked(&shared, &headers, &f)?;
    let client = shared.session.client().map_err(|e| refused(&f.path, &e.to_string()))?;
    let version = match (given, f.confirm.as_deref()) {
        (Some(v), _) => v,
        // A participant's row names its node, not its version: the confirmation reads it.
        (None, None) => match client.check_stat(&f.path).await {
            Ok(Some(stat)) => stat.version,
            Ok(None) => return Err(write_failed(&headers, &f.path, 0, rzk_client::Error::NoNode)),
            Err(e) => return Err(write_failed(&headers, &f.path, 0, e)),
        },
        (None, Some(_)) => return Err(no_version(&headers)),
    };
    if f.confirm.as_deref() != Some("yes") {
        let write = Write::Delete { path: &f.path, version };
        return Ok(answer(
            &headers,
            StatusCode::OK,
            pages::confirm::page(&write, shared.writes().unwrap_or_default()),
        ));
    }
    match client.delete(&f.path, Some(version)).await {
        Ok(()) => Ok(see_other(&pages::tree_link(parent(&f.path)))),
        Err(e) => Err(write_failed(&headers, &f.path, version, e)),
    }
}

/// The token and the path; the version the form names, if it does: 403 without the
/// console's token, 400 for the root or a relative path.
fn checked(shared: &Shared, headers: &HeaderMap, f: &WriteForm) -> Result<Option<i32>, Refusal> {
    let token = shared.writes().unwrap_or_default();
    if token.is_empty() || !same(f.csrf.as_bytes(), token.as_bytes()) {
        let page = error_page("Refused", "This form did not come from this console.");
        return Err(answer(headers, StatusCode::FORBIDDEN, page).into());
    }
    if !f.path.starts_with('/') || f.path == "/" {
        let page = error_page("Bad path", &format!("{:?} cannot be written here.", f.path));
        return Err(answer(headers, StatusCode::BAD_REQUEST, page).into());
    }
    Ok(f.version)
}

fn no_version(headers: &HeaderMap) -> Refusal {
    let page = error_page("No version", "A write names the version it was shown.");
    answer(headers, StatusCode::BAD_REQUEST, page).into()
}

fn parent(path: &str) -> &str {
    match path.rsplit_once('/') {
        Some(("", _)) | None => "/",
        Some((parent, _)) => parent,
    }
}

fn see_other(location: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

fn refused(path: &str, why: &str) -> Refusal {
    let page = error_page("Not written", &format!("{path}: {why}"));
    answer(&HeaderMap::new(), StatusCode::BAD_GATEWAY, page).into()
}

/// A write the server refused, as the user can act on it.
fn write_failed(headers: &HeaderMap, path: &str, version: i32, e: rzk_client::Error) -> Refusal {
    let (status, what, detail) = match e {
        rzk_client::Error::BadVersion => (
            StatusCode::CONFLICT,
            "Changed meanwhile",
            format!("{path} is no longer at version {version}: nothing was written. Reload it."),
        ),
        rzk_client::Error::NotEmpty => {
            (StatusCode::CONFLICT, "Not empty", format!("{path} has children: delete them first."))
        }
        rzk_client::Error::NoNode => {
            (StatusCode::NOT_FOUND, "No such node", format!("{path} does not exist."))
        }
        rzk_client::Error::NoAuth => (
            StatusCode::FORBIDDEN,
            "Not allowed",
            format!("{path}: the console's session may not write it (its ACL)."),
        ),
        e => (StatusCode::BAD_GATEWAY, "Not written", format!("{path}: {e}")),
    };
    answer(headers, status, error_page(what, &detail)).into()
}
