//! Running a user's command as a child process that waits, after the fork, until the
//! parent has attached its counters, then execs the program directly (argv, no shell).
//!
//! `std::process::Command` cannot be used: it returns only after the exec, too late to
//! open counters with `enable_on_exec` on the child. So: the program is looked up on
//! PATH before the fork (as execvp would), the child blocks reading a pipe, the parent
//! opens its counters for the child's pid and writes one byte, and the child execs. A
//! second, close-on-exec pipe carries the errno back when the exec fails, so "no such
//! program" is an error the parent reports, not an exit status it has to guess from.
//! The child calls only async-signal-safe functions between fork and exec.
//!
//! The command dies with memscope, and so does everything it starts (`tree`: a PID
//! namespace per run as root, memscope as subreaper otherwise). Right after the fork the
//! command asks the kernel for SIGKILL when its parent dies (`PR_SET_PDEATHSIG`) and,
//! outside a namespace, compares `getppid()` with the pid memscope had before the fork:
//! if they differ, memscope died before the request took hold and the child exits at
//! once. The death signal fires when the *thread* that forked ends, so a command must be
//! spawned, released and waited for on a thread that lives as long as the command is
//! wanted (`stat`, `pages`, `sweep` and `advise` do it on the main thread). When the
//! command ends, the descendants it left are killed and counted (`Finished::leftovers`).
//!
//! On SIGTERM or SIGHUP, memscope's signal thread (`platform::cleanup`) runs an action
//! registered while a command runs (unregistered once it is reaped, which is done so that
//! the pid cannot be reused under the action): it SIGKILLs the command and its tree
//! before memscope exits. Commands stay in memscope's process group, as a shell's `time`
//! leaves them: a terminal's Ctrl-C (SIGINT) or Ctrl-\ (SIGQUIT) reaches the command
//! directly, while memscope ignores both until the command is reaped and then reports
//! what was counted, as `time` and `perf stat` do. A deadline (`RunningChild::wait_until`)
//! stops the whole tree: SIGTERM, then SIGKILL after `STOP_GRACE`.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::cleanup;

mod placement;
mod tree;
use placement::node_mask;
pub use placement::{NodePolicy, Placement};
pub use tree::{containment, Containment, NO_NAMESPACE_ENV};

/// How long a command stopped at its deadline has between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// Why a command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot run '{program}': {error}")]
    Exec { program: String, error: io::Error },
    #[error("the command contains a NUL byte: '{0}'")]
    NulByte(String),
    #[error("the command is empty")]
    Empty,
    #[error("could not start a child process: {0}")]
    Fork(#[source] io::Error),
}

impl SpawnError {
    /// The exit status a shell gives the same failure: 127 for a program that is not
    /// found, 126 for one that is found but cannot be executed.
    pub fn exit_code(&self) -> u8 {
        match self {
            SpawnError::Exec { error, .. } if error.kind() == io::ErrorKind::NotFound => 127,
            SpawnError::Exec { .. } => 126,
            _ => 1,
        }
    }
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Termination {
    Exited(i32),
    Signaled(i32),
}

impl Termination {
    /// The status a shell reports: the exit code, or 128 + the signal number.
    pub fn shell_status(self) -> i32 {
        match self {
            Termination::Exited(code) => code,
            Termination::Signaled(signal) => 128 + signal,
        }
    }

    pub fn success(self) -> bool {
        self == Termination::Exited(0)
    }
}

impl std::fmt::Display for Termination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Termination::Exited(code) => write!(f, "exit status {code}"),
            Termination::Signaled(signal) => write!(f, "killed by signal {signal}"),
        }
    }
}

/// A finished command: how it ended, its wall time from the release to the exit, the
/// CPU time it and the descendants it waited for used, and the peak resident memory of
/// the largest of them.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    pub termination: Termination,
    pub elapsed: Duration,
    pub user: Duration,
    pub system: Duration,
    /// Peak resident set size in KiB (`ru_maxrss`).
    pub max_rss_kib: u64,
    /// Page faults served without I/O (`ru_minflt`) and with it (`ru_majflt`).
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Descendants still running when the command ended, killed then.
    pub leftovers: u32,
    /// Stopped at its deadline (`RunningChild::wait_until`).
    pub stopped: bool,
}

