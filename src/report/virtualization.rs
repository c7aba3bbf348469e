//! What running under a hypervisor distorts, in words fitted to this machine: shown by
//! `info` and in the report's machine section whenever a hypervisor is detected.

use crate::topology::Machine;
use crate::units::format_hz;

/// The distortions a hypervisor brings to memory measurements, each one sentence; empty on
/// bare metal.
pub fn notes(m: &Machine) -> Vec<String> {
    let Some(vendor) = &m.hypervisor else {
        return Vec::new();
    };
    let mut notes = vec![format!(
        "memscope runs as a guest of {vendor}: the caches, TLBs and memory it measures are the \
         host's, shared with whatever else the host runs"
    )];
    notes.push(if vendor.contains("TCG") {
        "QEMU TCG emulates the CPU in software: no TLB miss walks a host's page tables in \
         hardware, remote and far nodes cost what local memory does, and every timing is the \
         emulator's, not a machine's caches', TLBs' or memory's"
            .to_string()
    } else {
        "a TLB miss costs a nested (two-dimensional) page walk: each level of the guest's page \
         table is itself translated through the host's, so page walks cost several times \
         what they cost on bare metal. 'latency' shows it as the gap between page-local and \
         random DRAM latency, and 'tlb' measures it per TLB level; huge pages in the guest \
         (and on the host) shrink it"
            .to_string()
    });
    if let Some(llc) = m.data_caches().last() {
        notes.push(format!(
            "the {} ({}) is shared with the host's other cores and tenants: the capacity one \
             thread gets is often much smaller than reported, and varies with their load",
            llc.name(),
            crate::units::Bytes(llc.size_bytes)
        ));
    }
    let counter = m.counter_name();
    match (m.tsc_hz, m.core_hz_estimate) {
        (Some(tsc), Some(core)) => notes.push(format!(
            "the {counter} ticks at {} but the core runs at about {} (measured): memscope \
             times with the {counter} and converts to cycles with the measured core clock",
            format_hz(tsc),
            format_hz(core)
        )),
        _ => notes.push(format!(
            "{counter} ticks are not core cycles; cycle figures use the measured core clock"
        )),
    }
    notes.push(
        "vCPUs may be descheduled by the host (steal time) and another guest may share a \
         vCPU's physical core: spreads are wider, and memscope retakes trials it sees \
         preempted where it can"
            .to_string(),
    );
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_metal_has_no_notes_and_a_guest_has_each_distortion() {
        let mut m = crate::topology::detect().expect("topology");
        m.hypervisor = None;
        assert!(notes(&m).is_empty());
        m.hypervisor = Some("KVM".into());
        m.tsc_hz = Some(2.6e9);
        m.core_hz_estimate = Some(3.7e9);
        let text = notes(&m).join(" ");
        assert!(text.contains("KVM") && text.contains("nested"), "{text}");
        assert!(
            text.contains("2.60 GHz") && text.contains("3.70 GHz"),
            "{text}"
        );
    }
}
