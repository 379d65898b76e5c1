//! JAAS login configuration, the file ZooKeeper's JVMs read through
//! `java.security.auth.login.config`: named sections of login modules with their options.
//! rzk reads the same file, so one file serves a Java and an rzk client (section `Client`),
//! or a Java and an rzk server (section `Server`).

use std::collections::BTreeMap;

use crate::SaslError;

/// The longest JAAS file read.
pub const JAAS_BYTES_MAX: usize = 1024 * 1024;
/// The login module ZooKeeper's DIGEST-MD5 sections name (for both sides).
pub const DIGEST_LOGIN_MODULE: &str = "org.apache.zookeeper.server.auth.DigestLoginModule";
/// The JDK's Kerberos login module.
pub const KRB5_LOGIN_MODULE: &str = "com.sun.security.auth.module.Krb5LoginModule";

/// One login module of a section, with its options in their order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginModule {
    pub class: String,
    /// `required`, `requisite`, `sufficient` or `optional`.
    pub flag: String,
    pub options: Vec<(String, String)>,
}

impl LoginModule {
    /// The value of option `key`.
    pub fn option(&self, key: &str) -> Option<&str> {
        self.options.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Whether option `key` is `true`, as Krb5LoginModule reads its flags.
    pub fn is_on(&self, key: &str) -> bool {
        self.option(key).is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }

    /// A Krb5LoginModule's keytab: its `keyTab` when `useKeyTab=true`.
    pub fn keytab(&self) -> Option<String> {
        self.is_on("useKeyTab").then(|| self.option("keyTab").map(str::to_owned)).flatten()
    }
}

/// A parsed JAAS file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Jaas {
    sections: Vec<(String, Vec<LoginModule>)>,
}

/// What a client section says to log in with.
#[derive(Clone, PartialEq, Eq)]
pub enum ClientLogin {
    /// DIGEST-MD5 with a user name and password.
    Digest { username: String, password: String },
    /// Kerberos (GSSAPI): the principal, and the keytab or ticket cache to take it from.
    Kerberos { principal: Option<String>, keytab: Option<String>, use_ticket_cache: bool },
}

impl std::fmt::Debug for ClientLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientLogin::Digest { username, .. } => {
                f.debug_struct("Digest").field("username", username).finish_non_exhaustive()
            }
            ClientLogin::Kerberos { principal, keytab, use_ticket_cache } => f
                .debug_struct("Kerberos")
                .field("principal", principal)
                .field("keytab", keytab)
                .field("use_ticket_cache", use_ticket_cache)
                .finish(),
        }
    }
}

impl Jaas {
    /// Parses `text`, Java's syntax: `Name { class flag key=value ...; ... };`, values
    /// quoted or bare, `//`, `/* */` and `#` comments.
    ///
    /// # Errors
    /// [`SaslError::Jaas`] naming the line of the first thing that is not that syntax.
    pub fn parse(text: &str) -> Result<Jaas, SaslError> {
        if text.len() > JAAS_BYTES_MAX {
            return Err(SaslError::Jaas(format!("over {JAAS_BYTES_MAX} bytes")));
        }
        let mut t = Tokens::new(text);
        let mut sections = Vec::new();
        while let Some(name) = t.next()? {
            let name = t.word(name, "a section name")?;
            t.expect("{")?;
            let mut modules = Vec::new();
            loop {
                let tok = t.next()?.ok_or_else(|| t.error("the file ends inside a section"))?;
                if tok == Token::Punct('}') {
                    break;
                }
                let class = t.word(tok, "a login module class")?;
                let flag = t.next()?.ok_or_else(|| t.error("no flag after the module"))?;
                let flag = t.word(flag, "a flag (required, requisite, sufficient, optional)")?;
                if !["required", "requisite", "sufficient", "optional"]
                    .iter()
                    .any(|f| f.eq_ignore_ascii_case(&flag))
                {
                    return Err(t.error(&format!("`{flag}` is not a login module flag")));
                }
                let mut options = Vec::new();
                loop {
                    match t.next()?.ok_or_else(|| t.error("the file ends inside a module"))? {
                        Token::Punct(';') => break,
                        tok => {
                            let key = t.word(tok, "an option name or `;`")?;
                            t.expect("=")?;
                            let v = t.next()?.ok_or_else(|| t.error("no value after `=`"))?;
                            options.push((key, t.value(v)?));
                        }
                    }
                }
                modules.push(LoginModule { class, flag: flag.to_ascii_lowercase(), options });
            }
            t.expect(";")?;
            sections.push((name, modules));
        }
        Ok(Jaas { sections })
    }

    /// The modules of section `name`.
    pub fn section(&self, name: &str) -> Option<&[LoginModule]> {
        self.sections.iter().find(|(n, _)| n == name).map(|(_, m)| m.as_slice())
    }

