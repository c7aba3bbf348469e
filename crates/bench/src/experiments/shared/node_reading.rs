//! What the rooms that place memory on NUMA nodes and read it (`numa`, `interleave`)
//! share: work done on a scoped thread pinned to a CPU (so buffers are first touched, and
//! page tables made, on the node meant), and the read kernel's instruction set.

use crate::error::UsageError;
use crate::kernels::stream::Isa;
use crate::platform::affinity;

/// Runs `work` on a scoped thread pinned to `cpu` (unpinned with None) and returns what it
/// returns; a panic in it is resumed here.
pub(crate) fn on_cpu<T: Send>(
    cpu: Option<usize>,
    allowed: &[usize],
    work: impl FnOnce() -> Result<T, UsageError> + Send,
) -> Result<T, UsageError> {
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            if let Some(cpu) = cpu {
                affinity::pin_or_explain(cpu, allowed)?;
            }
            work()
        });
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The read kernel's instruction set: AVX2 when the CPU has it, beyond the caches 256-bit
/// loads are as fast as any, and 512-bit streams reach DRAM 10–20 % slower on Zen 4
/// (docs/DESIGN.md, Bandwidth); else the widest available.
pub(crate) fn read_isa() -> Isa {
    if Isa::Avx2.is_available() {
        Isa::Avx2
    } else {
        Isa::best_available()
    }
}
