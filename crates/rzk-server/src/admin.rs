//! The AdminServer: ZooKeeper's HTTP command API (`admin.enableServer`), on a listener of its
//! own. `GET <commandURL>` lists the commands as links, as ZooKeeper does;
//! `GET <commandURL>/<name>` runs one (see `admin_commands`) and answers JSON, with status
//! 200 even for an unknown command, whose `error` says so. Other methods get 405, other paths
//! 404. HTTP and its limits are `http_listener`'s.

use std::fmt::Write as _;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, StatusCode};
use tokio::net::TcpListener;

use crate::admin_commands::{self, COMMANDS};
use crate::http_listener::{self, reply, HttpResponse};
use crate::shared::Inner;

/// Accepts requests until the task is aborted (when the server shuts down). `command_url`
/// is the path the commands live under, without a trailing slash (`/commands`).
pub(crate) async fn serve(inner: Arc<Inner>, listener: TcpListener, command_url: String) {
    let handler = Arc::new(move |req: &Request<Incoming>| respond(&inner, &command_url, req));
    http_listener::serve("admin", listener, handler).await;
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
