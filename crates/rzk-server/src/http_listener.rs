//! The HTTP listener the metrics endpoint, the AdminServer and the web console share: hyper's
//! HTTP/1 on a listener of its own, every connection bounded in number, header size, time to
//! send its headers (slowloris) and lifetime ([`HttpLimits`]), so that no HTTP client can hold
//! more than a fixed share of the process. The server's own handlers answer from the core
//! under one short hold of its lock and never await, so nothing here can stall the client
//! port; a handler mounted from outside (the console) awaits on its own tasks' time.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Most HTTP connections the server's own listeners serve at once; more are closed as soon as
/// they are accepted.
pub const HTTP_CONNECTIONS_MAX: usize = 16;
/// How long a client may take to send a request's headers (slowloris bound).
pub const HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes buffered for one request's headers (hyper's smallest allowed buffer); a request
/// with larger headers gets 431 and the connection closes.
pub const HTTP_REQUEST_BYTES_MAX: usize = 8 * 1024;
/// Longest an HTTP connection of the server's own listeners lives, keep-alive included.
pub const HTTP_CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// The bounds of one HTTP listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Connections served at once; one more is closed as soon as it is accepted.
    pub connections_max: usize,
    /// How long a client may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// Most bytes buffered for a request's headers (at least 8 KiB, hyper's smallest).
    pub request_bytes_max: usize,
    /// Longest a connection lives, keep-alive and streamed answers included.
    pub connection_lifetime: Duration,
}

impl HttpLimits {
    /// The metrics endpoint's and the AdminServer's bounds: the `HTTP_*` constants.
    pub const SERVER: HttpLimits = HttpLimits {
        connections_max: HTTP_CONNECTIONS_MAX,
        header_read_timeout: HTTP_HEADER_READ_TIMEOUT,
        request_bytes_max: HTTP_REQUEST_BYTES_MAX,
        connection_lifetime: HTTP_CONNECTION_LIFETIME,
    };
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits::SERVER
    }
}

/// An answer's body: whole (the server's own) or streamed (the console's live events).
pub type HttpBody = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;
/// What every handler answers.
pub type HttpResponse = Response<HttpBody>;
/// A handler's answer, on its way.
pub type HttpFuture = Pin<Box<dyn Future<Output = HttpResponse> + Send>>;
/// What answers each request of a listener. It runs on a tokio worker: it must not block for
/// long (a hold of the core's lock is fine); awaiting is fine.
pub type HttpHandler = Arc<dyn Fn(Request<Incoming>) -> HttpFuture + Send + Sync>;

/// Accepts connections on `listener` and answers their requests with `handler`, under
/// `limits`, until the task is aborted. `what` names the listener in logs.
///
/// # Cancellation safety
/// Safe: aborting it drops every connection.
pub async fn serve_http(
    what: &'static str,
    listener: TcpListener,
    limits: HttpLimits,
    handler: HttpHandler,
) {
    let slots = Arc::new(Semaphore::new(limits.connections_max.max(1)));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            // Reap finished connections first, so that their slots are free for the next.
            biased;
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        tracing::warn!(%peer, limit = limits.connections_max,
                            "refusing {what} connection: too many open");
                        continue;
                    };
                    let handler = handler.clone();
                    conns.spawn(async move {
                        connection(what, limits, handler, stream, peer).await;
                        drop(slot);
                    });
                }
                Err(e) => {
                    // Usually EMFILE: back off instead of spinning.
                    tracing::warn!("{what} accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}

async fn connection(
    what: &'static str,
    limits: HttpLimits,
    handler: HttpHandler,
    stream: TcpStream,
    peer: SocketAddr,
) {
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let response = handler(req);
        async move { Ok::<_, Infallible>(response.await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.request_bytes_max)
        .serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(limits.connection_lifetime, conn).await {
        Ok(Ok(())) => {}
        // Malformed requests, oversized headers and slowloris clients end here: worth a line
        // at info, since they are the client's doing and bounded.
        Ok(Err(e)) => tracing::info!(%peer, "{what} connection closed: {e}"),
        Err(_) => tracing::info!(%peer, "{what} connection closed at its lifetime"),
    }
}

/// A handler that answers at once, from a function that does not await.
pub(crate) fn sync_handler(
    f: impl Fn(&Request<Incoming>) -> HttpResponse + Send + Sync + 'static,
) -> HttpHandler {
    Arc::new(move |req: Request<Incoming>| {
        let response = f(&req);
        Box::pin(std::future::ready(response))
    })
}

/// Serves one text document, `render()`'s output as `content_type`, at GET (or HEAD) `path`
/// on `listener`, under the server's HTTP limits, until the task is aborted: a metrics
/// endpoint. Other paths get 404 and other methods 405. `render` runs on a tokio worker for
/// each scrape, so it must not block for long. Cancellation safe: aborting drops every
/// connection.
pub async fn serve_text(
    what: &'static str,
    listener: TcpListener,
    path: &'static str,
    content_type: &'static str,
    render: impl Fn() -> String + Send + Sync + 'static,
) {
    let handler = sync_handler(move |req: &Request<Incoming>| {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return reply(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
        }
        if req.uri().path() != path {
            return reply(StatusCode::NOT_FOUND, format!("rzk serves {path}\n"));
        }
        let mut r = reply(StatusCode::OK, render());
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        r
    });
    serve_http(what, listener, HttpLimits::SERVER, handler).await;
}

/// A response with `status` and `body`, for the handlers.
pub(crate) fn reply(status: StatusCode, body: impl Into<Bytes>) -> HttpResponse {
    let body = Full::new(body.into()).map_err(|never: Infallible| match never {}).boxed_unsync();
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r
}
