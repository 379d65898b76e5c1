//! The client and the server against each other, and each against a peer that cheats.

use super::*;
use crate::{ClientStep, SaslError};

fn users(name: &str) -> Option<String> {
    (name == "bob").then(|| "bobsecret".to_owned())
}

/// Runs a whole exchange; the server's id, or the first side's error.
fn exchange(user: &str, password: &str) -> Result<String, SaslError> {
    let mut client = DigestMd5Client::new(user, password, "c0ffee".into());
    let mut server = DigestMd5Server::new("5e1f".into());
    let ServerStep::Challenge(challenge) = server.step(&client.initial(), users)? else {
        panic!("no challenge")
    };
    let ClientStep::Send(response) = client.step(Some(&challenge))? else { panic!("no response") };
    let ServerStep::Authenticated { token, id } = server.step(&response, users)? else {
        panic!("not authenticated")
    };
    assert_eq!(client.step(Some(&token))?, ClientStep::Complete);
    Ok(id)
}

#[test]
fn a_right_password_authenticates_both_ways() {
    assert_eq!(exchange("bob", "bobsecret").unwrap(), "bob");
}

#[test]
fn a_wrong_password_or_user_is_bad_credentials() {
    assert_eq!(exchange("bob", "wrong"), Err(SaslError::BadCredentials));
    assert_eq!(exchange("eve", "bobsecret"), Err(SaslError::BadCredentials));
}

#[test]
fn the_challenge_is_the_one_a_java_server_sends() {
    // ZooKeeper 3.8's, as rzk-server's t23 read it; a first token, if any, is ignored.
    let mut server = DigestMd5Server::new("n0nce".into());
    let ServerStep::Challenge(c) = server.step(b"ignored", users).unwrap() else { panic!() };
    assert_eq!(
        String::from_utf8(c).unwrap(),
        r#"realm="zk-sasl-md5",nonce="n0nce",charset=utf-8,algorithm=md5-sess"#
    );
}

#[test]
fn a_server_that_does_not_know_the_password_is_caught() {
    let mut client = DigestMd5Client::new("bob", "bobsecret", "c".into());
    client.initial();
    let challenge = br#"realm="zk-sasl-md5",nonce="n",charset=utf-8,algorithm=md5-sess"#;
    assert!(matches!(client.step(Some(challenge)), Ok(ClientStep::Send(_))));
    let forged = b"rspauth=00000000000000000000000000000000";
    assert_eq!(client.step(Some(forged)), Err(SaslError::ServerNotVerified));
    assert!(matches!(client.step(Some(forged)), Err(SaslError::OutOfStep(_))));
}

#[test]
fn a_client_refuses_what_it_cannot_answer() {
    for (challenge, err) in [
        (&br#"nonce="n",algorithm=md5"#[..], "md5-sess"),
        (br#"nonce="n",qop="auth-conf",algorithm=md5-sess"#, "qop"),
        (br#"qop="auth",algorithm=md5-sess"#, "nonce"),
        (br#"nonce="n",charset=latin9,algorithm=md5-sess"#, "charset"),
    ] {
        let mut client = DigestMd5Client::new("bob", "pw", "c".into());
        client.initial();
        let e = client.step(Some(challenge)).unwrap_err().to_string();
        assert!(e.contains(err), "{e}");
    }
    let mut client = DigestMd5Client::new("bob", "pw", "c".into());
    client.initial();
    assert!(matches!(client.step(None), Err(SaslError::OutOfStep(_))));
}

#[test]
fn a_server_refuses_a_response_that_does_not_fit_its_challenge() {
    let good = {
        let mut client = DigestMd5Client::new("bob", "bobsecret", "c".into());
        client.initial();
        let mut server = DigestMd5Server::new("n".into());
        let ServerStep::Challenge(c) = server.step(b"", users).unwrap() else { panic!() };
        let ClientStep::Send(r) = client.step(Some(&c)).unwrap() else { panic!() };
        String::from_utf8(r).unwrap()
    };
    for (from, to, says) in [
        ("nonce=\"n\"", "nonce=\"other\"", "nonce"),
        ("nc=00000001", "nc=00000002", "nc above 1"),
        ("zookeeper/zk-sasl-md5", "imap/zk-sasl-md5", "digest-uri"),
        ("realm=\"zk-sasl-md5\"", "realm=\"elsewhere\"", "realm"),
        ("qop=auth", "qop=auth-int", "qop"),
        ("response=", "response=0", "wrong"),
    ] {
        let mut server = DigestMd5Server::new("n".into());
        server.step(b"", users).unwrap();
        let bad = good.replace(from, to);
        assert_ne!(bad, good, "{from}");
        let e = server.step(bad.as_bytes(), users).unwrap_err().to_string();
        assert!(e.contains(says), "{from}: {e}");
        assert!(matches!(server.step(b"", users), Err(SaslError::OutOfStep(_))));
    }
}
