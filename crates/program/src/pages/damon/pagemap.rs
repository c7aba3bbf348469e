//! Physical to virtual: the system's RAM ranges from /proc/iomem (a `paddr` kdamond's
//! target) and a process's present pages from /proc/PID/maps and /proc/PID/pagemap, so
//! physical DAMON regions can be attributed to the process's virtual pages.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::sysfs::TriedRegion;
use crate::pages::access::AccessSpan;

/// Bit 63 of a pagemap entry: the page is present in RAM.
const PRESENT: u64 = 1 << 63;
/// Bits 0-54: the page frame number (zero when the reader lacks CAP_SYS_ADMIN).
const PFN_MASK: u64 = (1 << 55) - 1;

/// The top-level "System RAM" ranges of /proc/iomem as `[start, end)`, in address order.
/// Read without root they are all zero, which is said as an error.
pub(crate) fn system_ram(iomem: &str) -> Result<Vec<(u64, u64)>, String> {
    let mut ranges: Vec<(u64, u64)> = iomem
        .lines()
        .filter(|line| !line.starts_with(' '))
        .filter_map(|line| {
            let (range, name) = line.split_once(" : ")?;
            if name.trim() != "System RAM" {
                return None;
            }
            let (start, end) = range.trim().split_once('-')?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            Some((start, end.checked_add(1)?))
        })
        .collect();
    ranges.sort_unstable();
    if ranges.is_empty() {
        return Err("/proc/iomem lists no System RAM".into());
    }
    if ranges.iter().all(|&(start, end)| start == 0 && end == 1) {
        return Err(
            "/proc/iomem shows zero addresses, as it does to a reader without \
                    CAP_SYS_ADMIN; run memscope as root"
                .into(),
        );
    }
    Ok(ranges)
}

/// The address ranges `[start, end)` of /proc/PID/maps.
pub fn mappings(maps: &str) -> Vec<(u64, u64)> {
    maps.lines()
        .filter(|line| !line.ends_with("[vsyscall]"))
        .filter_map(|line| {
            let (start, end) = line.split_whitespace().next()?.split_once('-')?;
            Some((
                u64::from_str_radix(start, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
            ))
        })
        .collect()
}

/// The present pages of pagemap `entries` (8 bytes each, native endian) for the pages
/// from `virt_start` on, as (physical address, virtual address) pairs.
pub(crate) fn present_pages(virt_start: u64, entries: &[u8], page_bytes: u64) -> Vec<(u64, u64)> {
    entries
        .chunks_exact(8)
        .enumerate()
        .filter_map(|(i, bytes)| {
            let entry = entry(bytes);
            let pfn = entry & PFN_MASK;
            (entry & PRESENT != 0 && pfn != 0)
                .then(|| (pfn * page_bytes, virt_start + i as u64 * page_bytes))
        })
        .collect()
}

/// One pagemap entry from its 8 bytes.
fn entry(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_ne_bytes(word)
}

/// Every present page of process `pid` as (physical, virtual), sorted by physical
/// address. `proc_root` is /proc (a fake one in tests).
pub(crate) fn process_pages(
    proc_root: &Path,
    pid: u32,
    page_bytes: u64,
) -> io::Result<Vec<(u64, u64)>> {
    let dir = proc_root.join(pid.to_string());
    let maps = std::fs::read_to_string(dir.join("maps"))?;
    let pagemap = File::open(dir.join("pagemap"))?;
    let mut pages = Vec::new();
    let mut any_present = false;
    for (start, end) in mappings(&maps) {
        let count = (end - start) / page_bytes;
        let mut entries = vec![0u8; (count * 8) as usize];
        let offset = start / page_bytes * 8;
        let read = read_fully_at(&pagemap, &mut entries, offset)?;
        entries.truncate(read - read % 8);
        any_present |= entries
            .chunks_exact(8)
            .any(|bytes| entry(bytes) & PRESENT != 0);
        pages.extend(present_pages(start, &entries, page_bytes));
    }
    if any_present && pages.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "/proc/{pid}/pagemap shows present pages without page frame numbers, as it \
                 does to a reader without CAP_SYS_ADMIN; run memscope as root"
            ),
        ));
    }
    pages.sort_unstable();
    Ok(pages)
}

fn read_fully_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buffer.len() {
        match file.read_at(&mut buffer[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(done)
}

/// The process's pages inside the physical regions, as spans of its virtual memory with
/// the region's `nr_accesses`; virtually adjacent pages of equal value are one span.
/// `pages` are (physical, virtual) sorted by physical address.
pub(crate) fn attribute(
    pid: u32,
    regions: &[TriedRegion],
    pages: &[(u64, u64)],
    page_bytes: u64,
) -> Vec<AccessSpan> {
    let mut spans: Vec<AccessSpan> = Vec::new();
    for region in regions {
        let first = pages.partition_point(|&(phys, _)| phys < region.start);
        for &(phys, virt) in &pages[first..] {
            if phys >= region.end {
                break;
            }
            spans.push(AccessSpan {
                pid,
                start: virt,
                end: virt + page_bytes,
                value: region.nr_accesses as f64,
            });
        }
    }
    spans.sort_by_key(|span| span.start);
    let mut merged: Vec<AccessSpan> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if last.end == span.start && last.value == span.value => last.end = span.end,
            _ => merged.push(span),
        }
    }
    merged
}
