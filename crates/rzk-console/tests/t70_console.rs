//! The console against the in-process rzk server, over HTTP as a browser speaks it:
//! - the overview finds an election, a lock and a registry by their layouts;
//! - an election's page shows its leader first and its queue in order; a lock's its holder
//!   and two waiters; a live page hears of the leader's end within a second;
//! - node names and data that are HTML and JavaScript come back as text;
//! - a node's children come a page at a time;
//! - the login, the methods, a missing node and a bad path are answered as they should be.

use std::net::SocketAddr;
use std::time::Duration;

use rzk_client::{Acls, CreateMode};
use rzk_console::{BasicAuth, Console, ConsoleConfig};
use rzk_recipes::discovery::{ServiceDiscovery, ServiceInstance};
use rzk_recipes::election::{LatchOptions, LeaderLatch};
use rzk_recipes::lock::{InterProcessMutex, MutexOptions};
use rzk_recipes::session::{Session, SessionConfig};
use rzk_server::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a live page may take to hear of a change (the issue's "within a second").
const LIVE_WITHIN: Duration = Duration::from_secs(1);

async fn session(server: &TestServer) -> Session {
    Session::connect(SessionConfig::new(server.connect_string())).await.unwrap()
}

async fn console(session: &Session, config: ConsoleConfig) -> Console {
    Console::start(session.clone(), "127.0.0.1:0".parse().unwrap(), config).await.unwrap()
}

/// One request; the status, the header block and the body.
async fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    extra: &str,
) -> (u16, String, String) {
    send(addr, method, target, extra, "").await
}

/// One request with `body` after the headers `extra`.
async fn send(
    addr: SocketAddr,
    method: &str,
    target: &str,
    extra: &str,
    body: &str,
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // The console answers only to its own host names (DNS rebinding); `extra` may name another.
    let host = if extra.contains("Host:") { String::new() } else { format!("Host: {addr}\r\n") };
    let req = format!("{method} {target} HTTP/1.1\r\n{host}Connection: close\r\n{extra}\r\n{body}");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out)).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

async fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    let (status, _, body) = request(addr, "GET", target, "").await;
    (status, body)
}

