use std::net::{IpAddr, Ipv4Addr};

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::network::traits::{Client, NetlinkMessageHandler};
use crate::network::wrapper::ClientWrapper;
use crate::network::{NetlinkResponse, NetworkError, Result};

/// Handler for Address messages in Netlink communication.
///
/// This handler processes Netlink messages related to network addresses
/// and converts them into AddressMessage responses.
pub struct AddressMessageHandler {
    target_index: Option<u32>,
}

impl AddressMessageHandler {
    pub fn new() -> Self {
        Self { target_index: None }
    }

    pub fn with_index(index: u32) -> Self {
        Self {
            target_index: Some(index),
        }
    }
}

impl Default for AddressMessageHandler {
    fn default() -> Self {
        Self::new()
    }
}

impl NetlinkMessageHandler for AddressMessageHandler {
    type Response = AddressMessage;

    fn handle_payload(
        &self,
        payload: NetlinkPayload<RouteNetlinkMessage>,
    ) -> Result<NetlinkResponse<Self::Response>> {
        match payload {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewAddress(addr)) => {
                if let Some(target_index) = self.target_index {
                    if addr.header.index == target_index {
                        Ok(NetlinkResponse::Success(addr))
                    } else {
                        Ok(NetlinkResponse::None)
                    }
                } else {
                    Ok(NetlinkResponse::Success(addr))
                }
            }
            NetlinkPayload::Error(e) => match e.code {
                None => Ok(NetlinkResponse::Success(AddressMessage::default())),
                Some(code) => Ok(NetlinkResponse::Error(code.get())),
            },
            NetlinkPayload::Done(_) => Ok(NetlinkResponse::Done),
            _ => Err(NetworkError::IO(std::io::Error::other(format!(
                "Unexpected message type: {:?}",
                payload
            )))),
        }
    }
}

/// Client for managing network addresses.
///
/// This client provides methods for querying and modifying network address properties
/// through Netlink communication.
pub struct AddressClient {
    client: ClientWrapper,
}

impl AddressClient {
    /// Creates a new AddressClient instance.
    ///
    /// # Returns
    ///
    /// A Result containing either a new AddressClient or an IO error
    pub fn new(client: ClientWrapper) -> Result<Self> {
        Ok(Self { client })
    }

    /// Retrieves all addresses associated with a network interface.
    ///
    /// # Arguments
    ///
    /// * `index` - The index of the network interface
    ///
    /// # Returns
    ///
    /// A Result containing either a vector of AddressMessages or an error
    pub fn get_by_index(&mut self, index: u32) -> Result<Vec<AddressMessage>> {
        let mut message = AddressMessage::default();
        message.header.index = index;
        let mut req = NetlinkMessage::from(RouteNetlinkMessage::GetAddress(message));
        // NLM_F_REQUEST: This is a request to the kernel
        // NLM_F_DUMP: Request a dump of all matching entries
        req.header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        req.finalize();

        let handler = AddressMessageHandler::with_index(index);

        self.client.send_and_receive_multiple(&req, handler)
    }

    /// Adds a new address to a network interface.
    ///
    /// # Arguments
    ///
    /// * `index` - The index of the network interface
    /// * `address` - The IP address to add
    /// * `prefix_len` - The prefix length of the address
    ///
    /// # Returns
    ///
    /// A Result indicating success or failure of the operation
    pub fn add(&mut self, index: u32, address: IpAddr, prefix_len: u8) -> Result<()> {
        let message = self.create_address_request(index, address, prefix_len)?;

        let mut req = NetlinkMessage::from(RouteNetlinkMessage::NewAddress(message));
        // NLM_F_REQUEST: This is a request to the kernel
        // NLM_F_ACK: Request an acknowledgment from the kernel
        // NLM_F_EXCL: Fail if the address already exists
        // NLM_F_CREATE: Create the address if it doesn't exist
        req.header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE;
        req.finalize();

        let handler = AddressMessageHandler::new();

        self.client.send_and_receive(&req, handler)?;
        Ok(())
    }

    /// Creates an address request message.
    ///
    /// # Arguments
    ///
    /// * `index` - The index of the network interface
    /// * `address` - The IP address to add
    /// * `prefix_len` - The prefix length of the address
    ///
    /// # Returns
    ///
    /// A Result containing either the created AddressMessage or an error
    /// ref: https://github.com/rust-netlink/rtnetlink/blob/v0.17.0/src/addr/add.rs#L27-L73
    fn create_address_request(
        &self,
        index: u32,
        address: IpAddr,
        prefix_len: u8,
    ) -> Result<AddressMessage> {
        let mut message = AddressMessage::default();
        message.header.prefix_len = prefix_len;
        message.header.index = index;
        message.header.family = match address {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };

        if address.is_multicast() {
            if let IpAddr::V6(a) = address {
                message.attributes.push(AddressAttribute::Multicast(a));
            }
        } else {
            message.attributes.push(AddressAttribute::Address(address));
            message.attributes.push(AddressAttribute::Local(address));

            if let IpAddr::V4(a) = address {
                if prefix_len == 32 {
                    message.attributes.push(AddressAttribute::Broadcast(a));
                } else {
                    let ip_addr = u32::from(a);
                    let brd =
                        Ipv4Addr::from(((0xffff_ffff_u32) >> u32::from(prefix_len)) | ip_addr);
                    message.attributes.push(AddressAttribute::Broadcast(brd));
                };
            }
        }

        Ok(message)
    }

    #[cfg(test)]
    /// Test method to get send calls from the fake client
    pub fn get_send_calls(
        &self,
    ) -> Option<&[netlink_packet_core::NetlinkMessage<RouteNetlinkMessage>]> {
        if let ClientWrapper::Fake(fake_client) = &self.client {
            Some(fake_client.get_send_calls())
        } else {
            None
        }
    }
}
