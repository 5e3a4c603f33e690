//! Which address a request comes from, for the sign-in limits
//! (`engine::tenancy::sign_in_limits`): the peer's, or the one a proxy the
//! operator named wrote in `X-Forwarded-For`.

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The proxies whose `X-Forwarded-For` is believed (addresses or CIDR
/// ranges, from `SWITCHYARD_TRUSTED_PROXIES`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Parses `10.0.0.1, 10.1.0.0/16, ::1`; an error names the bad entry.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|entry| {
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("{entry:?} is not an address or CIDR range"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client's address: the peer, unless the peer is a trusted proxy;
    /// then the nearest `X-Forwarded-For` hop that is not one (the entries
    /// left of it are the client's to write, so they are never believed).
    pub fn client_address(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let hops = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect::<Vec<_>>();
        for hop in hops.into_iter().rev() {
            let Ok(ip) = hop.parse::<IpAddr>() else {
                // A hop we cannot read: stop at the last address we trust.
                return peer;
            };
            if !self.contains(ip) {
                return ip;
            }
        }
        peer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_named_proxies() {
        let proxies = TrustedProxies::parse("10.9.0.0/16, ::1").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "6.6.6.6, 203.0.113.7, 10.9.0.5".parse().unwrap(),
        );
        // Through the proxy: the nearest hop that is not a proxy.
        assert_eq!(
            proxies.client_address(ip("10.9.1.1"), &headers),
            ip("203.0.113.7")
        );
        // Straight from a client, the header is the client's own words.
        assert_eq!(
            proxies.client_address(ip("198.51.100.1"), &headers),
            ip("198.51.100.1")
        );
        assert_eq!(
            TrustedProxies::default().client_address(ip("10.9.1.1"), &headers),
            ip("10.9.1.1")
        );
        headers.insert("x-forwarded-for", "garbage, 10.9.0.5".parse().unwrap());
        assert_eq!(proxies.client_address(ip("::1"), &headers), ip("::1"));
        assert!(TrustedProxies::parse("10.0.0.0/33")
            .unwrap_err()
            .contains("10.0.0.0/33"));
        assert!(TrustedProxies::parse("proxy.local").is_err());
        let everyone = TrustedProxies::parse("0.0.0.0/0").unwrap();
        assert_eq!(
            everyone.client_address(ip("192.0.2.9"), &headers),
            ip("192.0.2.9"),
            "a garbled hop stops the walk"
        );
    }
}
