//! What the measurements stand on: the clock (`timer`), thread pinning (`affinity`),
//! memory buffers with an explicit page policy (`arena`), NUMA placement of their pages
//! through mbind and get_mempolicy (`numa_policy`), pages moved node by node with
//! move_pages and the system's weighted interleave read (`page_placement`) and written
//! for one run when asked (`interleave_weights`), teams
//! of pinned threads that run trials together (`team`), whether a trial was preempted
//! (`preemption`), and hugetlbfs pages reserved for a run and always given back
//! (`hugepages`), a resctrl group that restricts a command's L3 ways or memory
//! bandwidth (`resctrl`), a user's command
//! started paused so counters can be attached before its exec (`child`), the undo
//! actions run when a signal stops the process (`cleanup`), scratch directories
//! removed on every exit (`scratch`), file-system calls relative to directory handles
//! that follow a symbolic link only by the link rule (`fs`), one run of a kind at a time
//! on a machine (`exclusive`), the journal of those changes that lets the next
//! start undo what a SIGKILL left (`journal`), the competition for the CPUs: other
//! runnable tasks and steal time (`load`), and the files a user names for memscope to
//! read, only regular ones, read to a cap or mapped (`user_file`).

pub mod affinity;
pub mod arena;
pub mod child;
pub mod cleanup;
pub mod cpu_time;
pub mod exclusive;
#[cfg(any(test, feature = "test-support"))]
pub mod fake_files;
pub mod hugepages;
pub mod interleave_weights;
pub mod journal;
pub mod load;
pub mod numa_policy;
pub mod page_placement;
pub mod preemption;
pub mod resctrl;
pub mod scratch;
pub mod team;
pub mod timer;
pub mod user_file;
