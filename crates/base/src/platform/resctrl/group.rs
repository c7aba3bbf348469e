//! A resctrl group memscope makes for one command: created under a new name relative to
//! the root's descriptor, journaled before its mkdir and registered with `cleanup`, its
//! `schemata` written for the one resource it restricts, the command's pid added to its
//! `tasks`, removed on drop (checked to be the directory it made) and by `restore_stale`
//! after a SIGKILL.

use super::*;

/// What a group restricts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The group gets this many contiguous L3 ways in every domain.
    L3Ways(u32),
    /// The group's bandwidth is throttled to about this percent in every domain.
    MbPercent(u32),
}

/// A resctrl group memscope made, removed when dropped.
#[derive(Debug)]
pub struct ResctrlGroup {
    root: OwnedFd,
    group: OwnedFd,
    name: CString,
    path: PathBuf,
    /// Device and inode of the group as made.
    id: (u64, u64),
    fs: Fs,
    /// What was written to its schemata.
    pub schemata: String,
    token: Option<cleanup::Token>,
    record: Option<Record>,
}

impl ResctrlGroup {
    /// Makes a new group `memscope-PID-N` under `resctrl`'s root (journaled first; an
    /// existing name is refused) and writes `limit` to its schemata. A failed write
    /// removes the group again and says what the kernel said (`info/last_cmd_status`).
    pub fn create(resctrl: &Resctrl, limit: Limit) -> io::Result<ResctrlGroup> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{GROUP_PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        Self::create_named(resctrl, limit, &name)
    }

    pub(super) fn create_named(
        resctrl: &Resctrl,
        limit: Limit,
        name: &str,
    ) -> io::Result<ResctrlGroup> {
        let schemata = match limit {
            Limit::L3Ways(ways) => resctrl.l3_schemata(ways),
            Limit::MbPercent(percent) => resctrl.mb_schemata(percent),
        }
        .map_err(|why| io::Error::new(io::ErrorKind::InvalidInput, why))?;
        let c_name = cstring(name)?;
        let path = resctrl.path.join(name);
        let root = resctrl.root.try_clone()?;
        if stat_at(root.as_raw_fd(), &c_name).is_ok() {
            return Err(exists(&path));
        }
        // The name first: a SIGKILL right after the mkdir leaves a group the next start
        // knows to remove.
        let record = journal::record(Change::ResctrlGroup { path: path.clone() });
        let drop_record = |record: &Option<Record>| {
            if let Some(r) = record {
                let _ = r.remove();
            }
        };
        if let Err(error) = make_dir(root.as_raw_fd(), &c_name, &path) {
            drop_record(&record);
            return Err(error);
        }
        let (group, id) = match open_made(root.as_raw_fd(), &c_name, &path) {
            Ok(opened) => opened,
            Err((error, made)) => {
                // A group that could not be opened is removed again; one replaced meanwhile
                // is not memscope's to remove.
                if !made || remove_group(root.as_raw_fd(), &c_name, None, resctrl.fs).is_ok() {
                    drop_record(&record);
                }
                return Err(error);
            }
        };
        let token = cleanup_token(&root, (&c_name, &path, id), record.clone(), resctrl.fs);
        // From here on, dropping the value removes the group and its entry.
        let group = ResctrlGroup {
            root,
            group,
            name: c_name,
            path,
            id,
            fs: resctrl.fs,
            schemata,
            token,
            record,
        };
        imitate_mkdir(group.fs, group.group.as_raw_fd())?;
        group.write("schemata", &group.schemata).map_err(|error| {
            let status = resctrl
                .read("info/last_cmd_status")
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            io::Error::new(
                error.kind(),
                format!(
                    "cannot write '{}' to {}/schemata ({error}{}{status})",
                    group.schemata.trim(),
                    group.path.display(),
                    if status.is_empty() { "" } else { ": " }
                ),
            )
        })?;
        Ok(group)
    }
}

/// The refusal of a group name that exists already.
fn exists(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{} exists already: memscope makes a group of its own and leaves others alone",
            path.display()
        ),
    )
}

