//! SASL GSSAPI (RFC 4752) over Kerberos, as ZooKeeper's Java client speaks it: the Kerberos
//! context tokens, an empty token once the client's side is established, then the server's
//! wrapped security-layer offer answered with "no layer", then the server's null token.
//!
//! The GSS-API library is MIT's, through `libgssapi`. Its calls may reach the KDC (a service
//! ticket on the first step), so the caller runs every step off the async threads. The
//! client's credentials are the library's: the ticket cache (`KRB5CCNAME`) or the client
//! keytab (`KRB5_CLIENT_KTNAME`), for `principal` when one is named.

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{OidSet, GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, GSS_NT_KRB5_PRINCIPAL};
use rzk_sasl::ClientStep;

/// RFC 4752's security-layer bit for "no security layer", the only one ZooKeeper uses.
const NO_SECURITY_LAYER: u8 = 1;

enum State {
    /// Kerberos context tokens are being exchanged.
    Context,
    /// The client's side is established: the next token is the server's layer offer.
    Established,
    /// The layer was chosen: the server's null token ends the exchange.
    Chosen,
    Done,
}

/// One connection's GSSAPI exchange as a client.
pub(crate) struct GssapiClient {
    ctx: ClientCtx,
    state: State,
}

/// Whom to authenticate to: a host-based service (`zookeeper@host`, which the library
/// canonicalises as krb5.conf says) or a principal as written.
pub(crate) enum Target<'a> {
    Service { service: &'a str, host: &'a str },
    Principal(&'a str),
}

fn fail(what: &str, e: &libgssapi::error::Error) -> String {
    format!("{what}: {e}")
}

impl GssapiClient {
    /// A context for `target`, with the credentials of `principal` (the library's default
    /// without one).
    ///
    /// # Errors
    /// A message when no credentials can be had (no ticket, no keytab, an unknown principal).
    pub fn new(principal: Option<&str>, target: &Target<'_>) -> Result<GssapiClient, String> {
        let mechs = OidSet::singleton(GSS_MECH_KRB5).map_err(|e| fail("GSS-API", &e))?;
        let cred = match principal {
            Some(p) => {
                let name = Name::new(p.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL))
                    .map_err(|e| fail(&format!("principal {p}"), &e))?;
                Cred::acquire(Some(&name), None, CredUsage::Initiate, Some(&mechs))
            }
            None => Cred::acquire(None, None, CredUsage::Initiate, Some(&mechs)),
        }
        .map_err(|e| fail("no Kerberos credentials (a ticket or KRB5_CLIENT_KTNAME)", &e))?;
        let name = match target {
            Target::Service { service, host } => {
                Name::new(format!("{service}@{host}").as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE))
            }
            Target::Principal(p) => Name::new(p.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL)),
        }
        .map_err(|e| fail("the server's name", &e))?;
        let flags = CtxFlags::GSS_C_MUTUAL_FLAG | CtxFlags::GSS_C_INTEG_FLAG;
        let ctx = ClientCtx::new(Some(cred), name, flags, Some(GSS_MECH_KRB5));
        Ok(GssapiClient { ctx, state: State::Context })
    }

    /// The first token: the Kerberos AP-REQ (GSSAPI has an initial response).
    ///
    /// # Errors
    /// A message when the library cannot start the context (no service ticket for the
    /// server's principal, a KDC that cannot be reached).
    pub fn initial(&mut self) -> Result<Vec<u8>, String> {
        let token = self.ctx.step(None, None).map_err(|e| fail("the Kerberos context", &e))?;
        if self.ctx.is_complete() {
            self.state = State::Established;
        }
        Ok(token.map(|t| t.to_vec()).unwrap_or_default())
    }

    /// The server's next token (`None` for a null one).
    ///
    /// # Errors
    /// A message when the server's token is not what this step needs.
    pub fn step(&mut self, token: Option<&[u8]>) -> Result<ClientStep, String> {
        match (std::mem::replace(&mut self.state, State::Done), token) {
            (State::Context, Some(token)) => {
                let out = self
                    .ctx
                    .step(Some(token), None)
                    .map_err(|e| fail("the Kerberos context", &e))?;
                self.state =
                    if self.ctx.is_complete() { State::Established } else { State::Context };
                // Established with nothing to say: an empty token asks for the layer offer.
                Ok(ClientStep::Send(out.map(|t| t.to_vec()).unwrap_or_default()))
            }
            (State::Established, Some(offer)) => {
                let offer = self.ctx.unwrap(offer).map_err(|e| fail("the layer offer", &e))?;
                if offer.len() != 4 || offer[0] & NO_SECURITY_LAYER == 0 {
                    return Err(format!(
                        "the server's layer offer {:?} lacks \"no security layer\"",
                        &*offer
                    ));
                }
                // No layer, so no buffer size; no authorization id: ZooKeeper takes the
                // authenticated principal.
                let choice = [NO_SECURITY_LAYER, 0, 0, 0];
                let out =
                    self.ctx.wrap(false, &choice).map_err(|e| fail("the layer choice", &e))?;
                self.state = State::Chosen;
                Ok(ClientStep::Send(out.to_vec()))
            }
            (State::Chosen, None | Some([])) => Ok(ClientStep::Complete),
            (_, None) => {
                Err("the server ended the exchange before the client was authenticated".into())
            }
            (_, Some(_)) => Err("a token after the exchange ended".into()),
        }
    }
}
