//! SPE's mapped buffers (linux/perf_event.h): the event's record ring
//! (`pmu::ring::Ring`, shared with the other samplers) and the AUX area the SPE driver
//! writes its packets into, mapped after it. AUX bytes are read where PERF_RECORD_AUX
//! records say, and released by advancing `aux_tail`. Both areas are mapped writable, so
//! the kernel never overwrites what has not been released (it drops and flags instead).
//! The metadata page also publishes the conversion from SPE's timer to perf's clock.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, Ordering};

use super::super::ring::{map_shared, Ring as RecordRing};
#[cfg(test)]
pub(super) use crate::counters::sys::{MMAP_DATA_HEAD as DATA_HEAD, MMAP_DATA_TAIL as DATA_TAIL};

// Byte offsets in `struct perf_event_mmap_page`.
pub(super) const LOCK: usize = 8;
pub(super) const CAPABILITIES: usize = 40;
pub(super) const TIME_SHIFT: usize = 50;
pub(super) const TIME_MULT: usize = 52;
pub(super) const TIME_ZERO: usize = 64;
pub(super) const TIME_CYCLES: usize = 80;
pub(super) const TIME_MASK: usize = 88;
pub(super) const AUX_TAIL: usize = 1064;
pub(super) const AUX_OFFSET: usize = 1072;
pub(super) const AUX_SIZE: usize = 1080;

const CAP_USER_TIME_ZERO: u64 = 1 << 4;
const CAP_USER_TIME_SHORT: u64 = 1 << 5;

/// `perf_event_header.type` values read here.
pub(crate) const PERF_RECORD_LOST: u32 = 2;
pub(crate) const PERF_RECORD_AUX: u32 = 11;
/// PERF_RECORD_AUX flags: the AUX buffer was full and data was dropped; the hardware
/// dropped samples that collided.
pub(crate) const PERF_AUX_FLAG_TRUNCATED: u64 = 0x01;
pub(crate) const PERF_AUX_FLAG_COLLISION: u64 = 0x08;

/// The kernel's conversion from the hardware timer (SPE timestamps) to perf's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimeConv {
    pub shift: u16,
    pub mult: u32,
    pub zero: u64,
    /// `(time_cycles, time_mask)` when the counter is narrower than 64 bits.
    pub short: Option<(u64, u64)>,
}

