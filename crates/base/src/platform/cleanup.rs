//! Undoing what memscope changed in the system when the process is stopped by a signal: a
//! process-wide registry of undo actions (a grown hugetlbfs pool set back, a kdamond
//! memscope created removed, a running command killed: `platform::child` registers one
//! while a command runs and unregisters it once the command is reaped) and the one thread
//! that runs them on SIGINT, SIGTERM, SIGHUP or SIGQUIT and then exits with 128 + the
//! signal number (130 for Ctrl-C), as a shell reports a command killed by it.
//!
//! The thread waits on signal-hook's self-pipe: the process-wide handler only writes to
//! the pipe, so it does not matter which thread the kernel delivers the signal to, and
//! nothing has to block signals in threads started earlier. The actions run on that
//! thread, in the reverse order of their registration, without the registry locked (an
//! action may take its owner's lock while the owner registers something else); a thread
//! that registers an action after the signal thread started running them waits until the
//! process is gone, so it changes nothing more. SIGKILL and a kernel crash cannot be
//! caught.
//!
//! An action must be harmless when run twice or after its owner undid the change itself
//! (running them leaves them registered); owners unregister when they undo.
//!
//! A command that reports what it has measured when interrupted (`advise`) holds a
//! `DeferredInterrupt`: while one is held, the first SIGINT only sets a flag the command
//! polls between runs (the program it runs, in the terminal's process group, gets the
//! Ctrl-C itself); a second one, or any other signal, undoes and exits as usual.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// The signals after which the registered actions run before the process exits.
pub const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// An undo action, as the registry keeps it.
type Action = Arc<dyn Fn() + Send + Sync>;

/// A registered action; hand it to `unregister` once its change is undone.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "an action stays registered until its token is handed to unregister"]
pub struct Token(u64);

struct Registry {
    next: u64,
    actions: Vec<(u64, String, Action)>,
    /// Set by the signal thread when it took the actions to run: nothing may be added.
    exiting: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    actions: Vec::new(),
    exiting: false,
});

/// The signal being handled, 0 while none is.
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// How many `DeferredInterrupt` guards are held, and whether a SIGINT came while one was.
static DEFERRING: AtomicUsize = AtomicUsize::new(0);
static INTERRUPT_REQUESTED: AtomicBool = AtomicBool::new(false);

/// While held, a first SIGINT is a request the holder polls (`interrupt_requested`), not
/// an exit.
#[must_use = "the interrupt is deferred only while the guard is held"]
pub struct DeferredInterrupt(());

impl Drop for DeferredInterrupt {
    fn drop(&mut self) {
        DEFERRING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Defers the first SIGINT (see the module's documentation); the signal thread is
/// started if it was not. Without it (it could not start), Ctrl-C keeps its default.
pub fn defer_interrupt() -> DeferredInterrupt {
    let _ = install();
    DEFERRING.fetch_add(1, Ordering::SeqCst);
    DeferredInterrupt(())
}

/// A SIGINT came while an interrupt was deferred.
pub fn interrupt_requested() -> bool {
    INTERRUPT_REQUESTED.load(Ordering::SeqCst)
}

/// The registry, also after a panic elsewhere poisoned it: undoing must still work.
fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Adds an undo action named `name` (for messages). Call `install` first so it can run on
/// a signal. Registering while the signal thread is already undoing never returns: the
/// process is about to exit, and the caller must not go on to change the system.
pub fn register(name: &str, action: Box<dyn Fn() + Send>) -> Token {
    let action = Mutex::new(action);
    let action: Action = Arc::new(move || {
        (action.lock().unwrap_or_else(PoisonError::into_inner))();
    });
    let mut registry = registry();
    if registry.exiting {
        drop(registry);
        loop {
            std::thread::park();
        }
    }
    registry.next += 1;
    let id = registry.next;
    registry.actions.push((id, name.to_string(), action));
    Token(id)
}

/// Removes an action (its owner undid the change). Unknown tokens are ignored.
pub fn unregister(token: Token) {
    registry().actions.retain(|(id, _, _)| *id != token.0);
}

/// The names of the registered actions, oldest first.
pub fn registered() -> Vec<String> {
    registry()
        .actions
        .iter()
        .map(|(_, name, _)| name.clone())
        .collect()
}

/// Runs the registered actions whose name `wanted` accepts, newest first.
#[cfg(test)]
fn run_named(wanted: impl Fn(&str) -> bool) {
    let actions = snapshot(&registry(), wanted);
    run(&actions);
}

fn snapshot(registry: &Registry, wanted: impl Fn(&str) -> bool) -> Vec<Action> {
    registry
        .actions
        .iter()
        .rev()
        .filter(|(_, name, _)| wanted(name))
        .map(|(_, _, action)| Arc::clone(action))
        .collect()
}

fn run(actions: &[Action]) {
    for action in actions {
        // One action panicking must not keep the others from undoing their change.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| action()));
    }
}

/// The signal the signal thread is handling, for the actions' messages.
pub fn signal_being_handled() -> Option<libc::c_int> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signo => Some(signo),
    }
}

/// Blocks for ever while the signal thread is undoing and about to exit with 128 + the
/// signal: a command that ended because an undo action took its child or its scratch
/// directory away must not exit first, with its own status and an error the signal caused.
pub fn wait_if_exiting() {
    if signal_being_handled().is_some() {
        loop {
            std::thread::park();
        }
    }
}

/// How a message names a signal: "interrupted (SIGINT)".
pub fn signal_name(signo: libc::c_int) -> &'static str {
    match signo {
        libc::SIGINT => "interrupted (SIGINT)",
        libc::SIGTERM => "terminated (SIGTERM)",
        libc::SIGHUP => "hung up (SIGHUP)",
        libc::SIGQUIT => "quit (SIGQUIT)",
        _ => "signal",
    }
}

