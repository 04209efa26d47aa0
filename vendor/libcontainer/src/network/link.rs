use std::os::fd::RawFd;

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};

use super::traits::{Client, NetlinkMessageHandler};
use super::wrapper::ClientWrapper;
use super::{NetlinkResponse, NetworkError, Result};

/// Handler for Link messages in Netlink communication.
///
/// This handler processes Netlink messages related to network interfaces (links)
/// and converts them into LinkMessage responses.
pub struct LinkMessageHandler;

impl NetlinkMessageHandler for LinkMessageHandler {
    type Response = LinkMessage;

    fn handle_payload(
        &self,
        payload: NetlinkPayload<RouteNetlinkMessage>,
    ) -> Result<NetlinkResponse<Self::Response>> {
        match payload {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(link)) => {
                Ok(NetlinkResponse::Success(link))
            }
            NetlinkPayload::Error(e) => match e.code {
                // According to netlink(7), when e.code is 0, it indicates success (acknowledgement)
                // rather than an error. This is used for ACK messages where the operation succeeded.
                // See: https://www.man7.org/linux/man-pages/man7/netlink.7.html
                None => Ok(NetlinkResponse::Success(LinkMessage::default())),
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

/// Client for managing network interfaces (links).
///
/// This client provides methods for querying and modifying network interface properties
/// through Netlink communication.
pub struct LinkClient {
    client: ClientWrapper,
}

impl LinkClient {
    /// Creates a new LinkClient instance.
    ///
    /// # Returns
    ///
    /// A Result containing either a new LinkClient or an IO error
    pub fn new(client: ClientWrapper) -> Result<Self> {
        Ok(Self { client })
    }

    /// Retrieves a network interface by its name.
    ///
    /// # Arguments
    ///
    /// * `name` - The name of the network interface to retrieve
    ///
    /// # Returns
    ///
    /// A Result containing either the LinkMessage for the interface or an error
    pub fn get_by_name(&mut self, name: &str) -> Result<LinkMessage> {
        let mut message = LinkMessage::default();
        message
            .attributes
            .push(LinkAttribute::IfName(name.to_string()));

        let mut req = NetlinkMessage::from(RouteNetlinkMessage::GetLink(message));
        req.header.flags = NLM_F_REQUEST;
        req.finalize();

        self.client.send_and_receive(&req, LinkMessageHandler)
    }

    /// Sets a network interface to the up state.
    ///
    /// # Arguments
    ///
    /// * `index` - The index of the network interface to modify
    ///
    /// # Returns
    ///
    /// A Result indicating success or failure of the operation
    pub fn set_up(&mut self, index: u32) -> Result<()> {
        let mut message = LinkMessage::default();
        message.header.index = index;

        let mut req = NetlinkMessage::from(RouteNetlinkMessage::SetLink(message));
        if let NetlinkPayload::InnerMessage(RouteNetlinkMessage::SetLink(ref mut link)) =
            req.payload
        {
            // change_mask specifies which flags we want to modify
            link.header.change_mask |= LinkFlags::Up;
            // Set the Up flag to bring the interface up
            link.header.flags |= LinkFlags::Up;
        }
        // NLM_F_REQUEST: This is a request to the kernel
        // NLM_F_ACK: Request an acknowledgment from the kernel
        req.header.flags = NLM_F_REQUEST | NLM_F_ACK;
        req.finalize();

        self.client.send_and_receive(&req, LinkMessageHandler)?;
        Ok(())
    }

    /// Sets a network interface to the down state.
    ///
    /// # Arguments
    ///
    /// * `index` - The index of the network interface to modify
    ///
    /// # Returns
    ///
    /// A Result indicating success or failure of the operation
    pub fn set_down(&mut self, index: u32) -> Result<()> {
        let mut message = LinkMessage::default();
        message.header.index = index;

        let mut req = NetlinkMessage::from(RouteNetlinkMessage::SetLink(message));
        if let NetlinkPayload::InnerMessage(RouteNetlinkMessage::SetLink(ref mut link)) =
            req.payload
        {
            // change_mask specifies which flags we want to modify
            link.header.change_mask |= LinkFlags::Up;
            // Remove the Up flag to bring the interface down
            link.header.flags.remove(LinkFlags::Up);
        }
        // NLM_F_REQUEST: This is a request to the kernel
        // NLM_F_ACK: Request an acknowledgment from the kernel
        req.header.flags = NLM_F_REQUEST | NLM_F_ACK;
        req.finalize();

        self.client.send_and_receive(&req, LinkMessageHandler)?;
        Ok(())
    }

    /// Moves a network interface to a different network namespace.
    ///
    /// # Arguments
    ///
    /// * `index` - The index of the network interface to move
    /// * `new_name` - The new name for the interface in the target namespace
    /// * `ns_path` - The file descriptor of the target network namespace
    ///
    /// # Returns
    ///
    /// A Result indicating success or failure of the operation
    pub fn set_ns_fd(&mut self, index: u32, new_name: &str, ns_path: RawFd) -> Result<()> {
        let mut message = LinkMessage::default();
        message.header.index = index;
        message
            .attributes
            .push(LinkAttribute::IfName(new_name.to_string()));
        message.attributes.push(LinkAttribute::NetNsFd(ns_path));

        let mut req = NetlinkMessage::from(RouteNetlinkMessage::SetLink(message));
        // NLM_F_REQUEST: This is a request to the kernel
        // NLM_F_ACK: Request an acknowledgment from the kernel
        // NLM_F_EXCL: Fail if the interface name already exists in the target namespace
        // NLM_F_CREATE: Create the interface if it doesn't exist
        req.header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE;
        req.finalize();

        self.client.send_and_receive(&req, LinkMessageHandler)?;
        Ok(())
    }
}
