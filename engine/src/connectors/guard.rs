//! Where outbound requests may go: connectors that fetch a URL someone else
//! chose (the site crawler, manifest connectors, a workspace's SearXNG) go
//! through [`Outbound`], one pooled client whose resolver refuses loopback,
//! private, link-local and other internal addresses (an IPv4 address carried
//! in IPv6 judged as itself) unless `SWITCHYARD_FETCH_ALLOW` lists them, with
//! no proxy and no redirect followed on its own.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::IpNet;
use url::Url;

use crate::connectors::seam::FireError;

/// Hosts, addresses or networks outbound requests may reach although
/// internal: comma-separated, e.g. `intranet.local,10.1.0.0/16`.
pub const ALLOW_VAR: &str = "SWITCHYARD_FETCH_ALLOW";

/// Internal destinations a person allowed.
#[derive(Clone, Debug, Default)]
pub struct AllowList {
    hosts: Vec<String>,
    nets: Vec<IpNet>,
}

impl AllowList {
    /// Parses `host,1.2.3.4,10.0.0.0/8`; unreadable entries are ignored with a warning.
    pub fn parse(spec: &str) -> Self {
        let mut list = AllowList::default();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if let Ok(net) = entry.parse::<IpNet>() {
                list.nets.push(net);
            } else if let Ok(ip) = entry.parse::<IpAddr>() {
                list.nets.push(IpNet::from(ip));
            } else if entry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
            {
                list.hosts.push(entry.to_ascii_lowercase());
            } else {
                tracing::warn!(entry, "Ignored an unreadable {ALLOW_VAR} entry.");
            }
        }
        list
    }

    pub fn from_env() -> Self {
        Self::parse(&std::env::var(ALLOW_VAR).unwrap_or_default())
    }

    pub fn allows(&self, host: &str, ip: IpAddr) -> bool {
        self.hosts.iter().any(|h| h == &host.to_ascii_lowercase())
            || self.nets.iter().any(|n| n.contains(&ip))
    }
}

/// Why an address is internal, if it is. An IPv6 address that carries an
/// IPv4 one (mapped, compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`)
/// is judged by the IPv4 address it reaches.
pub fn internal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => match carried_v4(v6) {
            Some(v4) => internal_v4(v4),
            None => internal_v6(v6),
        },
    }
}

fn internal_v4(v4: Ipv4Addr) -> Option<&'static str> {
    let o = v4.octets();
    if v4.is_loopback() {
        Some("a loopback address")
    } else if v4.is_private() {
        Some("a private address")
    } else if v4.is_link_local() {
        Some("a link-local address")
    } else if v4.is_unspecified() || v4.is_broadcast() || o[0] == 0 {
        Some("not a host address")
    } else if o[0] == 100 && (64..128).contains(&o[1]) {
        Some("a carrier-grade NAT address")
    } else if o[0] == 198 && (o[1] == 18 || o[1] == 19) {
        Some("a benchmarking address")
    } else if (o[0], o[1], o[2]) == (192, 0, 0) {
        Some("a protocol assignment address")
    } else if matches!(
        (o[0], o[1], o[2]),
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113)
    ) {
        Some("a documentation address")
    } else if v4.is_multicast() || o[0] >= 240 {
        Some("a reserved address")
    } else {
        None
    }
}

fn internal_v6(v6: Ipv6Addr) -> Option<&'static str> {
    let s = v6.segments();
    if v6.is_loopback() {
        Some("a loopback address")
    } else if v6.is_unspecified() || v6.is_multicast() {
        Some("not a host address")
    } else if s[0] & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if s[0] & 0xffc0 == 0xfec0 {
        Some("a site-local address")
    } else if s[0] & 0xfe00 == 0xfc00 {
        Some("a private address")
    } else if (s[0], s[1], s[2]) == (0x64, 0xff9b, 1) {
        Some("a local NAT64 address")
    } else if (s[0], s[1]) == (0x2001, 0) {
        Some("a Teredo tunnel address")
    } else if (s[0], s[1]) == (0x2001, 0xdb8) {
        Some("a documentation address")
    } else if (s[0], s[1], s[2], s[3]) == (0x100, 0, 0, 0) {
        Some("a discard address")
    } else {
        None
    }
}