/// Starts, once, the thread that runs the registered actions on `SIGNALS` and then exits
/// with 128 + the signal number. The handlers are registered on that thread and it reports
/// back, so a failure leaves the signals' default actions in place; the error is the
/// reason alone, for the caller to say what it will not do because of it.
pub fn install() -> io::Result<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let (sender, receiver) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("memscope-signals".into())
                .spawn(move || match signal_hook::iterator::Signals::new(SIGNALS) {
                    Ok(mut signals) => {
                        let _ = sender.send(Ok(()));
                        for signo in signals.forever() {
                            let deferred = signo == libc::SIGINT
                                && DEFERRING.load(Ordering::SeqCst) > 0
                                && !INTERRUPT_REQUESTED.swap(true, Ordering::SeqCst);
                            if !deferred {
                                undo_and_exit(signo);
                            }
                        }
                    }
                    Err(error) => {
                        let _ = sender.send(Err(error.to_string()));
                    }
                })
                .map_err(|error| error.to_string())?;
            receiver
                .recv()
                .unwrap_or_else(|_| Err("the signal thread ended early".into()))
        })
        .clone()
        .map_err(io::Error::other)
}

fn undo_and_exit(signo: libc::c_int) -> ! {
    SIGNAL.store(signo, Ordering::SeqCst);
    let actions = {
        let mut registry = registry();
        registry.exiting = true;
        snapshot(&registry, |_| true)
    };
    run(&actions);
    std::process::exit(128 + signo)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Runs this module's test actions only, not other tests' actions.
    fn run_tests_actions(prefix: &str) {
        run_named(|name| name.starts_with(prefix));
    }

    #[test]
    fn run_all_runs_newest_first_and_keeps_the_actions() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let tokens: Vec<Token> = (0..3)
            .map(|i| {
                let order = Arc::clone(&order);
                register(
                    &format!("cleanup-test-order-{i}"),
                    Box::new(move || order.lock().unwrap().push(i)),
                )
            })
            .collect();
        run_tests_actions("cleanup-test-order-");
        let ran: Vec<i32> = order
            .lock()
            .unwrap()
            .iter()
            .copied()
            .filter(|i| (0..3).contains(i))
            .collect();
        assert_eq!(ran, vec![2, 1, 0]);
        assert!(registered().contains(&"cleanup-test-order-1".to_string()));
        for token in tokens {
            unregister(token);
        }
        assert!(!registered()
            .iter()
            .any(|n| n.starts_with("cleanup-test-order-")));
    }

    #[test]
    fn an_unregistered_action_does_not_run_and_a_panicking_one_stops_nothing() {
        let count = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&count);
        let kept = register(
            "cleanup-test-unreg-kept",
            Box::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            }),
        );
        let panicking = register(
            "cleanup-test-unreg-panics",
            Box::new(|| panic!("an undo failed")),
        );
        let counted = Arc::clone(&count);
        let removed = register(
            "cleanup-test-unreg-removed",
            Box::new(move || {
                counted.fetch_add(100, Ordering::SeqCst);
            }),
        );
        unregister(removed);
        run_tests_actions("cleanup-test-unreg-");
        unregister(panicking);
        unregister(kept);
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(libc::SIGINT), "interrupted (SIGINT)");
        assert_eq!(signal_name(libc::SIGQUIT), "quit (SIGQUIT)");
        assert_eq!(signal_being_handled(), None);
        assert!(install().is_ok());
        assert!(install().is_ok());
    }
}