/// Reads from `s` until `want` has been seen, or fails after `within`.
async fn read_until(s: &mut TcpStream, want: &str, within: Duration) {
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + within;
    while !seen.contains(want) {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout_at(deadline, s.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("no {want:?} within {within:?}; saw {seen:?}"))
            .unwrap();
        assert!(n > 0, "closed before {want:?}; saw {seen:?}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_and_recipe_pages_show_leaders_holders_and_waiters_live() {
    let server = TestServer::start().unwrap();
    let s = session(&server).await;
    let mut latches = Vec::new();
    for id in ["alpha", "bravo", "charlie"] {
        let latch =
            LeaderLatch::new(&s, "/jobs/report", LatchOptions::default().with_id(id)).unwrap();
        latch.start().await.unwrap();
        latches.push(latch);
    }
    latches[0].await_leadership().await.unwrap();
    let mutex = |id: &str| {
        InterProcessMutex::new(&s, "/locks/db", MutexOptions::default().with_id(id)).unwrap()
    };
    let (holder, w1, w2) = (mutex("holder"), mutex("waiter-1"), mutex("waiter-2"));
    let guard = holder.acquire().await.unwrap();
    let registry = ServiceDiscovery::<serde_json::Value>::new(&s, "/services").unwrap();
    let billing = ServiceInstance::new("billing", "10.0.0.7", 8443).with_id("billing-1");
    registry.register(&billing).await.unwrap();
    // A config node whose JSON object is no service instance, sorted first under the root.
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let client = s.client().unwrap();
    client.mkdir("/config", &open).await.unwrap();
    client.create("/config/app", br#"{"pool":8}"#, &open).await.unwrap();
    let config = ConsoleConfig::default().with_servers(&server.connect_string());
    let c = console(&s, config).await;

    // The waiters queue one after the other, so their order is known.
    let lock_page = "/recipe?path=/locks/db&kind=mutex";
    let mut waiting = Vec::new();
    let mut body = String::new();
    for (n, w) in [w1, w2].into_iter().enumerate() {
        waiting.push(tokio::spawn(async move { w.acquire().await.map(drop) }));
        for _ in 0..200 {
            body = get(c.addr(), lock_page).await.1;
            if body.matches("waits (exclusive)").count() == n + 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    assert_eq!(body.matches("waits (exclusive)").count(), 2, "{body}");
    assert!(body.contains("holds (exclusive)") && body.contains(">holder<"), "{body}");
    let holder_at = body.find(">holder<").unwrap();
    assert!(
        holder_at < body.find(">waiter-1<").unwrap()
            && body.find(">waiter-1<").unwrap() < body.find(">waiter-2<").unwrap()
    );

    let (status, overview) = get(c.addr(), "/").await;
    assert_eq!(status, 200);
    let registry_link = "href=\"services?base=/services\"";
    for want in ["Elections", "/jobs/report", "LeaderLatch", "Locks", "/locks/db", registry_link] {
        assert!(overview.contains(want), "overview lacks {want}: {overview}");
    }
    // Who the server is (srvr), and the config node among the data nodes.
    assert!(overview.contains("<h2>Servers</h2>") && overview.contains("standalone"), "{overview}");
    // The test server allows every word: mntr's figures too, one cell each.
    let figures = &overview[overview.find("class=\"figures\"").expect("mntr's table")..];
    let figures = &figures[..figures.find("</table>").unwrap()];
    assert!(!figures.contains("refused") && !figures.contains("no answer"), "{figures}");
    assert_eq!(figures.matches("<td class=\"num\">").count(), 6, "{figures}");
    assert!(!figures.contains("<td class=\"num\"></td>"), "{figures}");
    assert!(overview.contains("<a href=\"tree?path=/config/app\">/config/app</a>"), "{overview}");
    // The config node's object is no instance: the root is no registry.
    assert!(!overview.contains("href=\"services?base=/\""), "{overview}");
    // Each latch candidate's, holder's and waiter's session, with its node; the registry's.
    let (_, sessions) = get(c.addr(), "/sessions").await;
    let session_hex = format!("0x{:x}", s.session_id().unwrap().0);
    assert!(sessions.contains(&format!("<code>{session_hex}</code>")), "{sessions}");
    assert!(sessions.contains("/services/billing/billing-1"), "{sessions}");
    assert!(
        sessions.contains("/jobs/report/_c_") && sessions.contains("/locks/db/_c_"),
        "{sessions}"
    );
    let (_, services) = get(c.addr(), "/services?base=/services").await;
    assert!(
        services.contains("billing") && services.contains("10.0.0.7") && services.contains("8443"),
        "{services}"
    );

    let latch_page = "/recipe?path=/jobs/report&kind=latch";
    let (_, body) = get(c.addr(), latch_page).await;
    assert!(body.contains("Leader: <strong class=\"leader\">alpha</strong>"), "{body}");
    assert!(body.find(">alpha<").unwrap() < body.find(">bravo<").unwrap());
    assert!(body.find(">bravo<").unwrap() < body.find(">charlie<").unwrap());

    // A live page: its event stream says ready, then change within a second of the leader
    // leaving.
    let mut events = TcpStream::connect(c.addr()).await.unwrap();
    let req = format!(
        "GET /events?path=/jobs/report HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\r\n",
        c.addr()
    );
    events.write_all(req.as_bytes()).await.unwrap();
    // With data: a browser dispatches no event whose data is empty.
    read_until(&mut events, "event: ready\ndata: 1\n", Duration::from_secs(10)).await;
    let alpha = latches.remove(0);
    alpha.close().await.unwrap();
    read_until(&mut events, "event: change\ndata: 1\n", LIVE_WITHIN).await;
    latches[0].await_leadership().await.unwrap();
    let (_, body) = get(c.addr(), latch_page).await;
    assert!(body.contains("Leader: <strong class=\"leader\">bravo</strong>"), "{body}");
    assert!(!body.contains(">alpha<"), "{body}");

    // The fragment a live page fetches is <main>'s inside alone.
    let (_, _, fragment) = request(c.addr(), "GET", latch_page, "X-Rzk-Fragment: 1\r\n").await;
    assert!(fragment.contains("bravo") && !fragment.contains("<html"), "{fragment}");

    guard.release().await.unwrap();
    for w in waiting {
        w.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_data_that_are_markup_come_back_as_text() {
    let server = TestServer::start().unwrap();
    let s = session(&server).await;
    let client = s.client().unwrap();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create("/xss", b"<img src=x onerror=alert(1)>", &open).await.unwrap();
    client
        .create("/xss/<script>alert(1)<\\script>", b"\"><script>alert(2)</script>", &open)
        .await
        .unwrap();
    let c = console(&s, ConsoleConfig::default()).await;
    let (status, head, body) = request(c.addr(), "GET", "/tree?path=/xss", "").await;
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{head}"
    );
    assert!(body.contains("&lt;img src=x onerror=alert(1)&gt;"), "{body}");
    assert!(body.contains("&lt;script&gt;alert(1)&lt;\\script&gt;"), "{body}");
    assert!(!body.contains("<img src=x") && !body.contains("<script>alert"), "{body}");
    // The child's own page: its name in the path, its data, all text.
    let child = "/tree?path=/xss/%3Cscript%3Ealert(1)%3C%5Cscript%3E";
    let (status, body) = get(c.addr(), child).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"), "{body}");
    assert!(!body.contains("<script>alert"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_come_a_page_at_a_time() {
    let server = TestServer::start().unwrap();
    let s = session(&server).await;
    let client = s.client().unwrap();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create("/many", b"", &open).await.unwrap();
    let creates: Vec<_> =
        (0..250).map(|i| client.create(&format!("/many/n{i:03}"), b"", &open)).collect();
    for c in creates {
        c.await.unwrap();
    }
    let c = console(&s, ConsoleConfig::default()).await;
    let (_, first) = get(c.addr(), "/tree?path=/many").await;
    assert!(
        first.contains(">n000<") && first.contains(">n099<") && !first.contains(">n100<"),
        "{first}"
    );
    assert!(first.contains("href=\"tree?path=/many&amp;after=n099\""), "{first}");
    let (_, second) = get(c.addr(), "/tree?path=/many&after=n099").await;
    assert!(
        second.contains(">n100<") && second.contains(">n199<") && !second.contains(">n099<"),
        "{second}"
    );
    let (_, last) = get(c.addr(), "/tree?path=/many&after=n199").await;
    assert!(last.contains(">n249<") && !last.contains("after="), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_methods_and_bad_requests_are_answered() {
    let server = TestServer::start().unwrap();
    let s = session(&server).await;
    let c = console(&s, ConsoleConfig::default().with_auth(BasicAuth::new("ops", "s3cret"))).await;
    let (status, head, _) = request(c.addr(), "GET", "/", "").await;
    assert_eq!(status, 401);
    assert!(
        head.to_ascii_lowercase().contains("www-authenticate: basic realm=\"rzk console\""),
        "{head}"
    );
    let login = "Authorization: Basic b3BzOnMzY3JldA==\r\n";
    assert_eq!(request(c.addr(), "GET", "/", login).await.0, 200);
    assert_eq!(request(c.addr(), "GET", "/", "Authorization: Basic b3BzOndyb25n\r\n").await.0, 401);
    assert_eq!(request(c.addr(), "POST", "/tree?path=/", login).await.0, 405);
    assert_eq!(request(c.addr(), "DELETE", "/tree?path=/", login).await.0, 405);
    let (status, _, body) = request(c.addr(), "GET", "/tree?path=/nowhere", login).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("/nowhere does not exist"), "{body}");
    assert_eq!(request(c.addr(), "GET", "/tree?path=relative", login).await.0, 400);
    assert_eq!(request(c.addr(), "GET", "/recipe?path=/x&kind=nonsense", login).await.0, 400);
    assert_eq!(request(c.addr(), "GET", "/no-such-page", login).await.0, 404);
    // A page that rebinds its own name to the console's address names itself as the host.
    let rebound = format!("{login}Host: attacker.example:{}\r\n", c.addr().port());
    assert_eq!(request(c.addr(), "GET", "/", &rebound).await.0, 421);
    let localhost = format!("{login}Host: localhost:{}\r\n", c.addr().port());
    assert_eq!(request(c.addr(), "GET", "/", &localhost).await.0, 200);
    let (status, _, body) = request(c.addr(), "GET", "/tree?path=/a//b", login).await;
    assert_eq!(status, 400, "{body}");
}

/// What a page may take at scale: a usability bound, far above what it takes.
const PAGE_WITHIN: Duration = Duration::from_secs(1);

async fn timed_get(addr: SocketAddr, target: &str) -> String {
    let started = std::time::Instant::now();
    let (status, body) = get(addr, target).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{target}: {body}");
    assert!(took < PAGE_WITHIN, "{target} took {took:?}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_participants_and_a_hundred_thousand_children_render_and_page() {
    let server = TestServer::start().unwrap();
    let s = session(&server).await;
    let client = s.client().unwrap();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.mkdir("/big/election", &open).await.unwrap();
    client.mkdir("/big/tree", &open).await.unwrap();
    // A LeaderLatch's layout, written directly: 1,000 participants p0..p999 in join order.
    let member = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let joins: Vec<_> = (0..1_000u32)
        .map(|i| {
            let node = format!("/big/election/_c_{i:08x}-0000-4000-8000-{i:012x}-latch-");
            client.create(&node, format!("p{i}").as_bytes(), &member)
        })
        .collect();
    for j in joins {
        j.await.unwrap();
    }
    for chunk in (0..100_000u32).collect::<Vec<_>>().chunks(5_000) {
        let creates: Vec<_> = chunk
            .iter()
            .map(|i| client.create(&format!("/big/tree/n{i:06}"), b"", &open))
            .collect();
        for c in creates {
            c.await.unwrap();
        }
    }
    let c = console(&s, ConsoleConfig::default()).await;

    let first = timed_get(c.addr(), "/recipe?path=/big/election&kind=latch").await;
    assert!(
        first.contains("Leader: <strong class=\"leader\">p0</strong>, 999 following"),
        "{first}"
    );
    assert_eq!(first.matches("<tr class=").count(), 100, "one page of members");
    assert!(first.contains("from=100\""), "{first}");
    let last = timed_get(c.addr(), "/recipe?path=/big/election&kind=latch&from=900").await;
    assert!(last.contains(">p999<") && !last.contains(">p899<") && !last.contains("from=1000"));

    let tree = timed_get(c.addr(), "/tree?path=/big/tree").await;
    assert!(
        tree.contains(">n000000<") && tree.contains(">n000099<") && !tree.contains(">n000100<")
    );
    let deep = timed_get(c.addr(), "/tree?path=/big/tree&after=n099949").await;
    assert!(deep.contains(">n099950<") && deep.contains(">n099999<") && !deep.contains("after="));

    // The overview lists the big node's children, walks into none of them, and says so.
    let overview = timed_get(c.addr(), "/").await;
    assert!(
        overview.contains("/big/election") && overview.contains("the scan's limit"),
        "{overview}"
    );
}

/// The hidden `csrf` field of a page's forms.
fn csrf_of(page: &str) -> String {
    let field = "name=\"csrf\" value=\"";
    let at = page.find(field).expect("a write form") + field.len();
    page[at..].split('"').next().unwrap().to_string()
}

async fn post(addr: SocketAddr, target: &str, form: &str) -> (u16, String, String) {
    let extra = format!(
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
        form.len()
    );
    send(addr, "POST", target, &extra, form).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_offered_only_when_allowed_and_each_is_confirmed_and_fenced() {
    let server = TestServer::start().unwrap();
    let s = session(&server).await;
    let client = s.client().unwrap();
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create("/cfg", b"v1", &open).await.unwrap();
    client.create("/json", br#"{"b":1,"a":[2]}"#, &open).await.unwrap();
    // Read-only: no form, and a POST is refused.
    let ro = console(&s, ConsoleConfig::default()).await;
    let (_, page) = get(ro.addr(), "/tree?path=/cfg").await;
    assert!(!page.contains("<form"), "{page}");
    assert_eq!(post(ro.addr(), "/set", "path=%2Fcfg&version=0&data=x&confirm=yes").await.0, 405);

    let c = console(&s, ConsoleConfig::default().with_writes(true)).await;
    let (_, page) = get(c.addr(), "/tree?path=/cfg").await;
    let csrf = csrf_of(&page);
    // Without the token, or from another origin: refused, nothing written.
    let form = "csrf=forged&path=%2Fcfg&version=0&data=evil&confirm=yes";
    assert_eq!(post(c.addr(), "/set", form).await.0, 403);
    for origin in ["http://evil.example", "null"] {
        let (status, _, _) =
            request(c.addr(), "POST", "/set", &format!("Origin: {origin}\r\n")).await;
        assert_eq!(status, 403, "{origin}");
    }
    assert_eq!(client.get_data("/cfg").await.unwrap().0, b"v1");
    // The first POST asks; only the confirmed one writes, at the version shown.
    let form = format!("csrf={csrf}&path=%2Fcfg&version=0&data=v2");
    let (status, _, ask) = post(c.addr(), "/set", &form).await;
    assert_eq!(status, 200, "{ask}");
    assert!(ask.contains("Confirm") && ask.contains("name=\"confirm\" value=\"yes\""), "{ask}");
    assert_eq!(client.get_data("/cfg").await.unwrap().0, b"v1");
    let (status, head, _) = post(c.addr(), "/set", &format!("{form}&confirm=yes")).await;
    assert_eq!(status, 303, "{head}");
    let (data, stat) = client.get_data("/cfg").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"v2"[..], 1));
    // A second write at the version first shown is refused: the node moved on.
    let (status, _, body) = post(c.addr(), "/set", &format!("{form}&confirm=yes")).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("no longer at version 0"), "{body}");
    // The form starts from the data as it is (not the page's re-indented JSON), and a
    // browser's CRLF line ends are stored as the LF they were.
    let (_, page) = get(c.addr(), "/tree?path=/json").await;
    assert!(page.contains("<textarea name=\"data\" rows=\"6\" cols=\"80\">{&quot;b&quot;:1,&quot;a&quot;:[2]}</textarea>"), "{page}");
    let crlf = format!("csrf={csrf}&path=%2Fjson&version=0&data=x%0D%0Ay&confirm=yes");
    assert_eq!(post(c.addr(), "/set", &crlf).await.0, 303);
    assert_eq!(client.get_data("/json").await.unwrap().0, b"x\ny");
    // Asking a participant to go: the confirmation reads its version; confirmed, its node goes.
    let latch = LeaderLatch::new(&s, "/job", LatchOptions::default().with_id("solo")).unwrap();
    latch.start().await.unwrap();
    let node = latch.participants().await.unwrap().list[0].node.clone();
    let (_, page) = get(c.addr(), "/recipe?path=/job&kind=latch").await;
    assert!(page.contains("Ask to go"), "{page}");
    let enc: String = node.replace('/', "%2F");
    let (status, _, ask) = post(c.addr(), "/delete", &format!("csrf={csrf}&path={enc}")).await;
    assert_eq!(status, 200, "{ask}");
    assert!(ask.contains("name=\"version\" value=\"0\""), "{ask}");
    let done = format!("csrf={csrf}&path={enc}&version=0&confirm=yes");
    assert_eq!(post(c.addr(), "/delete", &done).await.0, 303);
    assert!(client.check_stat(&node).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_http_clients_are_bounded_and_the_console_keeps_serving() {
    // Time bounds (the header timeout, waited out), so a heavy slot.
    let _slot = rzk_testkit::slots::heavy_async().await;
    let server = TestServer::start().unwrap();
    let s = session(&server).await;
    let config = ConsoleConfig::default();
    let limits = rzk_testkit::http_abuse::HttpLimits {
        connections_max: config.limits.max_connections,
        header_read_timeout: rzk_console::HTTP_HEADER_READ_TIMEOUT,
        request_bytes_max: rzk_console::HTTP_REQUEST_BYTES_MAX,
    };
    let c = console(&s, config).await;
    let addr = c.addr();
    // The attack fills every connection the console serves, so nothing probes beside it: the
    // console must answer again after it.
    let attack = tokio::task::spawn_blocking(move || {
        rzk_testkit::http_abuse::assert_bounded(addr, limits, "/tree?path=/")
    });
    attack.await.unwrap();
    assert_eq!(get(addr, "/").await.0, 200);
}

/// The seeds' plain election (`EPHEMERAL_SEQUENTIAL` children of any prefix): the lowest
/// sequence leads, the rest queue in sequence order, each with its id and token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_election_leads_by_its_lowest_sequence() {
    let server = TestServer::start().unwrap();
    let s = session(&server).await;
    let client = s.client().unwrap();
    client.mkdir("/seed/job", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.unwrap();
    let member = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let mut nodes = Vec::new();
    for id in ["first", "second", "third"] {
        nodes.push(client.create("/seed/job/n_", id.as_bytes(), &member).await.unwrap().1);
    }
    let c = console(&s, ConsoleConfig::default()).await;
    let (status, page) = get(c.addr(), "/recipe?path=/seed/job&kind=election").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Leader: <strong class=\"leader\">first</strong>"), "{page}");
    let at =
        |id: &str| page.find(&format!("<td>{id}</td>")).unwrap_or_else(|| panic!("{id}: {page}"));
    assert!(at("first") < at("second") && at("second") < at("third"), "{page}");
    // The leader goes: the next sequence leads.
    client.delete(&format!("/seed/job/n_{}", nodes[0]), None).await.unwrap();
    let (_, page) = get(c.addr(), "/recipe?path=/seed/job&kind=election").await;
    assert!(page.contains("Leader: <strong class=\"leader\">second</strong>"), "{page}");
}