/// How a command's runs kept their process trees and what each run left running, as
/// results keep it (`view::format::process_tree_notes` words it).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessTree {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containment: Option<Containment>,
    /// Descendants still running at each run's end (killed then), in run order.
    #[serde(default)]
    pub leftovers: Vec<u32>,
    /// Runs stopped at their deadline.
    #[serde(default)]
    pub stopped: u32,
}

impl ProcessTree {
    /// Adds a finished run.
    pub fn add(&mut self, finished: &Finished) {
        self.containment = Some(containment());
        self.leftovers.push(finished.leftovers);
        self.stopped += u32::from(finished.stopped);
    }
}

/// A forked child blocked before its exec. Dropping it without `release` kills it.
pub struct PausedChild {
    pid: libc::pid_t,
    program: String,
    go: Option<OwnedFd>,
    exec_error: OwnedFd,
    tree: Tree,
}

/// What keeps the command's descendants (see `tree`).
struct Tree {
    /// The init of the run's namespace.
    init: Option<tree::Init>,
    /// The mark its descendants carry, in subreaper mode.
    mark: Option<String>,
}

impl Tree {
    /// Kills what the command left (the whole namespace, or the marked orphans): how many.
    fn end(&mut self) -> u32 {
        match (&mut self.init, &self.mark) {
            (Some(init), _) => init.end().unwrap_or(0),
            (None, Some(mark)) => tree::kill_marked(mark, libc::SIGKILL),
            (None, None) => 0,
        }
    }

    /// Sends `signal` to every process of the tree but the command; SIGKILL also ends the
    /// namespace's init. `program` is the command's pid while unreaped (0 after).
    fn signal(&mut self, program: libc::pid_t, signal: libc::c_int) {
        match &mut self.init {
            Some(init) => init.signal(signal),
            None => {
                if program > 0 {
                    for pid in crate::topology::process::process_tree(program as u32)
                        .into_iter()
                        .skip(1)
                    {
                        // SAFETY: kill has no memory-safety preconditions; these are the
                        // command's descendants as just read.
                        unsafe { libc::kill(pid as libc::pid_t, signal) };
                    }
                }
                if let Some(mark) = &self.mark {
                    tree::kill_marked(mark, signal);
                }
            }
        }
    }
}

/// How the child is set up between the fork and the exec, beyond memscope's own
/// environment and attributes (which it inherits unchanged by default).
#[derive(Debug, Clone, Default)]
pub struct SpawnOptions {
    /// Variables set (or replaced) in the command's environment.
    pub env: Vec<(OsString, OsString)>,
    /// Address-space randomization off (personality ADDR_NO_RANDOMIZE), so the command's
    /// mappings land at the same addresses from run to run.
    pub no_aslr: bool,
    /// A descriptor that becomes the command's standard input; memscope's when `None`.
    pub stdin: Option<RawFd>,
    /// A descriptor that becomes the command's standard output (e.g. a file that
    /// captures it); memscope's own stdout when `None`. It must stay open until release.
    pub stdout: Option<RawFd>,
    /// The same for standard error.
    pub stderr: Option<RawFd>,
    /// The CPUs the command (and every thread it starts) may run on; memscope's own
    /// affinity when `None`. Set on the paused child before its exec.
    pub cpus: Option<Vec<usize>>,
    /// Where the command's memory goes: a NUMA policy over nodes (`set_mempolicy` in the
    /// child before its exec, as numactl does).
    pub placement: Option<Placement>,
    /// A descriptor the command inherits, as the number given (`(descriptor, number)`):
    /// the preload library, named `/proc/self/fd/NUMBER` in the command's environment.
    pub inherit: Option<(RawFd, RawFd)>,
}

