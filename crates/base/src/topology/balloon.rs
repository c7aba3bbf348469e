//! Whether this machine is a virtual machine whose balloon device returns free memory to
//! the host (virtio-balloon free page reporting, `VIRTIO_BALLOON_F_REPORTING`).
//!
//! With it, the guest kernel hands free blocks of 2 MiB and more back to the host about
//! two seconds after they were freed; the host then backs them again at their first
//! touch. Base pages mostly come from memory that was never handed back, but a
//! transparent huge page takes a whole free 2 MiB block, so a program's huge pages cost a
//! host fault each when its memory was free for longer than that. Measured on the
//! project's Firecracker guest with XSBench and glibc's THP tunable: 0.41–0.51 s of
//! system time a run when started 4 s after the previous run, 0.00–0.09 s in 4 of 5 runs
//! started right after one; inside one advise, 0.00–0.04 s in 6 of 6 huge-page runs right
//! after another huge-page run (its freed 2 MiB blocks still backed) and 0.40–0.56 s in
//! 7 of 7 right after a run with base pages (in another series of pairs, 4 of 8 such runs
//! paid: what a run with base pages leaves free varies). Read from sysfs: a virtio device
//! of id 5 (balloon) whose feature bit 5 is set.

use std::path::Path;

/// The virtio device id of a memory balloon.
const BALLOON_DEVICE: &str = "0x0005";
/// VIRTIO_BALLOON_F_REPORTING.
const REPORTING_BIT: usize = 5;

/// Whether the virtio devices under `sys` (normally "/sys") include a balloon with free
/// page reporting negotiated.
pub(crate) fn free_page_reporting_at(sys: &Path) -> bool {
    let Ok(devices) = std::fs::read_dir(sys.join("bus/virtio/devices")) else {
        return false;
    };
    devices.flatten().any(|device| {
        let dir = device.path();
        let read = |name: &str| super::read_trimmed(dir.join(name));
        read("device").as_deref() == Some(BALLOON_DEVICE)
            && read("features")
                .is_some_and(|bits| bits.as_bytes().get(REPORTING_BIT) == Some(&b'1'))
    })
}

/// [`free_page_reporting_at`] of this machine.
pub fn free_page_reporting() -> bool {
    free_page_reporting_at(Path::new("/sys"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::fake_files::put;

    #[test]
    fn a_balloon_with_the_reporting_bit_is_found_and_others_are_not() {
        let root = tempfile::tempdir().unwrap();
        assert!(!free_page_reporting_at(root.path()), "no virtio bus");
        put(root.path(), "bus/virtio/devices/virtio1/device", "0x0002");
        put(
            root.path(),
            "bus/virtio/devices/virtio1/features",
            "0010011",
        );
        assert!(!free_page_reporting_at(root.path()), "a block device");
        put(root.path(), "bus/virtio/devices/virtio0/device", "0x0005");
        put(
            root.path(),
            "bus/virtio/devices/virtio0/features",
            "0110000",
        );
        assert!(
            !free_page_reporting_at(root.path()),
            "a balloon without reporting"
        );
        put(
            root.path(),
            "bus/virtio/devices/virtio0/features",
            "0110010100",
        );
        assert!(free_page_reporting_at(root.path()));
        put(root.path(), "bus/virtio/devices/virtio0/features", "011");
        assert!(
            !free_page_reporting_at(root.path()),
            "too short a feature string"
        );
    }

    #[test]
    fn this_machine_answers_without_failing() {
        let _ = free_page_reporting();
    }
}
