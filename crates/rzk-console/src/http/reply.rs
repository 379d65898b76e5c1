//! How a handler answers: a page whole, or its `<main>` alone for a live page's refresh; an
//! error page with the status a failed read deserves; a refusal that travels up a handler's
//! `?`.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::pages::{self, Page};
use crate::read::ReadError;

/// The request header a live page fetches its content with: the answer is `<main>`'s inside.
const FRAGMENT_HEADER: &str = "x-rzk-fragment";

/// The page whole, or only its content when a live page asks for it.
pub(crate) fn answer(headers: &HeaderMap, status: StatusCode, page: Page) -> Response {
    if headers.contains_key(FRAGMENT_HEADER) {
        (status, page.body).into_response()
    } else {
        (status, pages::document(&page)).into_response()
    }
}

pub(crate) fn error_page(what: &str, detail: &str) -> Page {
    Page { title: what.to_string(), watch: None, body: pages::error(what, detail), timeline: false }
}

/// A failed read as a page: 404 for a node that is not there, 400 for a malformed path, 403
/// for one the session may not read, 502 for the rest (the ZooKeeper server's answer, not
/// ours).
pub(crate) fn failed(headers: &HeaderMap, path: &str, e: &ReadError) -> Response {
    if e.is_bad_request() {
        answer(headers, StatusCode::BAD_REQUEST, error_page("Bad path", &format!("{path}: {e}")))
    } else if e.is_no_auth() {
        let page =
            error_page("Not allowed", &format!("{path}: the console's session may not read it."));
        answer(headers, StatusCode::FORBIDDEN, page)
    } else if e.is_no_node() {
        answer(
            headers,
            StatusCode::NOT_FOUND,
            error_page("No such node", &format!("{path} does not exist.")),
        )
    } else {
        answer(
            headers,
            StatusCode::BAD_GATEWAY,
            error_page("Could not read", &format!("{path}: {e}")),
        )
    }
}

/// A path from a query (`/` when absent): absolute, and ZooKeeper's to judge beyond that.
pub(crate) fn absolute(headers: &HeaderMap, path: Option<String>) -> Result<String, Refusal> {
    match path {
        None => Ok("/".to_string()),
        Some(p) if p.starts_with('/') => Ok(p),
        Some(p) => {
            let page = error_page("Bad path", &format!("{p:?} is not an absolute path."));
            Err(answer(headers, StatusCode::BAD_REQUEST, page).into())
        }
    }
}

/// A handler's answer: the page, or the error page its `?` returned.
pub(crate) type Answer = Result<Response, Refusal>;

/// An error page, boxed: it travels up a handler's `?` and is answered as it is.
pub(crate) struct Refusal(Box<Response>);

impl From<Response> for Refusal {
    fn from(r: Response) -> Refusal {
        Refusal(Box::new(r))
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        *self.0
    }
}