/// Everything the child needs, prepared before the fork (the child must not allocate).
struct ExecPlan {
    candidates: Vec<CString>,
    argv: Vec<CString>,
    /// The whole environment when options change it; `None` keeps memscope's.
    envp: Option<Vec<CString>>,
    no_aslr: bool,
    stdin: Option<RawFd>,
    stdout: Option<RawFd>,
    stderr: Option<RawFd>,
    /// The MPOL_* mode of `SpawnOptions::placement` and its node mask, one bit per node.
    placement: Option<(libc::c_int, Vec<libc::c_ulong>)>,
    inherit: Option<(RawFd, RawFd)>,
}

impl ExecPlan {
    fn new(
        command: &[OsString],
        options: &SpawnOptions,
        mark: Option<&str>,
    ) -> Result<ExecPlan, SpawnError> {
        let program = command.first().ok_or(SpawnError::Empty)?;
        let cstring = |s: &OsStr| {
            CString::new(s.as_bytes()).map_err(|_| SpawnError::NulByte(s.to_string_lossy().into()))
        };
        let argv = command
            .iter()
            .map(|a| cstring(a))
            .collect::<Result<Vec<_>, _>>()?;
        if program.is_empty() {
            return Err(SpawnError::Exec {
                program: String::new(),
                error: io::Error::from_raw_os_error(libc::ENOENT),
            });
        }
        let candidates = if program.as_bytes().contains(&b'/') {
            vec![argv[0].clone()]
        } else {
            let path = std::env::var_os("PATH")
                .unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
            std::env::split_paths(&path)
                .map(|dir| {
                    let dir = if dir.as_os_str().is_empty() {
                        Path::new(".").to_path_buf()
                    } else {
                        dir
                    };
                    cstring(dir.join(program).as_os_str())
                })
                .collect::<Result<Vec<_>, _>>()?
        };
        let mut env = options.env.clone();
        if let Some(mark) = mark {
            env.push((tree::MARKER.into(), mark.into()));
        }
        let envp = if env.is_empty() {
            None
        } else {
            let replaced: Vec<&OsString> = env.iter().map(|(k, _)| k).collect();
            let mut envp = std::env::vars_os()
                .filter(|(k, _)| !replaced.contains(&k))
                .chain(env.iter().cloned())
                .map(|(k, v)| {
                    let mut entry = k;
                    entry.push("=");
                    entry.push(v);
                    cstring(&entry)
                })
                .collect::<Result<Vec<_>, _>>()?;
            envp.shrink_to_fit();
            Some(envp)
        };
        Ok(ExecPlan {
            candidates,
            argv,
            envp,
            no_aslr: options.no_aslr,
            stdin: options.stdin,
            stdout: options.stdout,
            stderr: options.stderr,
            placement: (options.placement.as_ref()).map(|p| (p.policy.raw(), node_mask(&p.nodes))),
            inherit: options.inherit,
        })
    }
}

