//! SASL GSSAPI (Kerberos) on rzk server, behind the `gssapi` feature: RFC 4752's server side
//! as ZooKeeper's (Java's `GssKrb5Server`) speaks it. The client's Kerberos context tokens are
//! accepted until the context is established (answering the AP-REP); the client's empty token
//! then gets the wrapped security-layer offer ("no security layer" only, as ZooKeeper uses);
//! the client's wrapped choice ends the exchange, with a null token. The connection's `sasl`
//! id is the client's principal, mapped as ZooKeeper's `SaslServerCallbackHandler` maps it.
//!
//! The GSS-API library is MIT's, through `libgssapi`, with the acceptor's keys from the keytab
//! the library reads (`KRB5_KTNAME`, which the CLI sets from the JAAS `Server` section). An
//! acceptor never calls the KDC, so a step is the keytab read and the ticket's decryption,
//! which rzk-core may run on its own thread.

use libgssapi::context::{SecurityContext, ServerCtx};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{OidSet, GSS_MECH_KRB5, GSS_NT_KRB5_PRINCIPAL};
use rzk_core::sasl_mechanism::{ExchangeStep, SaslExchange, SaslMechanism};

/// RFC 4752's security-layer bit for "no security layer", the only one offered.
const NO_SECURITY_LAYER: u8 = 1;
/// The largest client token taken: a Kerberos ticket with a large authorization payload (an
/// Active Directory PAC) runs to tens of KiB; past this the client is refused.
pub const GSSAPI_TOKEN_BYTES_MAX: usize = 64 * 1024;

/// How a client's principal becomes its `sasl` id: ZooKeeper's
/// `kerberos.removeHostFromPrincipal` and `kerberos.removeRealmFromPrincipal`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrincipalRules {
    /// `bob/host@REALM` becomes `bob@REALM`.
    pub remove_host: bool,
    /// `bob@REALM` becomes `bob`.
    pub remove_realm: bool,
}

/// The GSSAPI mechanism of a server whose principal is `principal` (`zookeeper/host@REALM`).
pub struct GssapiMechanism {
    principal: String,
    /// The realm of `principal`: a client of this realm gets its short name mapped, as the
    /// DEFAULT rule of ZooKeeper's `KerberosName` maps the default realm's.
    realm: String,
    rules: PrincipalRules,
}

fn fail(what: &str, e: &libgssapi::error::Error) -> String {
    format!("{what}: {e}")
}

impl GssapiMechanism {
    /// The mechanism for `principal`, whose keys must be in the library's keytab.
    ///
    /// # Errors
    /// A message when the principal has no realm, or no acceptor credentials can be had for
    /// it (no keytab, or the keytab lacks it): the server should not start.
    pub fn new(principal: &str, rules: PrincipalRules) -> Result<GssapiMechanism, String> {
        let realm = principal
            .rsplit_once('@')
            .map(|(_, r)| r.to_owned())
            .filter(|r| !r.is_empty())
            .ok_or_else(|| format!("the server principal {principal} names no realm"))?;
        let m = GssapiMechanism { principal: principal.to_owned(), realm, rules };
        m.credentials()?;
        Ok(m)
    }

    fn credentials(&self) -> Result<Cred, String> {
        let p = &self.principal;
        let mechs = OidSet::singleton(GSS_MECH_KRB5).map_err(|e| fail("GSS-API", &e))?;
        let name = Name::new(p.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL))
            .map_err(|e| fail(&format!("principal {p}"), &e))?;
        Cred::acquire(Some(&name), None, CredUsage::Accept, Some(&mechs))
            .map_err(|e| fail(&format!("no keys for {p} (is KRB5_KTNAME its keytab?)"), &e))
    }
}

impl SaslMechanism for GssapiMechanism {
    fn name(&self) -> &'static str {
        "GSSAPI"
    }

    fn start(&self) -> Result<Box<dyn SaslExchange>, String> {
        let ctx = ServerCtx::new(Some(self.credentials()?));
        Ok(Box::new(GssapiExchange {
            ctx,
            state: State::Context,
            realm: self.realm.clone(),
            rules: self.rules,
        }))
    }
}

enum State {
    /// Kerberos context tokens are being accepted.
    Context,
    /// The context is established: the client's empty token asks for the layer offer.
    Established,
    /// The offer was sent: the client's wrapped choice comes next.
    Offered,
    Done,
}

/// One connection's exchange.
struct GssapiExchange {
    ctx: ServerCtx,
    state: State,
    realm: String,
    rules: PrincipalRules,
}

