//! Keeping a command's whole process tree within memscope's reach, so that no descendant
//! outlives its run or memscope: also one that starts a session of its own, forks twice
//! or ignores SIGTERM.
//!
//! **As root** (wherever `CLONE_NEWPID` is allowed) every run gets a PID namespace of its
//! own. Its init is a fork of memscope made just before the command (`init_main`): it asks
//! for SIGKILL when memscope dies, reaps the orphans the kernel hands it, passes a SIGTERM
//! from memscope on to every process of the namespace, and on SIGUSR1 kills them all,
//! reaps them and writes how many there were. The command is still memscope's own child,
//! forked into the namespace (`unshare(CLONE_NEWPID)` on the spawning thread for the two
//! forks, then `setns` back), so counters, wait4 and /proc work on it as before. When the
//! init dies — at the end of a run, or because memscope died, by any signal, SIGKILL
//! included — the kernel kills every process left in the namespace. Inside it the command
//! is pid 2 to itself; /proc stays the host's.
//!
//! **Without that right** (an ordinary user, a container without CAP_SYS_ADMIN) memscope
//! makes itself a child subreaper, so that orphaned descendants are handed to it rather
//! than to init, and marks the command's environment (`MARKER`): at the end of a run, at a
//! deadline and on SIGTERM, SIGHUP or SIGINT it kills the adopted children that carry the
//! mark, and the ones they leave. Not guaranteed then: a descendant that clears its
//! environment, and anything after a SIGKILL of memscope.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::time::Duration;

/// How a command's process tree is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Containment {
    /// A PID namespace per run: every descendant ends with the run and with memscope,
    /// whatever ends memscope.
    Namespace,
    /// memscope as child subreaper: marked descendants end with the run and when memscope
    /// is stopped by SIGTERM, SIGHUP or SIGINT, not after a SIGKILL of memscope.
    Subreaper,
}

/// The environment variable that marks a command's descendants in subreaper mode.
pub(crate) const MARKER: &str = "MEMSCOPE_RUN";

/// Set (to anything) to use subreaper mode where namespaces would be allowed: the tests of
/// that mode, as root.
pub const NO_NAMESPACE_ENV: &str = "MEMSCOPE_NO_PID_NAMESPACE";

/// How long the init is given to kill and reap its namespace before it is killed itself.
const INIT_REPORT_WAIT: Duration = Duration::from_secs(5);

/// How this process keeps its commands' trees; decided once (subreaper mode sets the
/// process's subreaper attribute then).
pub fn containment() -> Containment {
    static MODE: OnceLock<Containment> = OnceLock::new();
    *MODE.get_or_init(|| {
        if std::env::var_os(NO_NAMESPACE_ENV).is_none() && namespace_allowed() {
            return Containment::Namespace;
        }
        // SAFETY: prctl with constant arguments changes only this process's attribute.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        Containment::Subreaper
    })
}

/// Whether this thread may make a PID namespace (made for its next children, then set
/// back at once: no process is made).
fn namespace_allowed() -> bool {
    let Ok(own) = own_namespace() else {
        return false;
    };
    // SAFETY: both change only which namespace this thread's future children get.
    unsafe {
        libc::unshare(libc::CLONE_NEWPID) == 0
            && libc::setns(own.as_raw_fd(), libc::CLONE_NEWPID) == 0
    }
}

/// This thread's own PID namespace, to return to.
fn own_namespace() -> io::Result<OwnedFd> {
    Ok(std::fs::File::open("/proc/thread-self/ns/pid")?.into())
}

/// A namespace made for one run and its init, while this thread's next fork lands in it.
pub(super) struct Entered {
    own: OwnedFd,
    init: Init,
}

/// The init of a run's namespace (pid 0 once reaped).
pub(super) struct Init {
    pub(super) pid: libc::pid_t,
    /// Where the init writes how many processes it killed.
    report: OwnedFd,
    /// Held open while memscope lives: the init sees it closed if memscope died before
    /// its death signal was set.
    _lifeline: OwnedFd,
}

/// Makes a PID namespace and its init. Call with every signal blocked (the init keeps that
/// mask and takes the signals it serves with `sigwaitinfo`); the calling thread's next
/// fork makes a process of the namespace until `Entered::leave`.
pub(super) fn enter() -> io::Result<Entered> {
    let own = own_namespace()?;
    let (report_read, report_write) = super::pipe()?;
    let (life_read, life_write) = super::pipe()?;
    // SAFETY: unshare changes only the namespace this thread's next children are made in.
    if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the child runs `init_main`, which calls async-signal-safe functions only.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: see above.
        unsafe { init_main(life_read.as_raw_fd(), report_write.as_raw_fd()) }
    }
    let error = io::Error::last_os_error();
    let entered = Entered {
        own,
        init: Init {
            pid: pid.max(0),
            report: report_read,
            _lifeline: life_write,
        },
    };
    if pid < 0 {
        let (_, left) = entered.leave();
        left?;
        return Err(error);
    }
    Ok(entered)
}

impl Entered {
    /// Sets the thread's next children back in its own namespace. The init comes back
    /// also on an error (killed then: reap the command before dropping it).
    pub(super) fn leave(self) -> (Init, io::Result<()>) {
        // SAFETY: setns with a descriptor of the thread's own namespace.
        if unsafe { libc::setns(self.own.as_raw_fd(), libc::CLONE_NEWPID) } != 0 {
            let error = io::Error::last_os_error();
            self.init.signal(libc::SIGKILL);
            return (self.init, Err(error));
        }
        (self.init, Ok(()))
    }
}

