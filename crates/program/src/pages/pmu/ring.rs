//! The mmap'd ring buffer of a perf event, for every sampler (precise sampling, and
//! SPE's records beside its AUX area): one metadata page (`perf_event_mmap_page`)
//! followed by a data area of 2^n pages that the kernel fills with records. The reader
//! loads `data_head` with acquire ordering, copies the complete records between its
//! `data_tail` and the head (a record may wrap around the end of the data area), then
//! stores the new tail with release ordering so the kernel may reuse the space. The
//! metadata page's other fields are read through `header`.

use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::counters::sys::{
    MMAP_DATA_HEAD, MMAP_DATA_OFFSET, MMAP_DATA_SIZE, MMAP_DATA_TAIL, RECORD_HEADER_SIZE,
};

use super::record::record_size;

/// A mapped (or, in tests, borrowed) ring buffer.
pub(crate) struct Ring {
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    /// A power of two.
    data_size: usize,
    /// Whether `base` came from mmap and is unmapped on drop.
    mapped: bool,
    scratch: Vec<u8>,
}

// SAFETY: the mapping is owned by this value alone (the kernel shares it, but only
// through the head/tail protocol); moving it to another thread is sound.
unsafe impl Send for Ring {}

/// What one pass over the ring found besides records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Pass {
    pub records: u64,
    /// Bytes skipped because a header was impossible (size 0 or beyond the head).
    pub corrupt_bytes: u64,
}

/// A fresh shared read-write mapping of `len` bytes of `fd` from byte `offset` (anonymous
/// when `fd` < 0): a ring, or SPE's AUX area after it.
pub(crate) fn map_shared(fd: RawFd, len: usize, offset: usize) -> io::Result<NonNull<u8>> {
    let flags = if fd < 0 {
        libc::MAP_SHARED | libc::MAP_ANONYMOUS
    } else {
        libc::MAP_SHARED
    };
    // SAFETY: a fresh mapping at an address of the kernel's choosing (of a perf event
    // descriptor, or anonymous); the kernel checks the length, and nothing else refers
    // to the range it returns.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            offset as libc::off_t,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(NonNull::new(ptr.cast::<u8>()).expect("mmap returned a non-null address"))
}

/// The system's page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

impl Ring {
    /// Maps the ring of `fd` with `data_pages` (a power of two) data pages.
    pub fn map(fd: RawFd, data_pages: usize) -> io::Result<Ring> {
        let page = page_size();
        let len = (1 + data_pages) * page;
        let base = map_shared(fd, len, 0)?;
        // SAFETY: the mapping is `len` bytes, page-aligned, and lives until drop.
        let mut ring = unsafe { Ring::from_raw(base, len, page) }.map_err(io::Error::other)?;
        ring.mapped = true;
        Ok(ring)
    }

    /// A ring over memory laid out as `perf_event_mmap_page` + data area. The data area
    /// is the one `data_offset`/`data_size` name, or everything after the first
    /// `page` bytes when they are zero (kernels before 4.1).
    ///
    /// # Safety
    /// `base` must be valid for reads and writes of `len` bytes, 8-byte aligned, for
    /// as long as the returned value lives, and not be unmapped by anyone else.
    pub(crate) unsafe fn from_raw(
        base: NonNull<u8>,
        len: usize,
        page: usize,
    ) -> Result<Ring, String> {
        let word = |off: usize| -> u64 {
            // SAFETY: the caller guarantees `len` bytes at `base`; offsets are checked
            // against `len` below before use, and the metadata page is at least 2 KiB.
            unsafe { base.as_ptr().add(off).cast::<u64>().read_volatile() }
        };
        if len < MMAP_DATA_SIZE + 8 {
            return Err(format!(
                "a {len}-byte ring mapping has no room for its header"
            ));
        }
        let (mut offset, mut size) = (
            word(MMAP_DATA_OFFSET) as usize,
            word(MMAP_DATA_SIZE) as usize,
        );
        if offset == 0 || size == 0 {
            offset = page;
            size = len.saturating_sub(page);
        }
        if !size.is_power_of_two() || offset.checked_add(size).is_none_or(|end| end > len) {
            return Err(format!(
                "the ring's data area ({size} bytes at {offset}) is not a power of two \
                 inside the {len}-byte mapping"
            ));
        }
        Ok(Ring {
            base,
            map_len: len,
            data_offset: offset,
            data_size: size,
            mapped: false,
            scratch: Vec::new(),
        })
    }