/// Makes the group directory `name` under `root`, failing on an existing name (EEXIST),
/// so that a group made meanwhile by someone else is never taken over.
fn make_dir(root: RawFd, name: &CString, path: &Path) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated.
    cvt(unsafe { libc::mkdirat(root, name.as_ptr(), 0o755) })
        .map(|_| ())
        .map_err(|error| match error.raw_os_error() {
            Some(libc::EEXIST) => exists(path),
            Some(libc::ENOSPC) => io::Error::new(
                error.kind(),
                format!(
                    "cannot make {}: every class of service (CLOSID) is in use by other groups",
                    path.display()
                ),
            ),
            _ => annotate(error, "cannot make", path),
        })
}

/// The group just made, opened, and its (device, inode), checked to be the directory
/// made; else the error, and whether the name is still the one memscope made (false:
/// replaced before it could be opened).
fn open_made(
    root: RawFd,
    name: &CString,
    path: &Path,
) -> Result<(OwnedFd, (u64, u64)), (io::Error, bool)> {
    let made = stat_at(root, name);
    let opened = open_at(root, name, libc::O_RDONLY | libc::O_DIRECTORY, 0);
    match (made, opened) {
        (Ok(made), Ok(group)) => match stat_fd(group.as_raw_fd()) {
            Ok(st) if (st.st_dev, st.st_ino) == (made.st_dev, made.st_ino) => {
                Ok((group, (st.st_dev, st.st_ino)))
            }
            _ => Err((
                io::Error::other(format!(
                    "the new group {} was replaced before memscope could open it",
                    path.display()
                )),
                false,
            )),
        },
        (Err(e), _) | (_, Err(e)) => Err((annotate(e, "cannot open", path), true)),
    }
}

/// Removal of the group at exit or on a signal (and of its journal entry once removed),
/// where the cleanup can be installed.
fn cleanup_token(
    root: &OwnedFd,
    (name, path, id): (&CString, &Path, (u64, u64)),
    record: Option<Record>,
    fs: Fs,
) -> Option<cleanup::Token> {
    let (Ok(()), Ok(root_copy)) = (cleanup::install(), root.try_clone()) else {
        return None;
    };
    let name = name.clone();
    Some(cleanup::register(
        &format!("remove the resctrl group {}", path.display()),
        Box::new(move || {
            if remove_group(root_copy.as_raw_fd(), &name, Some(id), fs).is_ok() {
                if let Some(r) = &record {
                    let _ = r.remove();
                }
            }
        }),
    ))
}

