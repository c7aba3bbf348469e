//! The timed loops of file reading: a whole file read sequentially in blocks (buffered or
//! `O_DIRECT`, the caller opens the descriptor), a mapped file touched one cache line at
//! a time, and random block reads by `pread` one at a time or through `io_uring` with N
//! requests in flight, each request's latency recorded. Buffers and offsets are prepared
//! by the caller; nothing here allocates inside a timed loop except the kernel's own
//! io_uring ring, set up before the clock starts.

use std::io;
use std::os::fd::RawFd;
use std::time::Instant;

/// A buffer aligned for `O_DIRECT` (4 KiB, which every block device accepts).
pub(crate) struct AlignedBuffer {
    ptr: *mut u8,
    len: usize,
}

/// The alignment of `AlignedBuffer`.
pub(crate) const DIRECT_ALIGN: usize = 4096;

impl AlignedBuffer {
    /// A zeroed buffer of `len` bytes (rounded up to the alignment).
    pub fn new(len: usize) -> AlignedBuffer {
        let len = len.max(1).div_ceil(DIRECT_ALIGN) * DIRECT_ALIGN;
        let layout = std::alloc::Layout::from_size_align(len, DIRECT_ALIGN).expect("valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuffer { ptr, len }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the allocation is `len` bytes, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len, DIRECT_ALIGN).expect("valid");
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) };
    }
}

// SAFETY: the buffer is plain memory owned by one value.
unsafe impl Send for AlignedBuffer {}

/// One sequential pass over a file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SequentialPass {
    pub elapsed_ns: f64,
    pub bytes: u64,
    /// Read calls made (the last one may be short).
    pub calls: u64,
}

/// Reads `bytes` from offset 0 in `block`-byte preads into `buffer` (which must hold a
/// block); stops early at end of file.
pub(crate) fn read_sequential(
    fd: RawFd,
    buffer: &mut [u8],
    block: usize,
    bytes: u64,
) -> io::Result<SequentialPass> {
    let block = block.min(buffer.len());
    let mut offset = 0u64;
    let mut calls = 0u64;
    let start = Instant::now();
    while offset < bytes {
        // The last read asks for the rest rounded up to the alignment O_DIRECT needs.
        let rest = (bytes - offset).next_multiple_of(DIRECT_ALIGN as u64);
        let want = block.min(rest as usize);
        // SAFETY: reading into our own buffer of at least `want` bytes.
        let n = unsafe { libc::pread(fd, buffer.as_mut_ptr().cast(), want, offset as i64) };
        calls += 1;
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        offset += n as u64;
    }
    Ok(SequentialPass {
        elapsed_ns: start.elapsed().as_nanos() as f64,
        bytes: offset.min(bytes),
        calls,
    })
}

/// Touches a mapped region one 8-byte word per 64-byte line (faulting in its pages);
/// returns the elapsed time and a checksum the caller must use.
pub(crate) fn touch_mapped(region: &[u8]) -> (f64, u64) {
    let start = Instant::now();
    let mut sum = 0u64;
    let mut i = 0;
    while i + 8 <= region.len() {
        // SAFETY: i + 8 ≤ len; unaligned reads are allowed by read_unaligned.
        sum = sum
            .wrapping_add(unsafe { std::ptr::read_volatile(region.as_ptr().add(i).cast::<u64>()) });
        i += 64;
    }
    (start.elapsed().as_nanos() as f64, sum)
}