    /// How the client section `name` (ZooKeeper's default: `Client`) logs in.
    ///
    /// # Errors
    /// [`SaslError::Jaas`] when the section is missing, has no module ZooKeeper's client
    /// knows, or its DIGEST module lacks a user name or password.
    pub fn client_login(&self, name: &str) -> Result<ClientLogin, SaslError> {
        let modules = self
            .section(name)
            .ok_or_else(|| SaslError::Jaas(format!("no `{name}` section in the JAAS file")))?;
        for m in modules {
            if m.class == DIGEST_LOGIN_MODULE {
                let get = |k: &str| {
                    m.option(k).map(str::to_owned).ok_or_else(|| {
                        SaslError::Jaas(format!(
                            "the `{name}` section's {DIGEST_LOGIN_MODULE} has no {k}"
                        ))
                    })
                };
                return Ok(ClientLogin::Digest {
                    username: get("username")?,
                    password: get("password")?,
                });
            }
            if m.class == KRB5_LOGIN_MODULE {
                return Ok(ClientLogin::Kerberos {
                    principal: m.option("principal").map(str::to_owned),
                    keytab: m.keytab(),
                    use_ticket_cache: m.is_on("useTicketCache"),
                });
            }
        }
        Err(SaslError::Jaas(format!(
            "the `{name}` section has neither {DIGEST_LOGIN_MODULE} nor {KRB5_LOGIN_MODULE}"
        )))
    }

    /// How the server section `name` (ZooKeeper's default: `Server`) logs in: the DIGEST-MD5
    /// users (each `user_NAME="password"` option of its DigestLoginModule), or the Kerberos
    /// principal and keytab of its Krb5LoginModule. The first of the two in the section wins,
    /// as the one mechanism a ZooKeeper server offers.
    ///
    /// # Errors
    /// [`SaslError::Jaas`] when the section is missing or has neither module.
    pub fn server_login(&self, name: &str) -> Result<ServerLogin, SaslError> {
        let modules = self
            .section(name)
            .ok_or_else(|| SaslError::Jaas(format!("no `{name}` section in the JAAS file")))?;
        for m in modules {
            if m.class == DIGEST_LOGIN_MODULE {
                return Ok(ServerLogin::Digest(
                    m.options
                        .iter()
                        .filter_map(|(k, v)| Some((k.strip_prefix("user_")?.to_owned(), v.clone())))
                        .filter(|(user, _)| !user.is_empty())
                        .collect(),
                ));
            }
            if m.class == KRB5_LOGIN_MODULE {
                return Ok(ServerLogin::Kerberos {
                    principal: m.option("principal").map(str::to_owned),
                    keytab: m.keytab(),
                });
            }
        }
        Err(SaslError::Jaas(format!(
            "the `{name}` section has neither {DIGEST_LOGIN_MODULE} nor {KRB5_LOGIN_MODULE}"
        )))
    }
}

/// What a server section says to log in with.
#[derive(Clone, PartialEq, Eq)]
pub enum ServerLogin {
    /// DIGEST-MD5, with these users and their passwords.
    Digest(BTreeMap<String, String>),
    /// GSSAPI, as `principal` with the keys of `keytab`.
    Kerberos { principal: Option<String>, keytab: Option<String> },
}

impl std::fmt::Debug for ServerLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerLogin::Digest(users) => f.debug_tuple("Digest").field(&users.keys()).finish(),
            ServerLogin::Kerberos { principal, keytab } => f
                .debug_struct("Kerberos")
                .field("principal", principal)
                .field("keytab", keytab)
                .finish(),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Quoted(String),
    Punct(char),
}

