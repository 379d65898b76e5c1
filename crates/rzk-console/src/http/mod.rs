//! The routes. Every page is a GET that reads, renders and answers; `/events` streams a
//! page's nudges. One middleware asks for the login, refuses other methods and sets the
//! headers that keep the page inert: a content security policy with no inline script, no
//! framing, no sniffing, no caching.

pub(crate) mod auth;
mod reply;
pub(crate) mod write;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http_body_util::BodyExt as _;
use hyper::service::Service as _;
use hyper_util::service::TowerToHyperService;
use rzk_server::{HttpFuture, HttpHandler};
use serde::Deserialize;

use crate::pages;
use crate::pages::recipe::Window;
use crate::read::{self, scan::Kind, ReadError};
use crate::shared::Shared;
use reply::{absolute, answer, error_page, failed, Answer, Refusal};

/// How long a page's nudges are gathered into one: a burst of changes refreshes it once.
const NUDGE_COALESCE: Duration = Duration::from_millis(100);

/// The policy of every answer: our own stylesheet and script, nothing inline, nothing framed.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const CSS: &str = include_str!("../../assets/console.css");
const JS: &str = include_str!("../../assets/live.js");

/// The console's routes as a handler of rzk-server's bounded HTTP listener, on a port of its
/// own or mounted on the AdminServer's: every link the pages hold is relative, so the same
/// routes serve at `/` and under a mount's path.
pub(crate) fn handler(shared: Arc<Shared>) -> HttpHandler {
    let app = TowerToHyperService::new(routes(shared));
    Arc::new(move |req| {
        let answered = app.call(req);
        Box::pin(async move {
            let response = match answered.await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            response.map(|body| body.map_err(Into::into).boxed_unsync())
        }) as HttpFuture
    })
}

fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/tree", get(tree))
        .route("/recipe", get(recipe))
        .route("/services", get(services))
        .route("/sessions", get(sessions))
        .route("/events", get(events))
        .route("/set", post(write::set))
        .route("/delete", post(write::delete))
        .route("/assets/console.css", get(|| async { asset("text/css", CSS) }))
        .route("/assets/live.js", get(|| async { asset("text/javascript", JS) }))
        .fallback(|| async {
            answer(
                &HeaderMap::new(),
                StatusCode::NOT_FOUND,
                error_page("Not found", "No such page."),
            )
        })
        .layer(DefaultBodyLimit::max(write::WRITE_FORM_BYTES_MAX))
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// The login, the methods, the headers.
async fn guard(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let read = req.method() == Method::GET || req.method() == Method::HEAD;
    let write = req.method() == Method::POST && shared.writes().is_some();
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    let mut res = if !shared.answers_to(host) {
        (StatusCode::MISDIRECTED_REQUEST, "the console does not answer to that host name\n")
            .into_response()
    } else if !read && !write {
        (StatusCode::METHOD_NOT_ALLOWED, "the console is read-only\n").into_response()
    } else if write && !same_origin(req.headers()) {
        (StatusCode::FORBIDDEN, "a write from another origin\n").into_response()
    } else if shared.config.auth.as_ref().is_some_and(|a| !a.allows(req.headers())) {
        let mut r = (StatusCode::UNAUTHORIZED, "login required\n").into_response();
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"rzk console\", charset=\"UTF-8\""),
        );
        r
    } else {
        next.run(req).await
    };
    let h = res.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    res
}

/// A POST's `Origin`, when the browser sends one, is the console's own (`Host`, which the
/// guard has checked against the names it answers to): a second guard beside the CSRF token. (`Referrer-Policy: same-origin`, not `no-referrer`, under
/// which browsers send `Origin: null` even from the console's own forms.)
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) == Some(host)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
    r
}

#[derive(Deserialize)]
struct PathQuery {
    path: Option<String>,
    after: Option<String>,
    kind: Option<String>,
    base: Option<String>,
    from: Option<usize>,
}