impl ResctrlGroup {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves the task `pid` into the group (a paused child before its exec: what it
    /// starts later stays in the group too).
    pub fn add_task(&self, pid: libc::pid_t) -> io::Result<()> {
        self.write("tasks", &format!("{pid}\n"))
    }

    /// Writes `text` in one write to the group's file `name` (never created, never
    /// through a symlink).
    fn write(&self, name: &str, text: &str) -> io::Result<()> {
        let fd = open_at(self.group.as_raw_fd(), &cstring(name)?, libc::O_WRONLY, 0)
            .map_err(|e| annotate(e, "cannot open", &self.path.join(name)))?;
        File::from(fd).write_all(text.as_bytes())
    }
}

impl Drop for ResctrlGroup {
    fn drop(&mut self) {
        let removal = remove_group(self.root.as_raw_fd(), &self.name, Some(self.id), self.fs);
        if let Some(token) = self.token.take() {
            cleanup::unregister(token);
        }
        match removal {
            Ok(()) => {
                if let Some(record) = self.record.take() {
                    let _ = record.remove();
                }
            }
            // The entry stays: the next start tries again.
            Err(error) => eprintln!(
                "memscope: could not remove the resctrl group {}: {error}",
                self.path.display()
            ),
        }
    }
}

/// Removes the group `name` of the root open as `root`, only while the name is still the
/// group made (`id`, when known). A name already gone is fine.
fn remove_group(root: RawFd, name: &CStr, id: Option<(u64, u64)>, fs: Fs) -> io::Result<()> {
    match stat_at(root, name) {
        Ok(st) if id.is_none_or(|id| id == (st.st_dev, st.st_ino)) => {}
        Ok(_) => {
            return Err(io::Error::other(
                "its name is now another directory, left alone",
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    imitate_rmdir(fs, root, name)?;
    // SAFETY: `name` is NUL-terminated. On resctrl the rmdir moves the group's tasks and
    // CPUs back to the default group.
    match cvt(unsafe { libc::unlinkat(root, name.as_ptr(), libc::AT_REMOVEDIR) }) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The files the kernel puts in a new group, made by hand in a synthetic tree.
fn imitate_mkdir(fs: Fs, group: RawFd) -> io::Result<()> {
    match fs {
        Fs::Resctrl => {
            let _ = group;
            Ok(())
        }
        #[cfg(any(test, feature = "test-support"))]
        Fs::Synthetic => {
            for name in SYNTHETIC_FILES {
                let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
                open_at(group, &cstring(name)?, flags, 0o644)?;
            }
            Ok(())
        }
    }
}

/// The kernel removes a group with its files; in a synthetic tree they go first.
fn imitate_rmdir(fs: Fs, root: RawFd, name: &CStr) -> io::Result<()> {
    match fs {
        Fs::Resctrl => {
            let _ = (root, name);
            Ok(())
        }
        #[cfg(any(test, feature = "test-support"))]
        Fs::Synthetic => {
            let group = open_at(root, name, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
            for file in SYNTHETIC_FILES {
                // SAFETY: the name is NUL-terminated.
                let _ = unsafe { libc::unlinkat(group.as_raw_fd(), cstring(file)?.as_ptr(), 0) };
            }
            Ok(())
        }
    }
}

#[cfg(any(test, feature = "test-support"))]
pub(super) const SYNTHETIC_FILES: [&str; 3] = ["schemata", "tasks", "cpus"];

/// Removes a group a killed memscope left: the journaled path must still be a directory
/// named `memscope-PID-N` (PID the entry's) directly under a resctrl root (`fs`).
pub fn restore_stale(entry: &Entry, fs: Fs) -> Outcome {
    let Change::ResctrlGroup { path } = &entry.change else {
        return Outcome::Clean;
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ours = name
        .strip_prefix(&format!("{GROUP_PREFIX}{}-", entry.pid))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let (Some(parent), Ok(c_name), true) =
        (path.parent(), cstring(name), ours && path.is_absolute())
    else {
        return Outcome::LeftAlone(format!(
            "left {} alone: it is not a name memscope gives its resctrl groups",
            path.display()
        ));
    };
    let root = match open_dir_path(parent) {
        Ok(fd) => fd,
        // resctrl unmounted since: its groups went with it.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Outcome::Clean,
        Err(e) => return Outcome::Failed(format!("could not open {} ({e})", parent.display())),
    };
    if let Err(why) = check_fs(root.as_raw_fd(), fs) {
        // Unmounted (and something else there now), or never resctrl: nothing of ours.
        return Outcome::LeftAlone(format!(
            "left {} alone: {} is not a resctrl filesystem now ({why})",
            path.display(),
            parent.display()
        ));
    }
    match stat_at(root.as_raw_fd(), &c_name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Outcome::Clean,
        Err(e) => return Outcome::Failed(format!("could not look at {} ({e})", path.display())),
        Ok(st) if st.st_mode & libc::S_IFMT != libc::S_IFDIR => {
            return Outcome::LeftAlone(format!(
                "left {} alone: it is not a directory",
                path.display()
            ))
        }
        Ok(_) => {}
    }
    let who = journal::killed(entry);
    match remove_group(root.as_raw_fd(), &c_name, None, fs) {
        Ok(()) => Outcome::Restored(format!(
            "removed the resctrl group {} ({who} while a program ran in it; its tasks went \
             back to the default group)",
            path.display()
        )),
        Err(e) => Outcome::Failed(format!(
            "could not remove the resctrl group {} ({who} while a program ran in it): {e}",
            path.display()
        )),
    }
}
