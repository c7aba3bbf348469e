//! The preload library (crates/program/src/pages/preload.c, built by build.rs) as memscope hands it to a
//! program: written into an anonymous memory file (memfd) that lives exactly as long as
//! memscope, so nothing is left on disk even when memscope is killed. The program
//! inherits the memfd at a fixed high descriptor number and `LD_PRELOAD` names it as
//! `/proc/self/fd/<number>`: a path that resolves inside the very process loading it, so
//! no other process's /proc entry (whose pid could be reused) and nothing another user
//! can create is ever named. A descendant that closed the descriptor gets the loader's
//! "cannot be preloaded" warning, and none outlives its run (`platform::child`).

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The library's bytes, built for this target by build.rs.
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmemscope_pages_preload.so"));

/// The name the library's mapping shows in /proc/PID/maps (`/memfd:<name> (deleted)`),
/// by which memscope sees that it was loaded.
pub(super) const MAPPING_NAME: &str = "memscope-pages-preload";

/// What the library does in a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreloadMode {
    /// Cut anonymous mappings at 2 MiB boundaries (per-region accessed counts in smaps).
    pub split: bool,
    /// Keep transparent huge pages away from every anonymous mapping (MADV_NOHUGEPAGE):
    /// 4 KiB pages even where THP is `always`, without changing the address-space layout
    /// (which turning THP off for the process would).
    pub no_huge: bool,
    /// Huge pages for these ranges (`None`: none; an empty list: every anonymous mapping).
    pub huge: Option<Vec<(u64, u64)>>,
    /// hugetlb pages from the pool instead of transparent huge pages.
    pub hugetlb: bool,
}

/// The library in a memfd; dropping it closes the file, which the kernel then frees.
pub(crate) struct Preload {
    file: OwnedFd,
    /// The descriptor number the program inherits it as.
    number: RawFd,
}

impl Preload {
    pub fn create() -> io::Result<Preload> {
        let name = std::ffi::CString::new(MAPPING_NAME).expect("no NUL in the name");
        // SAFETY: memfd_create with a valid name; the descriptor is owned below.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just created and is owned by nobody else.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut writer = std::fs::File::from(file.try_clone()?);
        writer.write_all(LIBRARY)?;
        // High, where a program's own files rarely land: the last below the descriptor
        // limit (and 1024).
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit fills the struct it is given.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        let top = limit.rlim_cur.clamp(64, 1024) as RawFd - 1;
        let number = if top == file.as_raw_fd() {
            top - 1
        } else {
            top
        };
        Ok(Preload { file, number })
    }

    /// The descriptor a program must inherit and the number it must have there
    /// (`SpawnOptions::inherit`).
    pub(crate) fn inherit(&self) -> (RawFd, RawFd) {
        (self.file.as_raw_fd(), self.number)
    }

    /// The path a program's dynamic loader opens: its own inherited descriptor.
    pub fn path(&self) -> String {
        format!("/proc/self/fd/{}", self.number)
    }

    /// The environment a run needs: `LD_PRELOAD` (ahead of one the user already set) and
    /// the library's settings.
    pub fn env(&self, mode: &PreloadMode) -> Vec<(OsString, OsString)> {
        let mut preload = OsString::from(self.path());
        if let Some(user) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            preload.push(":");
            preload.push(user);
        }
        let mut env = vec![
            (OsString::from("LD_PRELOAD"), preload),
            (
                OsString::from("MEMSCOPE_PAGES_SPLIT"),
                OsString::from(if mode.split { "1" } else { "0" }),
            ),
        ];
        let huge = match &mode.huge {
            None => String::new(),
            Some(ranges) if ranges.is_empty() => "all".to_string(),
            Some(ranges) => ranges
                .iter()
                .map(|(s, e)| format!("{s:x}-{e:x}"))
                .collect::<Vec<_>>()
                .join(","),
        };
        env.push((OsString::from("MEMSCOPE_PAGES_HUGE"), OsString::from(huge)));
        // Advice must come before the program's first touch; cutting mappings for the
        // accessed-bit counts only before the next reading (every interval, ≥ 10 ms).
        let poll_us = if mode.huge.is_some() || mode.no_huge {
            5_000
        } else {
            20_000
        };
        env.push((
            OsString::from("MEMSCOPE_PAGES_POLL_US"),
            OsString::from(poll_us.to_string()),
        ));
        env.push((
            OsString::from("MEMSCOPE_PAGES_NO_HUGE"),
            OsString::from(if mode.no_huge { "1" } else { "0" }),
        ));
        env.push((
            OsString::from("MEMSCOPE_PAGES_HUGE_KIND"),
            OsString::from(if mode.hugetlb { "2m" } else { "thp" }),
        ));
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_is_an_elf_shared_object() {
        assert_eq!(&LIBRARY[..4], b"\x7fELF");
        assert_eq!(LIBRARY[16], 3, "ET_DYN");
    }

    #[test]
    fn the_memfd_path_reads_back_the_library() {
        let preload = Preload::create().unwrap();
        assert!(preload.path().starts_with("/proc/self/fd/"));
        let bytes = std::fs::read(format!("/proc/self/fd/{}", preload.inherit().0)).unwrap();
        assert_eq!(bytes.len(), LIBRARY.len());
        let env = preload.env(&PreloadMode {
            huge: Some(vec![(0x200000, 0x600000)]),
            ..PreloadMode::default()
        });
        let huge = env
            .iter()
            .find(|(k, _)| k == "MEMSCOPE_PAGES_HUGE")
            .unwrap();
        assert_eq!(huge.1, "200000-600000");
    }
}