/// A mark for one run's descendants in subreaper mode: this process and a count.
fn next_mark() -> String {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{run}", std::process::id())
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Forks a child that will exec `command` (looked up on PATH when it has no '/') once
/// released. Its stdin, stdout and stderr are memscope's.
#[cfg(test)]
pub(crate) fn spawn_paused(command: &[OsString]) -> Result<PausedChild, SpawnError> {
    spawn_paused_with(command, &SpawnOptions::default())
}

/// `spawn_paused` with the child's environment and attributes set by `options`.
pub fn spawn_paused_with(
    command: &[OsString],
    options: &SpawnOptions,
) -> Result<PausedChild, SpawnError> {
    let mark = (containment() == Containment::Subreaper).then(next_mark);
    let plan = ExecPlan::new(command, options, mark.as_deref())?;
    let (go_read, go_write) = pipe().map_err(SpawnError::Fork)?;
    let (err_read, err_write) = pipe().map_err(SpawnError::Fork)?;
    let mut argv: Vec<*const libc::c_char> = plan.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Option<Vec<*const libc::c_char>> = plan
        .envp
        .as_ref()
        .map(|e| e.iter().map(|v| v.as_ptr()).collect());
    if let Some(envp) = envp.as_mut() {
        envp.push(std::ptr::null());
    }
    // SAFETY: getpid has no preconditions and cannot fail.
    let parent = unsafe { libc::getpid() };
    // Every signal blocked across the fork, so no handler of memscope's (signal-hook's,
    // which writes to memscope's self-pipe) runs in the child before it resets them.
    let blocked = BlockedSignals::new();
    // As root the run's namespace and its init first: the command is forked into it.
    let entered = match containment() {
        Containment::Namespace => Some(tree::enter().map_err(SpawnError::Fork)?),
        Containment::Subreaper => None,
    };
    // SAFETY: the child runs only async-signal-safe calls (prctl, getppid, sigaction,
    // sigprocmask, read, write, dup2, set_mempolicy, personality, execv(e), _exit) on memory prepared
    // before the fork, then execs or exits.
    let pid = unsafe { libc::fork() };
    let fork_error = io::Error::last_os_error();
    if pid == 0 {
        // SAFETY: see above; the descriptors and strings stay valid in the child.
        unsafe {
            libc::close(go_write.as_raw_fd());
            libc::close(err_read.as_raw_fd());
            child_after_fork(
                &plan,
                &argv,
                envp.as_deref(),
                Pipes {
                    go: go_read.as_raw_fd(),
                    exec_error: err_write.as_raw_fd(),
                },
                // Outside the namespace the parent's pid reads 0; its init dies with memscope.
                entered.is_none().then_some(parent),
                &blocked.old,
            )
        }
    }
    let (init, left) = match entered.map(tree::Entered::leave) {
        Some((init, left)) => (Some(init), left),
        None => (None, Ok(())),
    };
    drop(blocked);
    if let Err(error) = left {
        // The init is killed, and the command with its namespace: reap it first.
        if pid > 0 {
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        }
        return Err(SpawnError::Fork(error));
    }
    let tree = Tree { init, mark };
    if pid < 0 {
        return Err(SpawnError::Fork(fork_error));
    }
    drop(go_read);
    drop(err_write);
    let paused = PausedChild {
        pid,
        program: command[0].to_string_lossy().into_owned(),
        go: Some(go_write),
        exec_error: err_read,
        tree,
    };
    if let Some(cpus) = &options.cpus {
        // Dropping `paused` on the error kills the child that never ran.
        crate::platform::affinity::set_thread_cpus(pid, cpus).map_err(SpawnError::Fork)?;
    }
    Ok(paused)
}

/// The child's ends of the two pipes.
struct Pipes {
    go: libc::c_int,
    exec_error: libc::c_int,
}

/// The child's side (its copies of the parent's pipe ends already closed, so the go
/// pipe reads end-of-file when the parent gives up): ask to die with the parent (and exit
/// if it is gone already), reset memscope's signal handlers and the signals Rust's runtime
/// ignores to their defaults and unblock signals, wait for the go byte, try each candidate
/// path, report the errno, exit.
unsafe fn child_after_fork(
    plan: &ExecPlan,
    argv: &[*const libc::c_char],
    envp: Option<&[*const libc::c_char]>,
    pipes: Pipes,
    parent: Option<libc::pid_t>,
    old_mask: &libc::sigset_t,
) -> ! {
    let Pipes { go, exec_error } = pipes;
    // The parent may have died between the fork and the prctl, when the request comes too
    // late to fire: then the child has been reparented and sees another parent pid.
    if libc::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        0,
        0,
        0,
    ) != 0
        || parent.is_some_and(|p| libc::getppid() != p)
    {
        libc::_exit(125);
    }
    let mut default: libc::sigaction = std::mem::zeroed();
    default.sa_sigaction = libc::SIG_DFL;
    for signal in [
        libc::SIGPIPE,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGHUP,
    ] {
        libc::sigaction(signal, &default, std::ptr::null_mut());
    }
    libc::pthread_sigmask(libc::SIG_SETMASK, old_mask, std::ptr::null_mut());
    let mut byte = 0u8;
    loop {
        let n = libc::read(go, (&mut byte as *mut u8).cast(), 1);
        if n == 1 {
            break;
        }
        if n == 0 || *libc::__errno_location() != libc::EINTR {
            // The parent gave up before releasing us.
            libc::_exit(125);
        }
    }
    // dup2 leaves the copy open across the exec (no close-on-exec flag).
    let inherit = plan
        .inherit
        .map_or((None, -1), |(fd, number)| (Some(fd), number));
    for (fd, target) in [(plan.stdin, 0), (plan.stdout, 1), (plan.stderr, 2), inherit] {
        if let Some(fd) = fd {
            if libc::dup2(fd, target) < 0 {
                libc::_exit(125);
            }
        }
    }
    if let Some((mode, mask)) = &plan.placement {
        // MPOL_BIND (2), MPOL_INTERLEAVE (3) or MPOL_WEIGHTED_INTERLEAVE (6); maxnode
        // counts the mask's bits. A refusal leaves the default policy: the command still
        // runs (advise asks for the weighted mode only where the kernel has it, and a
        // bound node is checked before).
        libc::syscall(
            libc::SYS_set_mempolicy,
            *mode,
            mask.as_ptr(),
            (mask.len() * libc::c_ulong::BITS as usize) as libc::c_ulong,
        );
    }
    if plan.no_aslr {
        let current = libc::personality(0xffff_ffff);
        if current >= 0 {
            libc::personality(
                (current as libc::c_ulong) | libc::ADDR_NO_RANDOMIZE as libc::c_ulong,
            );
        }
    }
    // As execvp: ENOENT-like failures try the next directory, and a program found but
    // not executable (EACCES) is reported in preference to "not found".
    let mut errno = libc::ENOENT;
    for candidate in &plan.candidates {
        match envp {
            Some(envp) => libc::execve(candidate.as_ptr(), argv.as_ptr(), envp.as_ptr()),
            None => libc::execv(candidate.as_ptr(), argv.as_ptr()),
        };
        match *libc::__errno_location() {
            libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::ENAMETOOLONG => {}
            libc::EACCES => errno = libc::EACCES,
            other => {
                errno = other;
                break;
            }
        }
    }
    let bytes = errno.to_ne_bytes();
    libc::write(exec_error, bytes.as_ptr().cast(), bytes.len());
    libc::_exit(127)
}

