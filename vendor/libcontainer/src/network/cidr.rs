use std::net::IpAddr;

use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CidrAddress {
    pub prefix_len: u8,
    pub address: IpAddr,
}

impl From<&AddressMessage> for CidrAddress {
    fn from(msg: &AddressMessage) -> Self {
        let address =
            parse_ip_address(msg).expect("AddressMessage without IFA_LOCAL or IFA_ADDRESS");
        CidrAddress {
            prefix_len: msg.header.prefix_len,
            address,
        }
    }
}

/// Parses the IP address from an AddressMessage following libnl conventions.
///
/// From libnl addr.c:
/// - IPv6 sends the local address as IFA_ADDRESS with no IFA_LOCAL
/// - IPv4 sends both IFA_LOCAL and IFA_ADDRESS, with IFA_ADDRESS being the peer address if they differ
/// - For IPv6 Point-to-Point addresses, IFA_LOCAL should also be handled
///
/// Priority:
/// 1. If IFA_LOCAL exists, use it (this handles IPv4 and IPv6 PtP correctly)
/// 2. Otherwise, fall back to IFA_ADDRESS (this handles regular IPv6)
///
/// Note: While the RFC does not explicitly prohibit multiple IFA_ADDRESS attributes,
/// common implementations (libnl, vishvananda/netlink) assume a single instance.
/// This implementation follows the same assumption and uses the first matching attribute.
fn parse_ip_address(addr: &AddressMessage) -> Option<IpAddr> {
    // First, try to find IFA_LOCAL
    let local = addr.attributes.iter().find_map(|attr| match attr {
        AddressAttribute::Local(ip) => Some(*ip),
        _ => None,
    });

    // If IFA_LOCAL exists, use it
    if let Some(ip) = local {
        return Some(ip);
    }

    // Otherwise, fall back to IFA_ADDRESS
    addr.attributes.iter().find_map(|attr| match attr {
        AddressAttribute::Address(ip) => Some(*ip),
        _ => None,
    })
}