/// Java's `StreamTokenizer` as JAAS configures it, enough for the files ZooKeeper's docs show.
struct Tokens<'a> {
    rest: &'a str,
    line: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Tokens<'a> {
        Tokens { rest: text, line: 1 }
    }

    fn error(&self, what: &str) -> SaslError {
        SaslError::Jaas(format!("JAAS line {}: {what}", self.line))
    }

    fn advance(&mut self, n: usize) {
        self.line += self.rest[..n].matches('\n').count();
        self.rest = &self.rest[n..];
    }

    fn skip_blank(&mut self) -> Result<(), SaslError> {
        loop {
            let trimmed = self.rest.trim_start();
            self.advance(self.rest.len() - trimmed.len());
            if self.rest.starts_with("//") || self.rest.starts_with('#') {
                self.advance(self.rest.find('\n').unwrap_or(self.rest.len()));
            } else if self.rest.starts_with("/*") {
                let end = self.rest.find("*/").ok_or_else(|| self.error("an unclosed comment"))?;
                self.advance(end + 2);
            } else {
                return Ok(());
            }
        }
    }

    fn next(&mut self) -> Result<Option<Token>, SaslError> {
        self.skip_blank()?;
        let Some(c) = self.rest.chars().next() else { return Ok(None) };
        if "{};=".contains(c) {
            self.advance(1);
            return Ok(Some(Token::Punct(c)));
        }
        if c == '"' {
            let mut value = String::new();
            let mut chars = self.rest.char_indices().skip(1);
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        self.advance(i + 1);
                        return Ok(Some(Token::Quoted(value)));
                    }
                    '\\' => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, 't')) => value.push('\t'),
                        Some((_, e)) => value.push(e),
                        None => break,
                    },
                    '\n' => break,
                    c => value.push(c),
                }
            }
            return Err(self.error("a quoted value without its closing quote on its line"));
        }
        let end = self
            .rest
            .find(|c: char| c.is_whitespace() || "{};=\"".contains(c))
            .unwrap_or(self.rest.len());
        let word = self.rest[..end].to_owned();
        self.advance(end);
        Ok(Some(Token::Word(word)))
    }

    fn word(&self, tok: Token, what: &str) -> Result<String, SaslError> {
        match tok {
            Token::Word(w) => Ok(w),
            other => Err(self.error(&format!("expected {what}, found {}", show(&other)))),
        }
    }

    fn value(&self, tok: Token) -> Result<String, SaslError> {
        match tok {
            Token::Word(w) | Token::Quoted(w) => Ok(w),
            Token::Punct(p) => Err(self.error(&format!("expected a value, found `{p}`"))),
        }
    }

    fn expect(&mut self, punct: &str) -> Result<(), SaslError> {
        match self.next()? {
            Some(Token::Punct(p)) if punct.starts_with(p) => Ok(()),
            Some(other) => Err(self.error(&format!("expected `{punct}`, found {}", show(&other)))),
            None => Err(self.error(&format!("expected `{punct}`, found the end of the file"))),
        }
    }
}

fn show(t: &Token) -> String {
    match t {
        Token::Word(w) => format!("`{w}`"),
        Token::Quoted(_) => "a quoted value".into(),
        Token::Punct(p) => format!("`{p}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
        // ZooKeeper's DIGEST example, both sides in one file.
        Server {
            org.apache.zookeeper.server.auth.DigestLoginModule required
            user_super="adminsecret"
            user_bob="bob\"secret";
        };
        /* a Kerberos client */
        Client {
            com.sun.security.auth.module.Krb5LoginModule required
            useKeyTab=true keyTab="/etc/zk.keytab" storeKey=false
            principal="zkcli/localhost@EXAMPLE.COM";
        };
        Digest { org.apache.zookeeper.server.auth.DigestLoginModule required
            username="bob" password="bobsecret"; };
    "#;

    #[test]
    fn reads_zookeepers_sections() {
        let j = Jaas::parse(FILE).unwrap();
        let ServerLogin::Digest(users) = j.server_login("Server").unwrap() else {
            panic!("a DIGEST-MD5 section")
        };
        assert_eq!(users["bob"], "bob\"secret");
        assert_eq!(users["super"], "adminsecret");
        assert!(!format!("{:?}", j.server_login("Server").unwrap()).contains("adminsecret"));
        assert_eq!(
            j.server_login("Client").unwrap(),
            ServerLogin::Kerberos {
                principal: Some("zkcli/localhost@EXAMPLE.COM".into()),
                keytab: Some("/etc/zk.keytab".into()),
            }
        );
        assert_eq!(
            j.client_login("Client").unwrap(),
            ClientLogin::Kerberos {
                principal: Some("zkcli/localhost@EXAMPLE.COM".into()),
                keytab: Some("/etc/zk.keytab".into()),
                use_ticket_cache: false,
            }
        );
        assert_eq!(
            j.client_login("Digest").unwrap(),
            ClientLogin::Digest { username: "bob".into(), password: "bobsecret".into() }
        );
        assert!(!format!("{:?}", j.client_login("Digest").unwrap()).contains("bobsecret"));
    }

    #[test]
    fn says_where_a_file_is_wrong() {
        for (bad, says) in [
            ("Client { m required a=\"b\" }; ", "line 1: expected an option name"),
            ("Client {\n m mandatory; };", "line 2: `mandatory` is not a login module flag"),
            ("Client { m required a=\"open; };", "closing quote"),
            ("Client { m required; }", "end of the file"),
            ("/* open", "unclosed comment"),
        ] {
            let err = Jaas::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        let j = Jaas::parse(FILE).unwrap();
        assert!(j.client_login("Missing").unwrap_err().to_string().contains("no `Missing`"));
        let none = Jaas::parse("Server { m required; };").unwrap();
        assert!(none.server_login("Server").unwrap_err().to_string().contains("neither"));
    }
}
