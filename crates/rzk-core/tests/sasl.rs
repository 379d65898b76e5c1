//! SASL DIGEST-MD5 through the core, driven by rzk-sasl's client: the identity it adds, the
//! enforcement it satisfies, and every failure answered with an error, a closed connection
//! and a counter, never touching another connection. Then a mechanism the shell provides
//! (rzk server's GSSAPI), held to the same rules.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use rzk_core::config::SaslUsers;
use rzk_core::{CloseReason, Config, Core, Now, Output};
use rzk_proto::jute::{Reader, Writer};
use rzk_proto::{ConnectRequest, ErrorCode, OpCode, PathWatch, ReplyHeader, Request, Response};
use rzk_sasl::{ClientStep, DigestMd5Client};

const OK: i32 = 0;

fn now() -> Now {
    Now { mono_ms: 0, wall_ms: 1_700_000_000_000 }
}

fn config(enforce: bool) -> Config {
    let users = BTreeMap::from([("bob".to_owned(), "bob-secret".to_owned())]);
    Config {
        sasl_users: SaslUsers(users),
        sasl_super_user: Some("admin".into()),
        enforced_auth_schemes: if enforce { vec!["sasl".into()] } else { vec![] },
        ..Config::default()
    }
}

fn open(core: &mut Core, conn: u64) {
    core.open(conn, SocketAddr::from(([127, 0, 0, 1], 1)));
    let mut w = Writer::new();
    ConnectRequest::new_session(10_000).write(&mut w);
    core.receive(conn, &w.into_inner(), now()).unwrap();
    drain(core);
}

/// The replies emitted (error code, sasl token) and the close, if any.
type Emitted = (Vec<(i32, Option<Vec<u8>>)>, Option<CloseReason>);

fn drain(core: &mut Core) -> Emitted {
    core.mark_durable(core.state().last_zxid());
    let (mut replies, mut close) = (Vec::new(), None);
    while let Some(out) = core.poll_output() {
        match out {
            Output::Send { frame, .. } => {
                let mut r = Reader::new(&frame[4..]);
                let h = ReplyHeader::read(&mut r).unwrap();
                let token = match Response::read(OpCode::Sasl, &mut r) {
                    Ok(Response::Sasl(t)) if h.err == 0 => t,
                    _ => None,
                };
                replies.push((h.err, token));
            }
            Output::Close { reason, .. } => close = Some(reason),
        }
    }
    (replies, close)
}

fn send(core: &mut Core, conn: u64, req: Request) -> Emitted {
    core.receive(conn, &req.to_frame(3)[4..], now()).unwrap();
    drain(core)
}

fn sasl(token: Vec<u8>) -> Request {
    Request::Sasl { token }
}

fn exists() -> Request {
    Request::Exists(PathWatch { path: "/".into(), watch: false })
}

/// Runs a client exchange as `user` on `conn`: the last reply's code and the close.
fn login(core: &mut Core, conn: u64, user: &str, password: &str) -> (i32, Option<CloseReason>) {
    let mut client = DigestMd5Client::new(user, password, "cn0nce".into());
    let mut token = client.initial();
    loop {
        let (replies, close) = send(core, conn, sasl(token));
        let (err, reply) = replies.into_iter().next().expect("a reply");
        if err != OK || close.is_some() {
            return (err, close);
        }
        match client.step(reply.as_deref()).expect("the client goes on") {
            ClientStep::Send(next) => token = next,
            ClientStep::Complete => return (OK, None),
        }
    }
}

fn whoami(core: &mut Core, conn: u64) -> Vec<(String, String)> {
    core.receive(conn, &Request::WhoAmI.to_frame(9)[4..], now()).unwrap();
    core.mark_durable(core.state().last_zxid());
    let Some(Output::Send { frame, .. }) = core.poll_output() else { panic!("no reply") };
    let mut r = Reader::new(&frame[4..]);
    ReplyHeader::read(&mut r).unwrap();
    let Response::WhoAmI(ids) = Response::read(OpCode::WhoAmI, &mut r).unwrap() else { panic!() };
    ids.into_iter().map(|i| (i.auth_scheme, i.user)).collect()
}