impl Init {
    /// Asks the init to pass `signal` on to every process of the namespace (SIGTERM), or
    /// to kill them all and end (SIGUSR1); SIGKILL kills the init and with it the
    /// namespace. The init is reaped only by `end` or on drop, once the command is: the
    /// kernel keeps a dying init until every process of its namespace is reaped, the
    /// command (memscope's child) included.
    pub(super) fn signal(&self, signal: libc::c_int) {
        if self.pid > 0 {
            // SAFETY: the init is our unreaped child: its pid names no other process.
            unsafe { libc::kill(self.pid, signal) };
        }
    }

    /// Once the command is reaped: kills every process left in the namespace and reaps
    /// the init; how many there were (None when the init could not say: killed before).
    pub(super) fn end(&mut self) -> Option<u32> {
        if self.pid <= 0 {
            return None;
        }
        self.signal(libc::SIGUSR1);
        let mut count = [0u8; 4];
        // A dead init's pipe reads end-of-file at once.
        let got = read_within(&self.report, &mut count, INIT_REPORT_WAIT);
        self.reap();
        (got == count.len()).then(|| u32::from_ne_bytes(count))
    }

    /// SIGKILLs the init (the kernel then kills the whole namespace) and reaps it, once
    /// the command is reaped.
    fn reap(&mut self) {
        if self.pid <= 0 {
            return;
        }
        self.signal(libc::SIGKILL);
        let mut status = 0;
        // SAFETY: reaping our own child.
        while unsafe { libc::waitpid(self.pid, &mut status, 0) } < 0
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
        self.pid = 0;
    }
}

impl Drop for Init {
    fn drop(&mut self) {
        self.reap();
    }
}

/// Reads into `buf` until it is full, end of file, or `wait` has passed.
fn read_within(fd: &OwnedFd, buf: &mut [u8], wait: Duration) -> usize {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one valid pollfd.
    let ready = unsafe { libc::poll(&mut poll, 1, wait.as_millis() as libc::c_int) };
    if ready <= 0 {
        return 0;
    }
    super::read_fully(fd, buf)
}

/// The init of a run's namespace: after the fork, with every signal blocked. Only
/// async-signal-safe calls on memory prepared before the fork.
unsafe fn init_main(lifeline: RawFd, report: RawFd) -> ! {
    libc::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        0,
        0,
        0,
    );
    // Nothing of memscope's stays open here: the command's go pipe must read end-of-file
    // when memscope dies, and the lifeline must close with memscope.
    close_all_but(lifeline, report);
    let mut served: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut served);
    for signal in [libc::SIGCHLD, libc::SIGTERM, libc::SIGUSR1] {
        libc::sigaddset(&mut served, signal);
    }
    loop {
        if closed(lifeline) {
            // memscope died before the death signal was asked for; the kernel kills the
            // rest of the namespace with its init.
            libc::_exit(0);
        }
        match libc::sigwaitinfo(&served, std::ptr::null_mut()) {
            libc::SIGTERM => {
                libc::kill(-1, libc::SIGTERM);
            }
            libc::SIGUSR1 => {
                libc::kill(-1, libc::SIGKILL);
                let mut killed: u32 = 0;
                loop {
                    if libc::waitpid(-1, std::ptr::null_mut(), 0) > 0 {
                        killed += 1;
                    } else if *libc::__errno_location() != libc::EINTR {
                        break;
                    }
                }
                libc::write(report, (&killed as *const u32).cast(), 4);
                libc::_exit(0);
            }
            _ => while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {},
        }
    }
}

/// Whether every write end of the pipe `read_end` is closed.
unsafe fn closed(read_end: RawFd) -> bool {
    let mut poll = libc::pollfd {
        fd: read_end,
        events: 0,
        revents: 0,
    };
    libc::poll(&mut poll, 1, 0) > 0 && poll.revents & libc::POLLHUP != 0
}

/// Closes every descriptor from 3 up but `a` and `b`.
unsafe fn close_all_but(a: RawFd, b: RawFd) {
    let (low, high) = (a.min(b) as libc::c_uint, a.max(b) as libc::c_uint);
    let ranges = [(3, low), (low + 1, high), (high + 1, libc::c_uint::MAX)];
    for (first, end) in ranges {
        if first >= end {
            continue;
        }
        if libc::syscall(libc::SYS_close_range, first, end - 1, 0) != 0 {
            // Before Linux 5.9: one by one, up to the descriptor limit.
            let mut limit: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            let top = (limit.rlim_cur.min(1 << 20) as libc::c_uint).min(end);
            for fd in first..top {
                libc::close(fd as RawFd);
            }
        }
    }
}

/// Subreaper mode: kills the adopted children of this process that carry `mark` in
/// their environment (`MARKER=mark`) with `signal`, and with SIGKILL also reaps them and
/// the children they leave behind, until none is left; how many were signalled.
pub(super) fn kill_marked(mark: &str, signal: libc::c_int) -> u32 {
    let needle = format!("{MARKER}={mark}\0").into_bytes();
    let mut signalled = 0;
    for _ in 0..64 {
        let marked: Vec<u32> = crate::topology::process::children(std::process::id())
            .into_iter()
            .filter(|&pid| carries(pid, &needle))
            .collect();
        for &pid in &marked {
            // SAFETY: an unreaped child of ours: the pid names no other process.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
            if signal == libc::SIGKILL {
                let mut status = 0;
                // SAFETY: reaping our own child.
                unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) };
            }
        }
        signalled += marked.len() as u32;
        if marked.is_empty() || signal != libc::SIGKILL {
            break;
        }
    }
    signalled
}

/// Whether the process's environment holds `needle` (`NAME=value\0`), read up to 1 MiB.
fn carries(pid: u32, needle: &[u8]) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let mut environ = Vec::new();
    if file.take(1 << 20).read_to_end(&mut environ).is_err() {
        return false;
    }
    environ
        .split_inclusive(|&b| b == 0)
        .any(|entry| entry == needle)
}