/// Random `block`-byte preads at `offsets`, one at a time; each read's latency in ns.
pub(crate) fn random_pread(
    fd: RawFd,
    buffer: &mut [u8],
    block: usize,
    offsets: &[u64],
    latencies: &mut Vec<u64>,
) -> io::Result<f64> {
    latencies.clear();
    latencies.reserve(offsets.len());
    let start = Instant::now();
    for &offset in offsets {
        let t = Instant::now();
        // SAFETY: reading into our own buffer of at least `block` bytes.
        let n = unsafe { libc::pread(fd, buffer.as_mut_ptr().cast(), block, offset as i64) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        latencies.push(t.elapsed().as_nanos() as u64);
    }
    Ok(start.elapsed().as_nanos() as f64)
}

/// Random `block`-byte reads at `offsets` through io_uring with `depth` requests kept in
/// flight; each request's latency (submission to completion) in ns, and the total time.
/// `buffers` holds `depth` buffers of at least `block` bytes.
///
/// Each request is submitted by its own `io_uring_enter` as soon as its slot is free, as
/// fio does by default (`iodepth_batch_submit=1`) and a server issuing reads as they come
/// does. Refilling every free slot and submitting them in one call is another workload:
/// on a virtio disk it was seen up to 2× faster or slower than this, by the host's load.
pub(crate) fn random_uring(
    fd: RawFd,
    buffers: &mut [AlignedBuffer],
    block: usize,
    offsets: &[u64],
    depth: usize,
    latencies: &mut Vec<u64>,
) -> io::Result<f64> {
    use io_uring::{opcode, types, IoUring};
    let depth = depth.max(1).min(buffers.len());
    let entries = depth.next_power_of_two() as u32;
    // One thread submits and reaps: the kernel may run completion work when we wait
    // instead of interrupting us (as fio sets up its rings); older kernels refuse the
    // flags, and a plain ring does the same work.
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
        .or_else(|_| IoUring::new(entries))?;
    latencies.clear();
    latencies.reserve(offsets.len());
    let mut submitted_at = vec![Instant::now(); depth];
    let mut next = 0usize;
    let mut in_flight = 0usize;
    let mut free: Vec<usize> = (0..depth).collect();
    let start = Instant::now();
    while latencies.len() < offsets.len() {
        while in_flight < depth && next < offsets.len() {
            let slot = free.pop().expect("a free slot while below depth");
            let buffer = buffers[slot].as_mut_slice();
            let entry = opcode::Read::new(types::Fd(fd), buffer.as_mut_ptr(), block as u32)
                .offset(offsets[next])
                .build()
                .user_data(slot as u64);
            // SAFETY: the buffer outlives the request (it is only reused after its
            // completion is reaped below).
            unsafe {
                ring.submission()
                    .push(&entry)
                    .map_err(|_| io::Error::other("io_uring submission queue full"))?;
            }
            submitted_at[slot] = Instant::now();
            next += 1;
            in_flight += 1;
            ring.submit()?;
        }
        // Everything is submitted already: this only waits.
        ring.submit_and_wait(1)?;
        // Reaped in place: nothing is allocated inside the timed loop (`latencies` and
        // `free` have their capacity already).
        for completion in ring.completion() {
            if completion.result() < 0 {
                return Err(io::Error::from_raw_os_error(-completion.result()));
            }
            let slot = completion.user_data() as usize;
            latencies.push(submitted_at[slot].elapsed().as_nanos() as u64);
            free.push(slot);
            in_flight -= 1;
        }
    }
    Ok(start.elapsed().as_nanos() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    fn file_of(bytes: usize) -> std::fs::File {
        let mut f = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..bytes).map(|i| (i * 7 % 251) as u8).collect();
        f.write_all(&data).unwrap();
        f
    }

    #[test]
    fn a_sequential_pass_reads_the_whole_file() {
        let f = file_of(100_000);
        let mut buffer = AlignedBuffer::new(16384);
        let pass = read_sequential(f.as_raw_fd(), buffer.as_mut_slice(), 16384, 100_000).unwrap();
        assert_eq!(pass.bytes, 100_000);
        assert_eq!(pass.calls, 7); // 6 full blocks and a short one
        assert!(pass.elapsed_ns > 0.0);
    }

    #[test]
    fn random_reads_record_one_latency_each_by_pread_and_io_uring() {
        let f = file_of(1 << 20);
        let offsets: Vec<u64> = (0..64).map(|i| (i * 37 % 256) * 4096).collect();
        let mut buffer = AlignedBuffer::new(4096);
        let mut latencies = Vec::new();
        random_pread(
            f.as_raw_fd(),
            buffer.as_mut_slice(),
            4096,
            &offsets,
            &mut latencies,
        )
        .unwrap();
        assert_eq!(latencies.len(), 64);
        let mut buffers: Vec<AlignedBuffer> = (0..8).map(|_| AlignedBuffer::new(4096)).collect();
        match random_uring(
            f.as_raw_fd(),
            &mut buffers,
            4096,
            &offsets,
            8,
            &mut latencies,
        ) {
            Ok(total) => {
                assert_eq!(latencies.len(), 64);
                assert!(total > 0.0);
            }
            // A kernel without io_uring (or a seccomp filter) refuses the ring.
            Err(e) => eprintln!("io_uring unavailable here: {e}"),
        }
    }

    #[test]
    fn touching_a_region_reads_one_word_per_line() {
        let data = vec![1u8; 640];
        let (_, sum) = touch_mapped(&data);
        assert_eq!(sum, 10 * 0x0101_0101_0101_0101);
    }
}