#[test]
fn a_login_adds_the_sasl_id_and_satisfies_enforcement() {
    let mut c = Core::new(config(true), now());
    open(&mut c, 1);
    assert_eq!(login(&mut c, 1, "bob", "bob-secret"), (OK, None));
    assert!(whoami(&mut c, 1).contains(&("sasl".into(), "bob".into())));
    assert_eq!(send(&mut c, 1, exists()).0[0].0, OK, "served once authenticated");
    // The exchange is over: another token fails it, as ZooKeeper's SaslServer does.
    let (replies, close) = send(&mut c, 1, sasl(vec![]));
    assert_eq!(replies[0].0, ErrorCode::SessionClosedRequireSaslAuth.as_i32());
    assert_eq!(close, Some(CloseReason::SaslAuthFailed));
}

#[test]
fn a_wrong_password_is_refused_and_closes_only_its_connection() {
    let mut c = Core::new(config(false), now());
    open(&mut c, 1);
    open(&mut c, 2);
    let refused = (ErrorCode::AuthFailed.as_i32(), Some(CloseReason::SaslAuthFailed));
    assert_eq!(login(&mut c, 1, "bob", "wrong"), refused, "-115 when sasl is not enforced");
    assert_eq!(c.counters().sasl_failures, 1);
    assert_eq!(send(&mut c, 2, exists()).0[0].0, OK, "the other connection is served");

    let mut c = Core::new(config(true), now());
    open(&mut c, 1);
    let (err, close) = login(&mut c, 1, "mallory", "bob-secret");
    assert_eq!(err, ErrorCode::SessionClosedRequireSaslAuth.as_i32(), "-124 when enforced");
    assert_eq!(close, Some(CloseReason::SaslAuthFailed));
}

#[test]
fn garbage_and_a_thousand_failed_logins_stay_bounded() {
    let mut c = Core::new(config(true), now());
    open(&mut c, 1);
    for (conn, token) in [
        (10, vec![b'x'; 10]),
        (11, vec![0xff; rzk_sasl::TOKEN_BYTES_MAX + 1]),
        (12, b"username=\"bob\",nonce=".to_vec()),
    ] {
        open(&mut c, conn);
        // A first token is ignored, as ZooKeeper's DIGEST-MD5 server ignores it.
        let (replies, _) = send(&mut c, conn, sasl(token.clone()));
        assert!(replies[0].1.as_ref().is_some_and(|t| t.starts_with(b"realm=")), "{conn}");
        let (replies, close) = send(&mut c, conn, sasl(token));
        assert_eq!(replies[0].0, ErrorCode::SessionClosedRequireSaslAuth.as_i32(), "{conn}");
        assert_eq!(close, Some(CloseReason::SaslAuthFailed), "{conn}");
        c.closed(conn);
    }
    for conn in 100..1100 {
        open(&mut c, conn);
        assert_eq!(login(&mut c, conn, "bob", "guess").1, Some(CloseReason::SaslAuthFailed));
        c.closed(conn);
    }
    assert_eq!(c.counters().sasl_failures, 1003);
    assert_eq!(c.connection_count(), 1, "nothing kept of the failed connections");
    assert_eq!(login(&mut c, 1, "bob", "bob-secret"), (OK, None));
}

#[test]
fn the_super_user_is_super_and_no_users_means_no_sasl_server() {
    let mut c = Core::new(config(false), now());
    open(&mut c, 1);
    let mut admin = config(false);
    admin.sasl_users.0.insert("admin".into(), "root".into());
    let mut c2 = Core::new(admin, now());
    open(&mut c2, 1);
    assert_eq!(login(&mut c2, 1, "admin", "root"), (OK, None));
    assert!(whoami(&mut c2, 1).contains(&("super".into(), String::new())));

    let mut bare = Core::new(Config::default(), now());
    open(&mut bare, 1);
    assert_eq!(send(&mut bare, 1, sasl(vec![])), (vec![(OK, None)], None), "a null token");
}

#[test]
fn an_exchange_stalled_midway_ends_with_its_session() {
    let mut c = Core::new(config(true), now());
    open(&mut c, 1);
    let (replies, _) = send(&mut c, 1, sasl(vec![]));
    assert!(replies[0].1.is_some(), "challenged");
    // Default config: a 10 s request is granted within [4 s, 40 s]. The client sends nothing
    // more, not even a ping (an enforcing server would refuse it).
    c.tick(Now { mono_ms: 40_001, ..now() });
    assert_eq!(drain(&mut c).1, Some(CloseReason::SessionExpired));
}