impl PausedChild {
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Lets the child exec and waits for the command to end. While it runs, memscope
    /// ignores SIGINT and SIGQUIT (as `time` and `perf stat` do): Ctrl-C stops the
    /// command, and memscope still reports what was counted.
    pub fn run(self) -> Result<Finished, SpawnError> {
        self.release()?.wait()
    }

    /// Lets the child exec and returns once the exec has happened (or failed), with the
    /// command running; SIGINT and SIGQUIT are ignored by memscope until it is reaped, and
    /// a SIGTERM or SIGHUP of memscope kills it (see the module's documentation).
    pub fn release(mut self) -> Result<RunningChild, SpawnError> {
        // The signal thread first: its handlers must be in place before SIGINT and SIGQUIT
        // are ignored, so that putting back the dispositions found puts back its handlers.
        // Without a signal thread the death signal still covers a memscope killed by
        // SIGTERM's default action.
        let installed = cleanup::install().is_ok();
        let ignored = IgnoredSignals::new();
        let pid = std::mem::replace(&mut self.pid, 0);
        let tree = std::mem::replace(
            &mut self.tree,
            Tree {
                init: None,
                mark: None,
            },
        );
        let alive = Arc::new(Mutex::new(Alive { program: pid, tree }));
        // Registered before the exec, so there is no moment when the command runs and a
        // signal would leave it.
        let token = installed.then(|| {
            let alive = Arc::clone(&alive);
            cleanup::register(
                &format!("child process {pid}"),
                Box::new(move || kill_unreaped(&alive)),
            )
        });
        let start = Instant::now();
        let go = self.go.take().expect("released once");
        // SAFETY: writing one byte to our end of the pipe.
        unsafe { libc::write(go.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        drop(go);
        let mut errno = [0u8; 4];
        let n = read_fully(&self.exec_error, &mut errno);
        let mut running = RunningChild {
            pid,
            start,
            alive,
            token,
            _ignored: ignored,
        };
        if n == errno.len() {
            // The exec failed and the child exits with 127: reap it, report the errno.
            let _ = running.wait();
            return Err(SpawnError::Exec {
                program: self.program.clone(),
                error: io::Error::from_raw_os_error(i32::from_ne_bytes(errno)),
            });
        }
        Ok(running)
    }
}

/// What the signal path's action may kill: the command's pid until it is reaped (0
/// after), and its tree. Locked while the command is reaped, so the pid named is never
/// another process's.
struct Alive {
    program: libc::pid_t,
    tree: Tree,
}

/// The signal path's action for a running command: SIGKILL it, its process group if it
/// made one of its own, and its whole tree.
fn kill_unreaped(alive: &Mutex<Alive>) {
    let mut alive = alive.lock().unwrap_or_else(PoisonError::into_inner);
    let pid = alive.program;
    if pid > 0 {
        // SAFETY: getpgid and kill have no memory-safety preconditions; the pid is our
        // unreaped child's (a zombie at worst), so it names no other process.
        unsafe {
            if libc::getpgid(pid) == pid {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    alive.tree.signal(pid, libc::SIGKILL);
    if pid > 0 {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// A command that has been released and has exec'd; dropping it without reaping it
/// waits for it (it is never left a zombie).
pub struct RunningChild {
    pid: libc::pid_t,
    start: Instant,
    /// The pid while unreaped and the tree, for the signal path's action.
    alive: Arc<Mutex<Alive>>,
    token: Option<cleanup::Token>,
    _ignored: IgnoredSignals,
}

impl RunningChild {
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Waits for the command to end.
    pub fn wait(&mut self) -> Result<Finished, SpawnError> {
        loop {
            if let Some(finished) = self.reap(0)? {
                return Ok(finished);
            }
        }
    }

    /// Waits for the command to end, or stops its whole tree at `deadline`: SIGTERM,
    /// then SIGKILL after `STOP_GRACE` (`Finished::stopped` says so).
    pub fn wait_until(&mut self, deadline: Option<Instant>) -> Result<Finished, SpawnError> {
        let Some(deadline) = deadline else {
            return self.wait();
        };
        let mut stopped = false;
        for (signal, until) in [
            (libc::SIGTERM, deadline),
            (libc::SIGKILL, deadline.max(Instant::now()) + STOP_GRACE),
        ] {
            if self.ends_by(until) {
                break;
            }
            stopped = true;
            self.signal_tree(signal);
        }
        let mut finished = self.wait()?;
        finished.stopped = stopped;
        Ok(finished)
    }

    /// Sends `signal` to the command and to every process of its tree.
    fn signal_tree(&self, signal: libc::c_int) {
        let mut alive = self.alive.lock().unwrap_or_else(PoisonError::into_inner);
        let program = alive.program;
        // A namespace's init passes SIGTERM on and kills everything on SIGUSR1, the
        // command included, while staying to report and be reaped.
        let to_tree = if signal == libc::SIGKILL && alive.tree.init.is_some() {
            libc::SIGUSR1
        } else {
            signal
        };
        alive.tree.signal(program, to_tree);
        if program > 0 {
            // SAFETY: our unreaped child: the pid names no other process.
            unsafe { libc::kill(program, signal) };
        }
    }

    /// Whether the command has ended (not reaped) by `until`.
    fn ends_by(&self, until: Instant) -> bool {
        loop {
            // SAFETY: an all-zero siginfo is a valid value for waitid to overwrite.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: asking about our own child without reaping it.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                )
            };
            // SAFETY: waitid filled `info` (si_pid stays 0 while the child runs).
            if r != 0 || unsafe { info.si_pid() } != 0 {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    }

    /// The command's end if it has ended, without blocking.
    pub fn try_wait(&mut self) -> Result<Option<Finished>, SpawnError> {
        self.reap(libc::WNOHANG)
    }

    /// Reaps the command once it has ended (blocking unless `flags` has WNOHANG). A
    /// blocking wait first waits for the end without reaping (WNOWAIT), so that the lock
    /// the signal path's action takes is held only for the reaping itself.
    fn reap(&mut self, flags: libc::c_int) -> Result<Option<Finished>, SpawnError> {
        if self.pid <= 0 {
            return Err(SpawnError::Fork(io::Error::other(
                "the command was already reaped",
            )));
        }
        if flags & libc::WNOHANG == 0 {
            // SAFETY: an all-zero siginfo is a valid value for waitid to overwrite.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: waiting for our own child, with a valid out-pointer.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    self.pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if r != 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    return Ok(None);
                }
                return Err(SpawnError::Fork(e));
            }
        }
        let mut alive = self.alive.lock().unwrap_or_else(PoisonError::into_inner);
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waiting for our own child, with valid out-pointers. After the WNOWAIT
        // wait it has ended, so this returns at once.
        let r = unsafe { libc::wait4(self.pid, &mut status, flags, &mut usage) };
        if r == 0 {
            return Ok(None);
        }
        if r != self.pid {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(None);
            }
            return Err(SpawnError::Fork(e));
        }
        let elapsed = self.start.elapsed();
        alive.program = 0;
        // Killed by the signal path: memscope is exiting with 128 + the signal.
        drop(alive);
        cleanup::wait_if_exiting();
        let mut alive = self.alive.lock().unwrap_or_else(PoisonError::into_inner);
        let leftovers = alive.tree.end();
        drop(alive);
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
        self.pid = 0;
        let termination = if libc::WIFSIGNALED(status) {
            Termination::Signaled(libc::WTERMSIG(status))
        } else {
            Termination::Exited(libc::WEXITSTATUS(status))
        };
        let time = |tv: libc::timeval| {
            Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)
        };
        Ok(Some(Finished {
            termination,
            elapsed,
            user: time(usage.ru_utime),
            system: time(usage.ru_stime),
            max_rss_kib: usage.ru_maxrss.max(0) as u64,
            minor_faults: usage.ru_minflt.max(0) as u64,
            major_faults: usage.ru_majflt.max(0) as u64,
            leftovers,
            stopped: false,
        }))
    }
}

impl Drop for RunningChild {
    fn drop(&mut self) {
        while self.pid > 0 {
            if self.reap(0).is_err() {
                break;
            }
        }
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
    }
}

impl Drop for PausedChild {
    fn drop(&mut self) {
        if self.pid > 0 {
            // Never released: closing the go pipe makes the child exit; reap it.
            self.go.take();
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(self.pid, &mut status, 0) };
        }
        self.tree.end();
    }
}

/// Reads until `buf` is full or end of file; returns the bytes read.
fn read_fully(fd: &OwnedFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the unfilled part of `buf`.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf[got..].as_mut_ptr().cast(),
                buf.len() - got,
            )
        };
        match n {
            n if n > 0 => got += n as usize,
            0 => break,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => break,
        }
    }
    got
}

