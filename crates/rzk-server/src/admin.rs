//! The AdminServer: ZooKeeper's HTTP command API (`admin.enableServer`), on a listener of its
//! own. `GET <commandURL>` lists the commands as links, as ZooKeeper does;
//! `GET <commandURL>/<name>` runs one (see `admin_commands`) and answers JSON, with status
//! 200 even for an unknown command, whose `error` says so. Other methods get 405, other paths
//! 404. HTTP and its limits are `http_listener`'s.
//!
//! A handler from outside the server (the web console) may be mounted under a path of its
//! own once the server runs ([`crate::Server::mount_admin`]): it gets every request under
//! that path, with the path stripped, and every method; the commands keep theirs.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, StatusCode, Uri};
use tokio::net::TcpListener;

use crate::admin_commands::{self, COMMANDS};
use crate::http_listener::{self, reply, HttpHandler, HttpLimits, HttpResponse};
use crate::shared::Inner;

/// A handler mounted under a path of the AdminServer's port, set at most once.
pub(crate) type Mount = Arc<OnceLock<(String, HttpHandler)>>;

/// Accepts requests until the task is aborted (when the server shuts down). `command_url`
/// is the path the commands live under, without a trailing slash (`/commands`).
pub(crate) async fn serve(
    inner: Arc<Inner>,
    listener: TcpListener,
    command_url: String,
    limits: HttpLimits,
    mount: Mount,
) {
    let handler: HttpHandler = Arc::new(move |req: Request<Incoming>| {
        if let Some((prefix, mounted)) = mount.get() {
            match under(prefix, req.uri()) {
                Under::Exactly => return Box::pin(std::future::ready(slash(prefix))),
                Under::Inside(uri) => {
                    let mut req = req;
                    *req.uri_mut() = uri;
                    return mounted(req);
                }
                Under::Outside => {}
            }
        }
        Box::pin(std::future::ready(respond(&inner, &command_url, &req)))
    });
    http_listener::serve_http("admin", listener, limits, handler).await;
}

enum Under {
    /// The mount's own path, without its trailing slash.
    Exactly,
    /// Under it: the request's URI with the mount's path taken off.
    Inside(Uri),
    Outside,
}

fn under(prefix: &str, uri: &Uri) -> Under {
    let Some(rest) = uri.path().strip_prefix(prefix) else {
        return Under::Outside;
    };
    if rest.is_empty() {
        return Under::Exactly;
    }
    if !rest.starts_with('/') {
        return Under::Outside;
    }
    let stripped = match uri.query() {
        Some(q) => format!("{rest}?{q}"),
        None => rest.to_string(),
    };
    // A suffix of a valid URI's path is a valid path.
    stripped.parse().map(Under::Inside).unwrap_or(Under::Outside)
}

/// A mount's pages link relative to its path with a trailing slash: send the browser there.
fn slash(prefix: &str) -> HttpResponse {
    let mut r = reply(StatusCode::PERMANENT_REDIRECT, "");
    if let Ok(v) = HeaderValue::from_str(&format!("{prefix}/")) {
        r.headers_mut().insert(LOCATION, v);
    }
    r
}

fn respond(inner: &Inner, command_url: &str, req: &Request<Incoming>) -> HttpResponse {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "");
    }
    let path = req.uri().path();
    let Some(rest) = path.strip_prefix(command_url) else {
        return reply(StatusCode::NOT_FOUND, "not found\n");
    };
    match rest {
        "" | "/" => reply(StatusCode::OK, list(command_url)),
        _ => match rest.strip_prefix('/') {
            Some(name) => {
                let body = admin_commands::run(inner, name, req.uri().query());
                // Serialising a Value cannot fail.
                let text = serde_json::to_string_pretty(&body).unwrap_or_default();
                let mut r = reply(StatusCode::OK, text);
                r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r
            }
            // `/commandsX`: not under the command URL.
            None => reply(StatusCode::NOT_FOUND, "not found\n"),
        },
    }
}

/// The command list: one link per command, ZooKeeper's markup.
fn list(command_url: &str) -> String {
    let mut out = String::new();
    for (name, _) in COMMANDS {
        let _ = writeln!(out, "<a href=\"{command_url}/{name}\">{name}</a>\n<br/>");
    }
    out
}
