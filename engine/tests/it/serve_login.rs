//! The subscriber server's login check against a real socket: an account that is not
//! printable ASCII (a byte over 127, a control byte, or all padding) is refused with the
//! documented login-rejected answer (`J`, reason `P`, retry-after 0: do not retry), and a
//! printable one is accepted. The frames are laid by hand from the field tables of
//! `ticklane_engine::serve::protocol`'s docs.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use ticklane_engine::serve::protocol::{decode_server, Reason, ServerMessage};
use ticklane_engine::serve::{start_server, AdmitAll, ServeConfig};

use crate::util::serve::SharedModel;

/// A login frame: length 19 (type byte and payload), `L`, version 1, the 16-byte account.
fn login(account: [u8; 16]) -> Vec<u8> {
    let mut frame = vec![0, 19, b'L', 0, 1];
    frame.extend_from_slice(&account);
    frame
}

/// The server's answer to `frame`: the first frame it sends back.
fn answer(addr: SocketAddr, frame: &[u8]) -> (Option<Reason>, Option<u32>, bool) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(frame).expect("send login");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 512];
    loop {
        if let Ok(Some((message, _))) = decode_server(&buf) {
            return match message {
                ServerMessage::LoginAccepted { .. } => (None, None, true),
                ServerMessage::LoginRejected {
                    reason,
                    retry_after_ms,
                } => (Some(reason), Some(retry_after_ms), false),
                other => panic!("not a login answer: {other:?}"),
            };
        }
        let n = stream.read(&mut chunk).expect("an answer within 10 s");
        assert!(n > 0, "closed without an answer");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn a_login_whose_account_is_not_printable_ascii_is_rejected_for_good() {
    let server = start_server(
        ServeConfig::new("127.0.0.1:0".parse().expect("addr")),
        None,
        Box::new(SharedModel::default()),
        Box::new(AdmitAll),
    )
    .expect("server starts");
    let addr = server.local_addr();
    let mut latin1 = *b"caf             ";
    latin1[3] = 0xe9;
    let mut utf8 = *b"caf             ";
    utf8[3..5].copy_from_slice("é".as_bytes());
    let mut control = *b"tab             ";
    control[3] = b'\t';
    for (name, account) in [
        ("latin-1", latin1),
        ("UTF-8", utf8),
        ("control byte", control),
        ("blank", [b' '; 16]),
        ("zeros", [0; 16]),
    ] {
        let (reason, retry_after, accepted) = answer(addr, &login(account));
        assert!(!accepted, "{name}: accepted");
        assert_eq!(reason, Some(Reason::ProtocolError), "{name}");
        assert_eq!(retry_after, Some(0), "{name}: do not retry");
    }
    let (_, _, accepted) = answer(addr, &login(*b"ticklane        "));
    assert!(accepted, "a printable account is accepted");
    server.stop().expect("stops");
}