impl SaslExchange for GssapiExchange {
    fn step(&mut self, token: &[u8]) -> Result<ExchangeStep, String> {
        let step = self.take(token);
        if let Err(e) = &step {
            // The core logs the close; the library's reason is only known here.
            tracing::warn!(error = %e, "SASL GSSAPI login refused");
        }
        step
    }
}

impl GssapiExchange {
    fn take(&mut self, token: &[u8]) -> Result<ExchangeStep, String> {
        if token.len() > GSSAPI_TOKEN_BYTES_MAX {
            return Err(format!("a token of {} bytes", token.len()));
        }
        match std::mem::replace(&mut self.state, State::Done) {
            State::Context => {
                let out = self
                    .ctx
                    .step(token, None)
                    .map_err(|e| fail("the client's Kerberos token", &e))?;
                self.state =
                    if self.ctx.is_complete() { State::Established } else { State::Context };
                Ok(ExchangeStep::Challenge(out.map(|t| t.to_vec()).unwrap_or_default()))
            }
            State::Established if token.is_empty() => {
                // "No security layer", and the largest message we take wrapped, as Java
                // writes it (meaningless without a layer).
                let max = GSSAPI_TOKEN_BYTES_MAX.to_be_bytes();
                let offer = [NO_SECURITY_LAYER, max[5], max[6], max[7]];
                let out = self.ctx.wrap(false, &offer).map_err(|e| fail("the layer offer", &e))?;
                self.state = State::Offered;
                Ok(ExchangeStep::Challenge(out.to_vec()))
            }
            State::Established => Err("a non-empty token after the context was established".into()),
            State::Offered => {
                let choice = self.ctx.unwrap(token).map_err(|e| fail("the layer choice", &e))?;
                if choice.len() < 4 || choice[0] != NO_SECURITY_LAYER {
                    return Err(format!("the client chose layer {:?}", choice.first()));
                }
                let principal = self
                    .ctx
                    .source_name()
                    .map_err(|e| fail("the client's principal", &e))?
                    .to_string();
                let id = sasl_id(&principal, &self.realm, self.rules);
                Ok(ExchangeStep::Authenticated { token: None, id })
            }
            State::Done => Err("a token after the exchange ended".into()),
        }
    }
}

/// The `sasl` id of `principal` (`name[/host][@realm]`), as ZooKeeper's callback handler
/// makes it: in the server's `realm`, the name, then `/host` and `@realm` unless the rules
/// remove them; from another realm, the principal as it is (ZooKeeper's DEFAULT rule maps no
/// other realm, and the handler then keeps the authenticated principal).
pub fn sasl_id(principal: &str, realm: &str, rules: PrincipalRules) -> String {
    let (rest, their_realm) = match principal.rsplit_once('@') {
        Some((rest, r)) => (rest, Some(r)),
        None => (principal, None),
    };
    if their_realm.is_some_and(|r| r != realm) {
        return principal.to_owned();
    }
    let (name, host) = match rest.split_once('/') {
        Some((name, host)) => (name, Some(host)),
        None => (rest, None),
    };
    let mut id = name.to_owned();
    if let Some(host) = host.filter(|_| !rules.remove_host) {
        id.push('/');
        id.push_str(host);
    }
    if let Some(r) = their_realm.filter(|_| !rules.remove_realm) {
        id.push('@');
        id.push_str(r);
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZooKeeper's mapping: the host and realm of the server's realm go as the rules say; a
    /// principal of another realm is kept whole.
    #[test]
    fn principals_map_to_ids_as_zookeeper_maps_them() {
        let keep = PrincipalRules::default();
        let strip = PrincipalRules { remove_host: true, remove_realm: true };
        let host_only = PrincipalRules { remove_host: true, remove_realm: false };
        let cases = [
            ("bob@RZK.TEST", keep, "bob@RZK.TEST"),
            ("bob@RZK.TEST", strip, "bob"),
            ("svc/app.example@RZK.TEST", keep, "svc/app.example@RZK.TEST"),
            ("svc/app.example@RZK.TEST", host_only, "svc@RZK.TEST"),
            ("svc/app.example@RZK.TEST", strip, "svc"),
            ("bob@OTHER.REALM", strip, "bob@OTHER.REALM"),
        ];
        for (principal, rules, id) in cases {
            assert_eq!(sasl_id(principal, "RZK.TEST", rules), id, "{principal} {rules:?}");
        }
    }
}
