//! The parsers: tried_regions directories, /proc/iomem, pagemap entries, and the
//! attribution of physical regions to virtual pages.

use super::super::pagemap::{attribute, present_pages, system_ram};
use super::super::sysfs::{read_tried_regions, TriedRegion};
use super::*;

#[test]
fn tried_regions_are_read_in_address_order() {
    let fake = Fake::new(0);
    let dir = "t/tried_regions";
    put(&fake.admin(), &format!("{dir}/total_bytes"), "12288");
    for (i, start, nr, age) in [
        (0, 0x1000u64, 3u64, 7u64),
        (1, 0x3000, 0, 1),
        (10, 0x2000, 9, 2),
    ] {
        put(
            &fake.admin(),
            &format!("{dir}/{i}/start"),
            &start.to_string(),
        );
        put(
            &fake.admin(),
            &format!("{dir}/{i}/end"),
            &(start + 0x1000).to_string(),
        );
        put(
            &fake.admin(),
            &format!("{dir}/{i}/nr_accesses"),
            &nr.to_string(),
        );
        put(&fake.admin(), &format!("{dir}/{i}/age"), &age.to_string());
    }
    let regions = read_tried_regions(&fake.sysfs(), dir).unwrap();
    let starts: Vec<u64> = regions.iter().map(|r| r.start).collect();
    assert_eq!(starts, vec![0x1000, 0x2000, 0x3000]);
    assert_eq!(
        regions[1],
        TriedRegion {
            start: 0x2000,
            end: 0x3000,
            nr_accesses: 9,
            age: 2
        }
    );
}

#[test]
fn system_ram_is_the_top_level_ranges_end_exclusive() {
    assert_eq!(
        system_ram(IOMEM).unwrap(),
        vec![
            (0x1000, 0x9fc00),
            (0x100000, 0xbffe0000),
            (0x1_0000_0000, 0x2_4000_0000)
        ]
    );
    let hidden = "00000000-00000000 : System RAM\n";
    assert!(system_ram(hidden).unwrap_err().contains("CAP_SYS_ADMIN"));
}

#[test]
fn pagemap_entries_give_present_pages_with_their_frames() {
    let present = 1u64 << 63;
    let bytes = entries(&[present | 0x10, 0x20, present, present | (1 << 61) | 0x11]);
    assert_eq!(
        present_pages(0x7000_0000, &bytes, 4096),
        vec![(0x10_000, 0x7000_0000), (0x11_000, 0x7000_3000)]
    );
}

#[test]
fn physical_regions_are_attributed_to_the_processes_virtual_pages() {
    let present = 1u64 << 63;
    // Virtual pages 0x40000000.. map to frames 0x100, 0x101, 0x500, 0x102.
    let bytes = entries(&[
        present | 0x100,
        present | 0x101,
        present | 0x500,
        present | 0x102,
    ]);
    let mut pages = present_pages(0x4000_0000, &bytes, 4096);
    pages.sort_unstable();
    let regions = [
        TriedRegion {
            start: 0x100_000,
            end: 0x102_000,
            nr_accesses: 7,
            age: 0,
        },
        TriedRegion {
            start: 0x102_000,
            end: 0x200_000,
            nr_accesses: 2,
            age: 0,
        },
        TriedRegion {
            start: 0x400_000,
            end: 0x600_000,
            nr_accesses: 7,
            age: 3,
        },
    ];
    let spans = attribute(PID, &regions, &pages, 4096);
    assert_eq!(
        spans,
        vec![
            AccessSpan {
                pid: PID,
                start: 0x4000_0000,
                end: 0x4000_3000,
                value: 7.0
            },
            AccessSpan {
                pid: PID,
                start: 0x4000_3000,
                end: 0x4000_4000,
                value: 2.0
            },
        ]
    );
}

#[test]
fn this_process_pages_and_the_ram_are_read_from_the_real_proc() {
    // Read only. Without root the frames and addresses are hidden, which is an error.
    let pid = std::process::id();
    let pages = super::super::pagemap::process_pages(Path::new("/proc"), pid, page_bytes());
    let ram = system_ram(&fs::read_to_string("/proc/iomem").unwrap());
    if !is_root() {
        assert!(ram.is_err());
        return;
    }
    let pages = pages.unwrap();
    assert!(!pages.is_empty());
    assert!(pages.windows(2).all(|p| p[0].0 <= p[1].0));
    let ram = ram.unwrap();
    // Every frame of this process is in System RAM.
    assert!(pages
        .iter()
        .all(|&(phys, _)| ram.iter().any(|&(start, end)| (start..end).contains(&phys))));
    eprintln!(
        "{} present pages of this process, {} System RAM range(s)",
        pages.len(),
        ram.len()
    );
}