/// The IPv4 address an IPv6 one reaches, when it carries one: mapped
/// (`::ffff:a.b.c.d`), compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`)
/// or 6to4 (`2002:aabb:ccdd::/48`).
fn carried_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let last = |hi: u16, lo: u16| {
        Ipv4Addr::new(
            (hi >> 8) as u8,
            (hi & 0xff) as u8,
            (lo >> 8) as u8,
            (lo & 0xff) as u8,
        )
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
        return Some(last(s[6], s[7]));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(last(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(last(s[1], s[2]));
    }
    None
}

/// A destination refused: an address of the host is internal and not
/// allowed. Found among a request error's sources (the resolver raises it).
#[derive(Clone, Debug, thiserror::Error)]
#[error("refused {host}: {ip} is {why} (allow it with {ALLOW_VAR})")]
pub struct Refused {
    host: String,
    ip: IpAddr,
    why: &'static str,
}

/// Checks every address of `host`: one internal address among public ones
/// refuses the name as a whole.
fn check_addresses(host: &str, ips: &[IpAddr], allow: &AllowList) -> Result<(), Refused> {
    for ip in ips {
        if let Some(why) = internal(*ip) {
            if !allow.allows(host, *ip) {
                return Err(Refused {
                    host: host.to_owned(),
                    ip: *ip,
                    why,
                });
            }
        }
    }
    Ok(())
}

/// Resolves names for [`Outbound`] and refuses internal answers: the
/// connection goes to exactly the addresses checked, so a name cannot
/// change between the check and the connection.
#[derive(Debug)]
struct GuardedResolver {
    allow: AllowList,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
            check_addresses(&host, &ips, &allow)?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The one pooled client for requests to addresses someone else chose
/// (manifests, the site crawler, a workspace's SearXNG): its resolver
/// refuses internal addresses unless allowed, an address written in the URL
/// is checked before the request, no proxy is used (a proxy would resolve
/// the name again, past the check) and no redirect is followed (a caller
/// that follows one asks for the next URL here again). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Outbound {
    /// Built on first use; a client that cannot be built fails each request
    /// that needs it, with the reason.
    client: std::sync::Arc<std::sync::OnceLock<Result<reqwest::Client, String>>>,
    allow: AllowList,
}

impl Outbound {
    pub fn new(allow: AllowList) -> Self {
        Self {
            client: std::sync::Arc::default(),
            allow,
        }
    }

    fn client(&self, who: &str) -> Result<&reqwest::Client, FireError> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .user_agent(super::http::USER_AGENT)
                    .no_proxy()
                    .redirect(reqwest::redirect::Policy::none())
                    .connect_timeout(std::time::Duration::from_secs(5))
                    .dns_resolver(std::sync::Arc::new(GuardedResolver {
                        allow: self.allow.clone(),
                    }))
                    .build()
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| FireError::Upstream {
                reason: format!("{who}: the outbound client cannot be built: {e}"),
            })
    }

    /// Internal destinations this client may reach.
    pub fn allow(&self) -> &AllowList {
        &self.allow
    }

    /// A request to `url` by `who`, if it may go there: http or https, and an
    /// address written in the URL must pass the check (a name is checked
    /// when it is resolved). `timeout` bounds the whole request.
    pub fn request(
        &self,
        who: &str,
        method: reqwest::Method,
        url: &Url,
        timeout: std::time::Duration,
    ) -> Result<reqwest::RequestBuilder, FireError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FireError::Malformed {
                reason: format!("{who}: only http and https addresses are fetched"),
            });
        }
        let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']);
        if let Ok(ip) = host.parse::<IpAddr>() {
            check_addresses(host, &[ip], &self.allow).map_err(|e| refused(who, &e))?;
        }
        Ok(self
            .client(who)?
            .request(method, url.clone())
            .timeout(timeout))
    }
}

/// The error of a fire whose destination was refused.
pub fn refused(who: &str, e: &Refused) -> FireError {
    FireError::Malformed {
        reason: format!("{who} {e}"),
    }
}

/// The refusal behind a request error, if the guard refused it.
pub fn refusal_in(e: &(dyn std::error::Error + 'static)) -> Option<Refused> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<Refused>() {
            return Some(r.clone());
        }
        cause = c.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(ip: &str) -> Option<&'static str> {
        internal(ip.parse().unwrap())
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            // NAT64 and 6to4 forms of a public IPv4 address.
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
        ] {
            assert_eq!(judged(ip), None, "{ip}");
        }
    }

    #[test]
    fn every_internal_range_is_refused() {
        for ip in [
            "127.0.0.1",
            "10.0.0.5",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "198.18.0.1",
            "198.19.255.254",
            "192.0.0.8",
            "192.0.2.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "100::1",
            "64:ff9b:1::a00:5",
            // IPv4 inside IPv6: mapped, compatible, NAT64, 6to4.
            "::ffff:10.0.0.5",
            "::10.0.0.5",
            "64:ff9b::10.0.0.5",
            "64:ff9b::7f00:1",
            "2002:a00:5::1",
            "2002:7f00:1::",
        ] {
            assert!(judged(ip).is_some(), "{ip} passed");
        }
        assert_eq!(judged("64:ff9b::a00:5"), Some("a private address"));
        assert_eq!(judged("2002:c612:1::1"), Some("a benchmarking address"));
    }
}
