//! One run of a kind at a time on a machine: a listening socket bound to an abstract
//! name (`memscope-advise`), which the kernel frees when its holder ends by any means
//! (no file to leave behind or to be swapped by another user). A second run finds the
//! name taken and learns the holder's pid from the socket's peer credentials.

use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};

/// The name held while it lives.
#[derive(Debug)]
pub struct Exclusive {
    _listener: UnixListener,
}

impl Exclusive {
    /// Takes `memscope-KIND`; `Err(pid)` when another process holds it (its pid when the
    /// kernel tells it, 0 otherwise).
    pub fn take(kind: &str) -> Result<Exclusive, u32> {
        let name = format!("memscope-{kind}");
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).map_err(|_| 0u32)?;
        match UnixListener::bind_addr(&addr) {
            Ok(listener) => Ok(Exclusive {
                _listener: listener,
            }),
            Err(_) => Err(UnixStream::connect_addr(&addr)
                .ok()
                .and_then(|s| peer_pid(&s))
                .unwrap_or(0)),
        }
    }
}

/// The pid of the process at the other end of `stream` (SO_PEERCRED).
fn peer_pid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of a ucred, as SO_PEERCRED needs.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(cred.pid as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_ends() {
        let kind = format!("test-{}", std::process::id());
        let first = Exclusive::take(&kind).unwrap();
        assert_eq!(Exclusive::take(&kind).unwrap_err(), std::process::id());
        drop(first);
        assert!(Exclusive::take(&kind).is_ok());
    }
}