impl TimeConv {
    /// Nanoseconds in perf's clock for the count `cycles` (as perf's `tsc_to_perf_time`).
    pub(crate) fn to_ns(self, cycles: u64) -> u64 {
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

/// A mapped record ring and AUX area. Unmapped on drop; the descriptor is the caller's.
pub(crate) struct Ring {
    records: RecordRing,
    aux: *mut u8,
    aux_len: usize,
}

// SAFETY: the mappings are plain shared memory owned by this value; nothing ties them to
// the thread that made them.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the event `fd`'s record ring (`1 + data_pages` pages), then an AUX area of
    /// `aux_pages` pages of `page` bytes after it. Both counts must be powers of two.
    pub fn map(fd: RawFd, page: usize, data_pages: usize, aux_pages: usize) -> io::Result<Ring> {
        let records = RecordRing::map(fd, data_pages)?;
        let aux_len = aux_pages * page;
        records
            .header(AUX_OFFSET)
            .store(records.map_len() as u64, Ordering::Relaxed);
        records
            .header(AUX_SIZE)
            .store(aux_len as u64, Ordering::Relaxed);
        let aux = map_shared(fd, aux_len, records.map_len())?.as_ptr();
        Ok(Ring {
            records,
            aux,
            aux_len,
        })
    }

    /// The AUX area's size in bytes.
    pub(crate) fn aux_len(&self) -> usize {
        self.aux_len
    }

    /// Calls `f(type, record)` for each record from `data_tail` to `data_head`, each
    /// record whole (header included) even when it wraps, then releases them.
    pub(crate) fn read_records(&mut self, mut f: impl FnMut(u32, &[u8])) {
        self.records.read_records(|record| {
            let kind = u32::from_ne_bytes([record[0], record[1], record[2], record[3]]);
            f(kind, record)
        });
    }

    /// Copies `size` bytes at AUX position `offset` (wrapping) into `out`.
    pub(crate) fn copy_aux(&self, offset: u64, size: u64, out: &mut Vec<u8>) {
        out.clear();
        let size = (size as usize).min(self.aux_len);
        out.reserve(size);
        let mut pos = (offset % self.aux_len as u64) as usize;
        let mut left = size;
        while left > 0 {
            let n = left.min(self.aux_len - pos);
            // SAFETY: `pos + n <= aux_len` and the AUX area is mapped for `aux_len` bytes.
            let chunk = unsafe { std::slice::from_raw_parts(self.aux.add(pos), n) };
            out.extend_from_slice(chunk);
            left -= n;
            pos = 0;
        }
    }

    /// Releases the AUX area up to `tail` (never moving it back).
    pub(crate) fn release_aux(&self, tail: u64) {
        let word = self.records.header(AUX_TAIL);
        if tail > word.load(Ordering::Relaxed) {
            word.store(tail, Ordering::Release);
        }
    }

    /// The timer conversion the kernel publishes, when it does (`cap_user_time_zero`).
    pub(crate) fn time_conv(&self) -> Option<TimeConv> {
        let header = &self.records;
        loop {
            let seq = header.header32(LOCK).load(Ordering::Acquire);
            let caps = header.header(CAPABILITIES).load(Ordering::Relaxed);
            let conv = TimeConv {
                shift: header.header16(TIME_SHIFT),
                mult: header.header32(TIME_MULT).load(Ordering::Relaxed),
                zero: header.header(TIME_ZERO).load(Ordering::Relaxed),
                short: (caps & CAP_USER_TIME_SHORT != 0).then(|| {
                    (
                        header.header(TIME_CYCLES).load(Ordering::Relaxed),
                        header.header(TIME_MASK).load(Ordering::Relaxed),
                    )
                }),
            };
            fence(Ordering::Acquire);
            if header.header32(LOCK).load(Ordering::Relaxed) == seq {
                return (caps & CAP_USER_TIME_ZERO != 0).then_some(conv);
            }
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        if !self.aux.is_null() {
            // SAFETY: the AUX mapping of `aux_len` bytes this value made; the record ring
            // unmaps itself.
            unsafe { libc::munmap(self.aux.cast(), self.aux_len) };
        }
    }
}

#[cfg(test)]
mod test_support {
    use super::*;

    impl Ring {
        /// A ring in anonymous memory laid out as the kernel lays out a real one, for tests.
        pub fn anonymous(page: usize, data_pages: usize, aux_pages: usize) -> Ring {
            assert_eq!(
                page,
                super::super::super::ring::page_size(),
                "the system's page"
            );
            let aux_len = aux_pages * page;
            Ring {
                records: RecordRing::anonymous(data_pages),
                aux: map_shared(-1, aux_len, 0).expect("anonymous aux").as_ptr(),
                aux_len,
            }
        }

        /// Test access to the header fields the kernel writes.
        pub(crate) fn kernel_writes(&self, offset: usize, value: u64) {
            self.records.header(offset).store(value, Ordering::Release);
        }

        /// Test access to the data and AUX areas, as the kernel writes them.
        pub(crate) fn kernel_writes_bytes(&self, aux: bool, pos: usize, bytes: &[u8]) {
            if !aux {
                return self.records.write_data(pos, bytes);
            }
            for (i, b) in bytes.iter().enumerate() {
                // SAFETY: the index is reduced modulo the AUX area's size.
                unsafe { *self.aux.add((pos + i) % self.aux_len) = *b };
            }
        }

        pub fn header(&self, offset: usize) -> u64 {
            self.records.header(offset).load(Ordering::Acquire)
        }
    }
}