async fn overview(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let read = shared.overview.get(|| async {
        let scan = async {
            let client = shared.session.client()?;
            Ok::<_, ReadError>(
                read::scan::scan(&client, shared.config.limits.scan_nodes_max).await?,
            )
        };
        tokio::join!(scan, read::servers::identify(&shared.config.servers))
    });
    match &*read.await {
        (Ok(scan), servers) => {
            let page = pages::overview::page(scan, servers, &shared.session);
            answer(&headers, StatusCode::OK, page)
        }
        (Err(e), _) => failed(&headers, "/", e),
    }
}

async fn tree(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<PathQuery>,
) -> Answer {
    let path = absolute(&headers, q.path)?;
    let limits = &shared.config.limits;
    let read = async {
        let client = shared.session.client()?;
        let (page, data_max) = (limits.children_per_page, limits.data_bytes_shown_max);
        Ok::<_, ReadError>(
            read::node::read(&client, &path, q.after.as_deref(), page, data_max).await?,
        )
    };
    let view = read.await.map_err(|e| Refusal::from(failed(&headers, &path, &e)))?;
    let kind = pages::tree::kind_of(&view);
    Ok(answer(&headers, StatusCode::OK, pages::tree::page(&view, kind, shared.writes())))
}

async fn recipe(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<PathQuery>,
) -> Answer {
    let path = absolute(&headers, q.path)?;
    let Some(kind) = q.kind.as_deref().and_then(Kind::from_slug) else {
        let page = error_page("Bad recipe", "kind= names no recipe the console reads.");
        return Err(answer(&headers, StatusCode::BAD_REQUEST, page).into());
    };
    let view = read::recipe::read(&shared.session, &path, kind).await;
    let view = view.map_err(|e| Refusal::from(failed(&headers, &path, &e)))?;
    let window = Window { from: q.from.unwrap_or(0), len: shared.config.limits.children_per_page };
    let page = pages::recipe::page(&path, kind, &view, window, shared.writes());
    Ok(answer(&headers, StatusCode::OK, page))
}

async fn services(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<PathQuery>,
) -> Answer {
    let base = absolute(&headers, q.base.or(Some("/services".to_string())))?;
    let read = async {
        let client = shared.session.client()?;
        Ok::<_, ReadError>(read::services::read(&client, &base).await?)
    };
    let list = read.await.map_err(|e| Refusal::from(failed(&headers, &base, &e)))?;
    Ok(answer(&headers, StatusCode::OK, pages::services::page(&base, &list)))
}

async fn sessions(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Answer {
    let read = shared.sessions.get(|| async {
        let client = shared.session.client()?;
        Ok::<_, ReadError>(
            read::sessions::read(&client, shared.config.limits.scan_nodes_max).await?,
        )
    });
    let read = read.await;
    let found = read.as_ref().as_ref().map_err(|e| Refusal::from(failed(&headers, "/", e)))?;
    Ok(answer(&headers, StatusCode::OK, pages::sessions::page(found)))
}

/// A page's nudges as server-sent events: `change` after each burst of changes under its
/// path. 503 when the console watches as many paths as it may.
async fn events(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<PathQuery>,
) -> Answer {
    let path = absolute(&headers, q.path)?;
    let Some(rx) = shared.live.subscribe(&path) else {
        let busy = (StatusCode::SERVICE_UNAVAILABLE, "too many live paths; reload by hand\n");
        return Ok(busy.into_response());
    };
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await {
            Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                tokio::time::sleep(NUDGE_COALESCE).await;
                while rx.try_recv().is_ok() {}
                Some((Ok::<_, Infallible>(Event::default().event("change").data("1")), rx))
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => None,
        }
    });
    // Each event carries data: a browser dispatches none whose data is empty.
    let first = futures_util::stream::once(async { Ok(Event::default().event("ready").data("1")) });
    let events = Sse::new(futures_util::StreamExt::chain(first, stream));
    Ok(events.keep_alive(KeepAlive::default()).into_response())
}
