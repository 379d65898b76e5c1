//! The HTTP listener the metrics endpoint and the AdminServer share: hyper's HTTP/1 on a
//! listener of its own, every connection bounded in number, header size, time to send its
//! headers (slowloris) and lifetime, so that no HTTP client can hold more than a fixed share
//! of the server. The handlers answer from the core under one short hold of its lock and
//! never await, so nothing here can stall the client port.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Most HTTP connections one listener serves at once; more are closed as soon as they are
/// accepted.
pub const HTTP_CONNECTIONS_MAX: usize = 16;
/// How long a client may take to send a request's headers (slowloris bound).
pub const HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes buffered for one request's headers (hyper's smallest allowed buffer); a request
/// with larger headers gets 431 and the connection closes.
pub const HTTP_REQUEST_BYTES_MAX: usize = 8 * 1024;
/// Longest an HTTP connection lives, keep-alive included.
pub const HTTP_CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// What every handler answers.
pub(crate) type HttpResponse = Response<Full<Bytes>>;

/// What answers each request of a listener. Called on a tokio worker: it must not block for
/// long (a hold of the core's lock is fine).
pub(crate) type Handler = Arc<dyn Fn(&Request<Incoming>) -> HttpResponse + Send + Sync>;

/// Accepts connections on `listener` and answers their requests with `handler` until the task
/// is aborted (when the server shuts down). `what` names the listener in logs.
pub(crate) async fn serve(what: &'static str, listener: TcpListener, handler: Handler) {
    let slots = Arc::new(Semaphore::new(HTTP_CONNECTIONS_MAX));
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        tracing::warn!(%peer, limit = HTTP_CONNECTIONS_MAX,
                            "refusing {what} connection: too many open");
                        continue;
                    };
                    let handler = handler.clone();
                    conns.spawn(async move {
                        connection(what, handler, stream, peer).await;
                        drop(slot);
                    });
                }
                Err(e) => {
                    // Usually EMFILE: back off instead of spinning.
                    tracing::warn!("{what} accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

async fn connection(what: &'static str, handler: Handler, stream: TcpStream, peer: SocketAddr) {
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let response = handler(&req);
        async move { Ok::<_, Infallible>(response) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HTTP_HEADER_READ_TIMEOUT)
        .max_buf_size(HTTP_REQUEST_BYTES_MAX)
        .serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(HTTP_CONNECTION_LIFETIME, conn).await {
        Ok(Ok(())) => {}
        // Malformed requests, oversized headers and slowloris clients end here: worth a line
        // at info, since they are the client's doing and bounded.
        Ok(Err(e)) => tracing::info!(%peer, "{what} connection closed: {e}"),
        Err(_) => tracing::info!(%peer, "{what} connection closed at its lifetime"),
    }
}

/// Serves one text document, `render()`'s output as `content_type`, at GET (or HEAD) `path`
/// on `listener`, under this listener's limits, until the task is aborted: a metrics
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
    let handler = Arc::new(move |req: &Request<Incoming>| {
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
    serve(what, listener, handler).await;
}

/// A response with `status` and `body`, for the handlers.
pub(crate) fn reply(status: StatusCode, body: impl Into<Bytes>) -> HttpResponse {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r
}