    /// The 64-bit field at byte `off` of the metadata page, which the kernel writes
    /// concurrently (atomics are the right view of it).
    pub fn header(&self, off: usize) -> &AtomicU64 {
        assert!(
            off.is_multiple_of(8) && off + 8 <= self.data_offset,
            "header field {off}"
        );
        // SAFETY: `off` is 8-byte aligned inside the metadata page (checked above), the
        // memory lives as long as `self`, and the kernel accesses the field atomically.
        unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(off).cast::<u64>()) }
    }

    /// The 32-bit field at byte `off` of the metadata page.
    pub(crate) fn header32(&self, off: usize) -> &AtomicU32 {
        assert!(
            off.is_multiple_of(4) && off + 4 <= self.data_offset,
            "header field {off}"
        );
        // SAFETY: as `header`, for a 4-aligned 32-bit field.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(off).cast::<u32>()) }
    }

    /// The 16-bit field at byte `off` of the metadata page (a volatile read: the kernel
    /// may write it; a caller checks the page's sequence lock around it).
    pub(crate) fn header16(&self, off: usize) -> u16 {
        assert!(
            off.is_multiple_of(2) && off + 2 <= self.data_offset,
            "header field {off}"
        );
        // SAFETY: a 2-aligned field inside the metadata page, which lives as long as self.
        unsafe { self.base.as_ptr().add(off).cast::<u16>().read_volatile() }
    }

    /// The length of the mapping (metadata page and data area): where an AUX area goes.
    pub(crate) fn map_len(&self) -> usize {
        self.map_len
    }

    /// Copies `n` bytes starting at ring position `pos` (wrapping) into `out`.
    fn copy(&self, pos: u64, n: usize, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(n);
        let start = (pos as usize) & (self.data_size - 1);
        let first = n.min(self.data_size - start);
        // SAFETY: both ranges lie inside the data area (start < data_size, first ≤
        // data_size - start, n - first ≤ start since n ≤ data_size); the kernel does not
        // write between the tail and the head, and `out` has room for `n` bytes.
        unsafe {
            let data = self.base.as_ptr().add(self.data_offset);
            std::ptr::copy_nonoverlapping(data.add(start), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(data, out.as_mut_ptr().add(first), n - first);
            out.set_len(n);
        }
    }

    /// Hands every complete record between the tail and the head to `each` (header
    /// included, contiguous even when it wrapped), then releases their space.
    pub(crate) fn read_records(&mut self, mut each: impl FnMut(&[u8])) -> Pass {
        let head = self.header(MMAP_DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.header(MMAP_DATA_TAIL).load(Ordering::Relaxed);
        let mut pass = Pass::default();
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut header = Vec::with_capacity(RECORD_HEADER_SIZE);
        while head.wrapping_sub(tail) >= RECORD_HEADER_SIZE as u64 {
            let avail = head.wrapping_sub(tail);
            self.copy(tail, RECORD_HEADER_SIZE, &mut header);
            let size = record_size(header[..].try_into().expect("8-byte header"));
            if size < RECORD_HEADER_SIZE || size as u64 > avail || size > self.data_size {
                pass.corrupt_bytes += avail;
                tail = head;
                break;
            }
            self.copy(tail, size, &mut scratch);
            each(&scratch);
            pass.records += 1;
            tail = tail.wrapping_add(size as u64);
        }
        self.scratch = scratch;
        self.header(MMAP_DATA_TAIL).store(tail, Ordering::Release);
        pass
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: the range is the one mmap returned to `map`, unmapped only here.
            unsafe {
                libc::munmap(self.base.as_ptr().cast(), self.map_len);
            }
        }
    }
}

#[cfg(test)]
impl Ring {
    /// A ring in anonymous memory laid out as the kernel lays out a real one, unmapped
    /// on drop.
    pub fn anonymous(data_pages: usize) -> Ring {
        let page = page_size();
        let len = (1 + data_pages) * page;
        let base = map_shared(-1, len, 0).expect("anonymous ring");
        // SAFETY: inside the first page of the fresh mapping, 8-aligned.
        unsafe {
            base.as_ptr()
                .add(MMAP_DATA_OFFSET)
                .cast::<u64>()
                .write(page as u64);
            base.as_ptr()
                .add(MMAP_DATA_SIZE)
                .cast::<u64>()
                .write((data_pages * page) as u64);
        }
        // SAFETY: the mapping is `len` bytes, page-aligned, and lives until drop.
        let mut ring = unsafe { Ring::from_raw(base, len, page) }.expect("anonymous ring layout");
        ring.mapped = true;
        ring
    }

    /// Writes `bytes` at ring position `pos` (wrapping), as the kernel would.
    pub(crate) fn write_data(&self, pos: usize, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let at = self.data_offset + ((pos + i) & (self.data_size - 1));
            // SAFETY: `at` lies inside the data area of the mapping.
            unsafe { *self.base.as_ptr().add(at) = *b };
        }
    }
}