/// Every signal blocked in the calling thread until dropped; `old` is the mask before.
struct BlockedSignals {
    old: libc::sigset_t,
}

impl BlockedSignals {
    fn new() -> BlockedSignals {
        // SAFETY: sigfillset and pthread_sigmask write to the sets given; an all-zero
        // sigset_t is a valid value to overwrite.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            BlockedSignals { old }
        }
    }
}

impl Drop for BlockedSignals {
    fn drop(&mut self) {
        // SAFETY: restoring the mask saved in `new`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old, std::ptr::null_mut()) };
    }
}

/// SIGINT and SIGQUIT ignored in memscope until dropped.
struct IgnoredSignals(Vec<(libc::c_int, libc::sigaction)>);

impl IgnoredSignals {
    fn new() -> IgnoredSignals {
        let mut saved = Vec::new();
        for signal in [libc::SIGINT, libc::SIGQUIT] {
            // SAFETY: sigaction with valid pointers; the old action is kept to restore.
            unsafe {
                let mut ignore: libc::sigaction = std::mem::zeroed();
                ignore.sa_sigaction = libc::SIG_IGN;
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &ignore, &mut old) == 0 {
                    saved.push((signal, old));
                }
            }
        }
        IgnoredSignals(saved)
    }
}

impl Drop for IgnoredSignals {
    fn drop(&mut self) {
        for (signal, old) in &self.0 {
            // SAFETY: restoring the action saved in `new`.
            unsafe { libc::sigaction(*signal, old, std::ptr::null_mut()) };
        }
    }
}

#[cfg(test)]
mod tests;
