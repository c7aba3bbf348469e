//! One perf event's mapped buffers (linux/perf_event.h): the ring (a header page, the
//! `perf_event_mmap_page`, then 2^n data pages of records) and the AUX area the SPE
//! driver writes its packets into. Records are read from `data_tail` to `data_head`;
//! AUX bytes are read where PERF_RECORD_AUX records say, and released by advancing
//! `aux_tail`. Both areas are mapped writable, so the kernel never overwrites what has
//! not been released (it drops and flags instead).

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

// Byte offsets in `struct perf_event_mmap_page`.
pub(super) const LOCK: usize = 8;
pub(super) const CAPABILITIES: usize = 40;
pub(super) const TIME_SHIFT: usize = 50;
pub(super) const TIME_MULT: usize = 52;
pub(super) const TIME_ZERO: usize = 64;
pub(super) const TIME_CYCLES: usize = 80;
pub(super) const TIME_MASK: usize = 88;
pub(super) const DATA_HEAD: usize = 1024;
pub(super) const DATA_TAIL: usize = 1032;
pub(super) const DATA_OFFSET: usize = 1040;
pub(super) const DATA_SIZE: usize = 1048;
pub(super) const AUX_TAIL: usize = 1064;
pub(super) const AUX_OFFSET: usize = 1072;
pub(super) const AUX_SIZE: usize = 1080;

const CAP_USER_TIME_ZERO: u64 = 1 << 4;
const CAP_USER_TIME_SHORT: u64 = 1 << 5;

/// `perf_event_header.type` values read here.
pub const PERF_RECORD_LOST: u32 = 2;
pub const PERF_RECORD_AUX: u32 = 11;
/// PERF_RECORD_AUX flags: the AUX buffer was full and data was dropped; the hardware
/// dropped samples that collided.
pub const PERF_AUX_FLAG_TRUNCATED: u64 = 0x01;
pub const PERF_AUX_FLAG_COLLISION: u64 = 0x08;

/// The kernel's conversion from the hardware timer (SPE timestamps) to perf's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeConv {
    pub shift: u16,
    pub mult: u32,
    pub zero: u64,
    /// `(time_cycles, time_mask)` when the counter is narrower than 64 bits.
    pub short: Option<(u64, u64)>,
}

impl TimeConv {
    /// Nanoseconds in perf's clock for the count `cycles` (as perf's `tsc_to_perf_time`).
    pub fn to_ns(self, cycles: u64) -> u64 {
        let cycles = match self.short {
            Some((base, mask)) => base.wrapping_add(cycles.wrapping_sub(base) & mask),
            None => cycles,
        };
        let shift = u32::from(self.shift).min(63);
        let quot = cycles >> shift;
        let rem = cycles & ((1u64 << shift) - 1);
        let mult = u64::from(self.mult);
        self.zero
            .wrapping_add(quot.wrapping_mul(mult))
            .wrapping_add(rem.wrapping_mul(mult) >> shift)
    }
}

/// A mapped ring and AUX area. Unmapped on drop; the descriptor is the caller's.
pub struct Ring {
    page: usize,
    base: *mut u8,
    base_len: usize,
    aux: *mut u8,
    aux_len: usize,
}

// SAFETY: the mappings are plain shared memory owned by this value; nothing ties them to
// the thread that made them.
unsafe impl Send for Ring {}

fn map(fd: RawFd, len: usize, offset: usize) -> io::Result<*mut u8> {
    let (flags, fd) = if fd < 0 {
        (libc::MAP_SHARED | libc::MAP_ANONYMOUS, -1)
    } else {
        (libc::MAP_SHARED, fd)
    };
    // SAFETY: a fresh mapping at an address of the kernel's choosing; the arguments are
    // checked by the kernel and the result is checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            offset as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p.cast())
}

fn unmap(p: *mut u8, len: usize) {
    // SAFETY: `p` is a mapping of `len` bytes this module made and nothing else uses.
    unsafe { libc::munmap(p.cast(), len) };
}