#[test]
fn a_refusal_carries_a_null_token_as_zookeepers_does() {
    // The Java client reads the body before it looks at the error: without one it sees a
    // broken frame and retries, instead of ending in AuthFailed.
    let mut c = Core::new(config(true), now());
    open(&mut c, 1);
    send(&mut c, 1, sasl(vec![]));
    c.receive(1, &sasl(b"x".to_vec()).to_frame(5)[4..], now()).unwrap();
    c.mark_durable(c.state().last_zxid());
    let Some(Output::Send { frame, .. }) = c.poll_output() else { panic!("no reply") };
    let (xid, zxid, err) = (5i32.to_be_bytes(), 0i64.to_be_bytes(), (-124i32).to_be_bytes());
    let want = [&20i32.to_be_bytes()[..], &xid, &zxid, &err, &(-1i32).to_be_bytes()].concat();
    assert_eq!(frame, want);
}

/// A shell mechanism for the core's side of an exchange: a challenge for "hello", then the
/// client authenticated as `alice` on "it is me", with no last token; anything else refused.
struct Knock {
    fail_to_start: bool,
}

struct KnockExchange {
    greeted: bool,
}

impl rzk_core::sasl_mechanism::SaslExchange for KnockExchange {
    fn step(&mut self, token: &[u8]) -> Result<rzk_core::sasl_mechanism::ExchangeStep, String> {
        use rzk_core::sasl_mechanism::ExchangeStep;
        match (self.greeted, token) {
            (false, b"hello") => {
                self.greeted = true;
                Ok(ExchangeStep::Challenge(b"who?".to_vec()))
            }
            (true, b"it is me") => {
                Ok(ExchangeStep::Authenticated { token: None, id: "alice".into() })
            }
            _ => Err("not the knock".into()),
        }
    }
}

impl rzk_core::sasl_mechanism::SaslMechanism for Knock {
    fn name(&self) -> &'static str {
        "KNOCK"
    }

    fn start(&self) -> Result<Box<dyn rzk_core::sasl_mechanism::SaslExchange>, String> {
        if self.fail_to_start {
            return Err("no credentials".into());
        }
        Ok(Box::new(KnockExchange { greeted: false }))
    }
}

fn with_mechanism(fail_to_start: bool) -> Config {
    let m = rzk_core::sasl_mechanism::MechanismRef(std::sync::Arc::new(Knock { fail_to_start }));
    // No DIGEST-MD5 users: the shell's mechanism alone serves the exchange.
    Config {
        sasl_mechanism: Some(m),
        enforced_auth_schemes: vec!["sasl".into()],
        ..Config::default()
    }
}

/// The shell's mechanism (GSSAPI in rzk server) takes every step; its success adds its id and
/// ends with the null token it asks for; a refusal, or a mechanism that cannot start, is
/// answered and closed as a DIGEST-MD5 failure is, touching no other connection.
#[test]
fn a_shell_mechanism_serves_the_exchange() {
    let mut c = Core::new(with_mechanism(false), now());
    open(&mut c, 1);
    open(&mut c, 2);
    assert_eq!(send(&mut c, 1, sasl(b"hello".to_vec())).0, [(OK, Some(b"who?".to_vec()))]);
    assert_eq!(send(&mut c, 1, sasl(b"it is me".to_vec())), (vec![(OK, None)], None));
    assert!(whoami(&mut c, 1).contains(&("sasl".into(), "alice".into())));
    assert_eq!(send(&mut c, 1, exists()).0[0].0, OK, "served once authenticated");

    let refused = ErrorCode::SessionClosedRequireSaslAuth.as_i32();
    let (replies, close) = send(&mut c, 2, sasl(b"let me in".to_vec()));
    assert_eq!((replies[0].0, close), (refused, Some(CloseReason::SaslAuthFailed)));
    assert_eq!(c.counters().sasl_failures, 1);
    assert_eq!(send(&mut c, 1, exists()).0[0].0, OK, "the other connection is served");

    let mut c = Core::new(with_mechanism(true), now());
    open(&mut c, 1);
    let (replies, close) = send(&mut c, 1, sasl(b"hello".to_vec()));
    assert_eq!((replies[0].0, close), (refused, Some(CloseReason::SaslAuthFailed)));
}