#[cfg(test)]
pub(crate) mod fake {
    use super::*;

    /// Memory shaped like a mapped ring: one 4 KiB metadata page and a data area.
    pub(crate) struct FakeRing {
        pub words: Vec<u64>,
        pub data_size: usize,
    }

    pub const PAGE: usize = 4096;

    impl FakeRing {
        pub fn new(data_size: usize) -> FakeRing {
            let mut f = FakeRing {
                words: vec![0; (PAGE + data_size) / 8],
                data_size,
            };
            f.words[MMAP_DATA_OFFSET / 8] = PAGE as u64;
            f.words[MMAP_DATA_SIZE / 8] = data_size as u64;
            f
        }

        fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: a u64 buffer viewed as its bytes (u8 has no alignment needs).
            unsafe {
                std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast(), self.words.len() * 8)
            }
        }

        /// Writes `records` from ring position `start` (wrapping), as the kernel would,
        /// and sets the tail to `start` and the head after them.
        pub fn fill(&mut self, start: u64, records: &[Vec<u8>]) {
            let size = self.data_size;
            let mut pos = start;
            for r in records {
                for &b in r {
                    let at = PAGE + (pos as usize & (size - 1));
                    self.bytes()[at] = b;
                    pos += 1;
                }
            }
            self.words[MMAP_DATA_TAIL / 8] = start;
            self.words[MMAP_DATA_HEAD / 8] = pos;
        }

        pub fn tail(&self) -> u64 {
            self.words[MMAP_DATA_TAIL / 8]
        }

        pub fn ring(&mut self) -> Ring {
            let len = self.words.len() * 8;
            let base = NonNull::new(self.words.as_mut_ptr().cast::<u8>()).expect("vec pointer");
            // SAFETY: the buffer is `len` bytes, 8-byte aligned, and outlives the ring in
            // every test (the ring is dropped before the FakeRing).
            unsafe { Ring::from_raw(base, len, PAGE) }.expect("fake ring layout")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakeRing;
    use super::*;
    use crate::pages::pmu::record::build::record;

    #[test]
    fn records_wrapping_the_end_come_out_whole() {
        let mut f = FakeRing::new(4096);
        let recs: Vec<Vec<u8>> = (0..5u64)
            .map(|i| record(9, &[i, i * 10, i * 100]))
            .collect();
        // 5 × 32 bytes from 40 bytes before the end: the second record wraps.
        let start = 3 * 4096 + 4096 - 40;
        f.fill(start, &recs);
        let mut ring = f.ring();
        let mut seen = Vec::new();
        let pass = ring.read_records(|r| seen.push(r.to_vec()));
        drop(ring);
        assert_eq!(pass.records, 5);
        assert_eq!(pass.corrupt_bytes, 0);
        assert_eq!(seen, recs);
        assert_eq!(f.tail(), start + 5 * 32);
        // Nothing new: a second pass reads nothing and leaves the tail.
        let mut ring = f.ring();
        assert_eq!(ring.read_records(|_| panic!("no record")).records, 0);
        drop(ring);
        assert_eq!(f.tail(), start + 160);
    }

    #[test]
    fn a_header_straddling_the_end_is_reassembled() {
        let mut f = FakeRing::new(4096);
        // A 12-byte odd start puts the header across the wrap point.
        let recs = vec![record(2, &[1, 99])];
        f.fill(4096 - 4, &recs);
        let mut ring = f.ring();
        let mut seen = Vec::new();
        ring.read_records(|r| seen.push(r.to_vec()));
        assert_eq!(seen, recs);
    }

    #[test]
    fn an_impossible_header_skips_to_the_head() {
        let mut f = FakeRing::new(4096);
        let mut bad = record(9, &[1]);
        bad[6] = 0xff; // size 0xff10 > what is available
        f.fill(64, &[bad]);
        let mut ring = f.ring();
        let pass = ring.read_records(|_| panic!("no record"));
        drop(ring);
        assert_eq!(pass.corrupt_bytes, 16);
        assert_eq!(f.tail(), 80);
    }

    #[test]
    fn layout_checks() {
        let mut words = vec![0u64; 512];
        words[MMAP_DATA_OFFSET / 8] = 4096;
        words[MMAP_DATA_SIZE / 8] = 3000;
        let base = NonNull::new(words.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: the buffer is 4096 bytes and outlives the call.
        assert!(unsafe { Ring::from_raw(base, 4096, 4096) }.is_err());
    }
}
