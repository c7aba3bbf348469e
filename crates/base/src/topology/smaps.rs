//! What /proc/PID/smaps says of each mapping (VMA): its range, permissions and name, and
//! its resident, referenced, anonymous and huge-page memory. Read by the arena (THP
//! obtained), `pages` (accessed bits, huge pages per region) and `footprint` (--pid).

/// One mapping (VMA) of /proc/PID/smaps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// "rw-p" …
    pub perms: String,
    pub inode: u64,
    /// The path or pseudo-name ("[heap]", "[stack]"), empty for anonymous memory.
    pub path: String,
    pub rss_kb: u64,
    /// Pages whose accessed bit was set since the last clear_refs (or ever).
    pub referenced_kb: u64,
    pub anonymous_kb: u64,
    /// Transparent huge pages in the mapping.
    pub anon_huge_kb: u64,
    /// hugetlb pages in the mapping (shared + private).
    pub hugetlb_kb: u64,
    pub kernel_page_kb: u64,
}

impl Mapping {
    /// Private anonymous memory (anonymous mmaps and the heap): what huge pages can back.
    pub fn is_anonymous(&self) -> bool {
        self.inode == 0
            && self.perms.as_bytes().get(3) == Some(&b'p')
            && (self.path.is_empty() || self.path == "[heap]")
    }

    /// A short name for the mapping: the file's name, `[heap]`, `[stack]`, `anon`.
    pub fn label(&self) -> String {
        if self.path.is_empty() {
            "anon".to_string()
        } else if self.path.starts_with('[') {
            self.path.clone()
        } else if let Some(memfd) = self.path.strip_prefix("/memfd:") {
            format!("memfd:{}", memfd.trim_end_matches(" (deleted)"))
        } else {
            self.path
                .rsplit('/')
                .next()
                .unwrap_or(&self.path)
                .to_string()
        }
    }
}

/// Parses the text of /proc/PID/smaps.
pub fn parse_smaps(text: &str) -> Vec<Mapping> {
    let mut out: Vec<Mapping> = Vec::new();
    for line in text.lines() {
        if let Some(mapping) = parse_header(line) {
            out.push(mapping);
            continue;
        }
        let Some(current) = out.last_mut() else {
            continue;
        };
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let kb = || {
            rest.split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match key {
            "Rss" => current.rss_kb = kb(),
            "Referenced" => current.referenced_kb = kb(),
            "Anonymous" => current.anonymous_kb = kb(),
            "AnonHugePages" => current.anon_huge_kb = kb(),
            "Shared_Hugetlb" | "Private_Hugetlb" => {
                current.hugetlb_kb = current.hugetlb_kb.saturating_add(kb())
            }
            "KernelPageSize" => current.kernel_page_kb = kb(),
            _ => {}
        }
    }
    out
}

/// "start-end perms offset dev inode [path]" (the header line of each mapping).
fn parse_header(line: &str) -> Option<Mapping> {
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    // Every reader takes end - start: a range that ends before it starts is no mapping.
    if end < start {
        return None;
    }
    let perms = fields.next()?;
    if perms.len() != 4 {
        return None;
    }
    let _offset = fields.next()?;
    let _device = fields.next()?;
    let inode = fields.next()?.parse().ok()?;
    let path = fields.next().unwrap_or("").trim().to_string();
    Some(Mapping {
        start,
        end,
        perms: perms.to_string(),
        inode,
        path,
        ..Mapping::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
55d0c0a00000-55d0c0c00000 rw-p 00000000 00:00 0                          [heap]
Size:               2048 kB
Rss:                1024 kB
Referenced:          512 kB
Anonymous:          1024 kB
AnonHugePages:         0 kB
KernelPageSize:        4 kB
VmFlags: rd wr mr mw me ac
7f0000000000-7f0000400000 rw-p 00000000 00:00 0 
Rss:                4096 kB
Referenced:         4096 kB
Anonymous:          4096 kB
AnonHugePages:      4096 kB
Private_Hugetlb:       0 kB
7f1000000000-7f1000021000 r-xp 00000000 fd:01 1234                       /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 100 kB
";

    #[test]
    fn backward_ranges_and_huge_counts_are_not_mappings_nor_overflows() {
        // Found by tests/hostile_input.rs: the two Hugetlb lines were added unchecked (a
        // panic in debug builds), and a range ending before its start reached readers
        // that take end - start.
        let text = "\
7f0000400000-7f0000000000 rw-p 00000000 00:00 0
Rss: 4 kB
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Shared_Hugetlb: 18446744073709551615 kB
Private_Hugetlb: 18446744073709551615 kB
";
        let maps = parse_smaps(text);
        assert_eq!(maps.len(), 1);
        assert_eq!(maps[0].start, 0x7f00_0000_0000);
        assert_eq!(maps[0].hugetlb_kb, u64::MAX);
    }

    #[test]
    fn smaps_fields_are_read_per_mapping() {
        let maps = parse_smaps(SAMPLE);
        assert_eq!(maps.len(), 3);
        assert_eq!(maps[0].path, "[heap]");
        assert_eq!(maps[0].referenced_kb, 512);
        assert!(maps[0].is_anonymous());
        assert_eq!(maps[1].start, 0x7f00_0000_0000);
        assert_eq!(maps[1].anon_huge_kb, 4096);
        assert!(maps[1].is_anonymous());
        assert_eq!(maps[1].label(), "anon");
        assert!(!maps[2].is_anonymous());
        assert_eq!(maps[2].label(), "libc.so.6");
    }
}
