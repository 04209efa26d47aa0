//! The server name of a TLS ClientHello (RFC 8446 §4.1.2, RFC 6066 §3),
//! read from the client's first record before anything reaches upstream.
//! Only what is needed is parsed; anything malformed is "no name".

/// The first TLS record's length when `buf` starts one: a handshake
/// record (0x16) with a TLS major version 3.
pub fn record_len(buf: &[u8]) -> Option<usize> {
    (buf.len() >= 5 && buf[0] == 0x16 && buf[1] == 3)
        .then(|| 5 + usize::from(u16::from_be_bytes([buf[3], buf[4]])))
}

/// Whether `buf` starts like a TLS handshake (checked on the first byte, so
/// a one-byte read is enough to decide to wait for the whole record).
pub fn looks_like_tls(buf: &[u8]) -> bool {
    buf.first() == Some(&0x16)
}

/// The host name in the ClientHello of the complete record `rec`.
pub fn server_name(rec: &[u8]) -> Option<String> {
    let mut r = Reader(rec.get(5..)?);
    if r.u8()? != 1 {
        return None; // not a ClientHello
    }
    let len = r.u24()?;
    let mut hello = Reader(r.take(len)?);
    hello.take(2 + 32)?; // version, random
    let sid = usize::from(hello.u8()?);
    hello.take(sid)?;
    let suites = usize::from(hello.u16()?);
    hello.take(suites)?;
    let comp = usize::from(hello.u8()?);
    hello.take(comp)?;
    let mut ext = Reader(hello.vec16()?);
    while !ext.0.is_empty() {
        let typ = ext.u16()?;
        let body = ext.vec16()?;
        if typ != 0 {
            continue;
        }
        let mut list = Reader(body);
        let mut names = Reader(list.vec16()?);
        while !names.0.is_empty() {
            let kind = names.u8()?;
            let name = names.vec16()?;
            if kind == 0 {
                // RFC 6066: a HostName is never empty (found by the
                // mutation test below; refused either way, as no match).
                if name.is_empty() {
                    return None;
                }
                let name = std::str::from_utf8(name).ok()?;
                return Some(name.to_ascii_lowercase());
            }
        }
    }
    None
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    /// A vector with a 16-bit length prefix.
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }
    fn u24(&mut self) -> Option<usize> {
        self.take(3)
            .map(|b| usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ClientHello record naming `name`.
    pub fn hello(name: &str) -> Vec<u8> {
        let n = name.as_bytes();
        let mut sni = vec![0u8];
        sni.extend((n.len() as u16).to_be_bytes());
        sni.extend(n);
        let mut list = (sni.len() as u16).to_be_bytes().to_vec();
        list.extend(sni);
        let mut ext = vec![0, 0];
        ext.extend((list.len() as u16).to_be_bytes());
        ext.extend(list);
        let mut body = vec![3, 3];
        body.extend([0u8; 32]);
        body.extend([0, 0, 2, 0x13, 0x01, 1, 0]);
        body.extend((ext.len() as u16).to_be_bytes());
        body.extend(ext);
        let mut hs = vec![1];
        hs.extend(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend(body);
        let mut rec = vec![0x16, 3, 1];
        rec.extend((hs.len() as u16).to_be_bytes());
        rec.extend(hs);
        rec
    }

    #[test]
    fn reads_the_name() {
        let rec = hello("Example.COM");
        assert_eq!(record_len(&rec), Some(rec.len()));
        assert_eq!(server_name(&rec).as_deref(), Some("example.com"));
        assert_eq!(server_name(&rec[..rec.len() - 3]), None);
        assert_eq!(server_name(b"GET / HTTP/1.1\r\n"), None);
        assert!(!looks_like_tls(b"GET"));
    }

    /// A step's ClientHello: 50,000 mutants of a valid one give a name or
    /// none without a panic, and a name is never upper case or empty.
    #[test]
    fn mutated_hellos_never_panic() {
        let seed = hello("api.example.com");
        for m in crate::supervisor::egress::mutate::mutants(&seed, 50_000, 2) {
            let _ = record_len(&m);
            let _ = looks_like_tls(&m);
            if let Some(name) = server_name(&m) {
                assert!(
                    !name.is_empty() && name == name.to_ascii_lowercase(),
                    "{m:?}: {name:?}"
                );
            }
        }
    }
}