impl Ring {
    /// Maps `1 + data_pages` pages of the event `fd` (its header and records), then an
    /// AUX area of `aux_pages` pages after them. Both counts must be powers of two.
    pub fn map(fd: RawFd, page: usize, data_pages: usize, aux_pages: usize) -> io::Result<Ring> {
        let base_len = (1 + data_pages) * page;
        let base = map(fd, base_len, 0)?;
        let aux_len = aux_pages * page;
        let mut ring = Ring {
            page,
            base,
            base_len,
            aux: std::ptr::null_mut(),
            aux_len: 0,
        };
        ring.word(AUX_OFFSET)
            .store(base_len as u64, Ordering::Relaxed);
        ring.word(AUX_SIZE).store(aux_len as u64, Ordering::Relaxed);
        ring.aux = map(fd, aux_len, base_len)?;
        ring.aux_len = aux_len;
        Ok(ring)
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset.is_multiple_of(8) && offset + 8 <= 4096);
        // SAFETY: the header page is mapped, page aligned and at least 4 KiB long, the
        // offset is 8-aligned inside it, and the kernel writes it concurrently: atomics
        // are the right view of it.
        unsafe { &*(self.base.add(offset) as *const AtomicU64) }
    }

    fn word32(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: as `word`, for a 4-aligned 32-bit field.
        unsafe { &*(self.base.add(offset) as *const AtomicU32) }
    }

    /// The AUX area's size in bytes.
    pub fn aux_len(&self) -> usize {
        self.aux_len
    }

    /// The data area: where it starts in the mapping and its size (the kernel fills both
    /// in; older kernels leave them 0, meaning one page in and the rest of the mapping).
    fn data_area(&self) -> (usize, usize) {
        let offset = self.word(DATA_OFFSET).load(Ordering::Relaxed) as usize;
        let size = self.word(DATA_SIZE).load(Ordering::Relaxed) as usize;
        if size == 0 || offset == 0 || offset + size > self.base_len {
            return (self.page, self.base_len - self.page);
        }
        (offset, size)
    }

    /// Copies `len` bytes at ring position `pos` (wrapping) of the `size` bytes at `base`
    /// into `out`.
    fn copy_wrapped(base: *const u8, size: usize, pos: u64, len: usize, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(len);
        let mut pos = (pos % size as u64) as usize;
        let mut left = len.min(size);
        while left > 0 {
            let n = left.min(size - pos);
            // SAFETY: `pos + n <= size` and `[base, base + size)` is mapped.
            let chunk = unsafe { std::slice::from_raw_parts(base.add(pos), n) };
            out.extend_from_slice(chunk);
            left -= n;
            pos = 0;
        }
    }

    /// Calls `f(type, record)` for each record from `data_tail` to `data_head`, each
    /// record whole (header included) even when it wraps, then releases them.
    pub fn read_records(&self, scratch: &mut Vec<u8>, mut f: impl FnMut(u32, &[u8])) {
        let (offset, size) = self.data_area();
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        // SAFETY: `offset + size` lies inside the mapping (checked by `data_area`).
        let data = unsafe { self.base.add(offset) };
        while head.wrapping_sub(tail) >= 8 {
            Self::copy_wrapped(data, size, tail, 8, scratch);
            let kind = u32::from_ne_bytes([scratch[0], scratch[1], scratch[2], scratch[3]]);
            let len = u64::from(u16::from_ne_bytes([scratch[6], scratch[7]]));
            if len < 8 || head.wrapping_sub(tail) < len {
                // A record the kernel has not finished, or a corrupt size: drop the rest.
                tail = head;
                break;
            }
            Self::copy_wrapped(data, size, tail, len as usize, scratch);
            f(kind, scratch);
            tail = tail.wrapping_add(len);
        }
        self.word(DATA_TAIL).store(tail, Ordering::Release);
    }

    /// Copies `size` bytes at AUX position `offset` (wrapping) into `out`.
    pub fn copy_aux(&self, offset: u64, size: u64, out: &mut Vec<u8>) {
        Self::copy_wrapped(self.aux, self.aux_len, offset, size as usize, out);
    }

    /// Releases the AUX area up to `tail` (never moving it back).
    pub fn release_aux(&self, tail: u64) {
        let word = self.word(AUX_TAIL);
        if tail > word.load(Ordering::Relaxed) {
            word.store(tail, Ordering::Release);
        }
    }

    /// The timer conversion the kernel publishes, when it does (`cap_user_time_zero`).
    pub fn time_conv(&self) -> Option<TimeConv> {
        loop {
            let seq = self.word32(LOCK).load(Ordering::Acquire);
            let caps = self.word(CAPABILITIES).load(Ordering::Relaxed);
            // SAFETY: 2- and 4-aligned fields inside the mapped header page; volatile as
            // the kernel may write them (the sequence check below catches that).
            let (shift, mult) = unsafe {
                (
                    std::ptr::read_volatile(self.base.add(TIME_SHIFT) as *const u16),
                    std::ptr::read_volatile(self.base.add(TIME_MULT) as *const u32),
                )
            };
            let conv = TimeConv {
                shift,
                mult,
                zero: self.word(TIME_ZERO).load(Ordering::Relaxed),
                short: (caps & CAP_USER_TIME_SHORT != 0).then(|| {
                    (
                        self.word(TIME_CYCLES).load(Ordering::Relaxed),
                        self.word(TIME_MASK).load(Ordering::Relaxed),
                    )
                }),
            };
            fence(Ordering::Acquire);
            if self.word32(LOCK).load(Ordering::Relaxed) == seq {
                return (caps & CAP_USER_TIME_ZERO != 0).then_some(conv);
            }
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        if !self.aux.is_null() {
            unmap(self.aux, self.aux_len);
        }
        unmap(self.base, self.base_len);
    }
}

#[cfg(test)]
mod test_support {
    use super::*;

    impl Ring {
        /// A ring in anonymous memory laid out as the kernel lays out a real one, for tests.
        pub fn anonymous(page: usize, data_pages: usize, aux_pages: usize) -> Ring {
            let base_len = (1 + data_pages) * page;
            let aux_len = aux_pages * page;
            let ring = Ring {
                page,
                base: map(-1, base_len, 0).expect("anonymous ring"),
                base_len,
                aux: map(-1, aux_len, 0).expect("anonymous aux"),
                aux_len,
            };
            ring.word(DATA_OFFSET).store(page as u64, Ordering::Relaxed);
            ring.word(DATA_SIZE)
                .store((data_pages * page) as u64, Ordering::Relaxed);
            ring
        }

        /// Test access to the header fields the kernel writes.
        pub fn kernel_writes(&self, offset: usize, value: u64) {
            self.word(offset).store(value, Ordering::Release);
        }

        /// Test access to the data and AUX areas, as the kernel writes them.
        pub fn kernel_writes_bytes(&self, aux: bool, pos: usize, bytes: &[u8]) {
            let (base, size) = if aux {
                (self.aux, self.aux_len)
            } else {
                let (offset, size) = self.data_area();
                // SAFETY: inside the mapping.
                (unsafe { self.base.add(offset) }, size)
            };
            for (i, b) in bytes.iter().enumerate() {
                // SAFETY: the index is reduced modulo the mapped area's size.
                unsafe { *base.add((pos + i) % size) = *b };
            }
        }

        pub fn header(&self, offset: usize) -> u64 {
            self.word(offset).load(Ordering::Acquire)
        }
    }
}
