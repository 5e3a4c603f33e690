//! Where outbound requests may go: connectors that fetch a URL someone else
//! chose (the site crawler, manifest connectors) resolve the host first and
//! refuse loopback, private, link-local and other internal addresses unless
//! `SWITCHYARD_FETCH_ALLOW` lists them; the caller then pins the connection
//! to the checked address so DNS cannot change in between.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;
use url::Url;

use crate::connector::FireError;

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

/// Why an address is internal, if it is.
pub fn internal(ip: IpAddr) -> Option<&'static str> {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
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
            } else if v4.is_multicast() || o[0] >= 240 {
                Some("a reserved address")
            } else {
                None
            }
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Some("a loopback address")
            } else if v6.is_unspecified() || v6.is_multicast() {
                Some("not a host address")
            } else if first & 0xffc0 == 0xfe80 {
                Some("a link-local address")
            } else if first & 0xfe00 == 0xfc00 {
                Some("a private address")
            } else {
                None
            }
        }
    }
}

/// Resolves `url`'s host and returns an address it may connect to: every
/// address the name has must be public or allow-listed.
pub async fn public_address(
    who: &str,
    url: &Url,
    allow: &AllowList,
) -> Result<SocketAddr, FireError> {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let refused = |why: String| FireError::Malformed {
        reason: format!("{who} refused {host}: {why}"),
    };
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| FireError::Upstream {
                reason: format!("{who} cannot resolve {host}: {e}"),
            })?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(refused("it has no address".to_owned()));
    }
    // Every address must pass: a name resolving to an internal address among
    // public ones is refused as a whole.
    for addr in &addrs {
        if let Some(why) = internal(addr.ip()) {
            if !allow.allows(&host, addr.ip()) {
                return Err(refused(format!(
                    "{} is {why} (allow it with {ALLOW_VAR})",
                    addr.ip()
                )));
            }
        }
    }
    Ok(addrs[0])
}
