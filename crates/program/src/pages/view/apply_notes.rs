//! `pages apply`'s notes in words.

use crate::pages::apply::ApplyNote;
use crate::view::format;

impl ApplyNote {
    /// The note as the terminal and HTML reports say it.
    pub fn text(&self) -> String {
        match self {
            ApplyNote::ForeignRecord { path, command } => format!(
                "the record in {path} is of '{}', not of this command: its regions may not be \
                 this program's",
                command.join(" ")
            ),
            ApplyNote::FewerRegions { found, top } => format!(
                "only {found} region(s) of private anonymous memory were accessed, fewer than \
                 --top {top}"
            ),
            ApplyNote::ShareBelowTop {
                share_pct,
                signal,
                top_pct,
                regions,
            } => format!(
                "the regions of private anonymous memory hold {}% of the {signal}, less than \
                 --top {}%: all {regions} of them are chosen",
                format::fixed(*share_pct, 1),
                format::fixed(*top_pct, 1),
            ),
            ApplyNote::FlatProfile {
                chosen,
                share_pct,
                signal,
            } => format!(
                "the top {chosen} region(s) hold only {}% of the {signal}: the profile is flat, \
                 so huge pages under them can buy little; huge pages for all anonymous memory \
                 (the all-huge arm, or GLIBC_TUNABLES=glibc.malloc.hugetlb=1 for malloc's \
                 memory) are the likelier remedy",
                format::fixed(*share_pct, 1)
            ),
            ApplyNote::FewBlocks { blocks, needed } => format!(
                "with {blocks} blocks no difference can reach p < 0.05 in the signed-rank test \
                 (it needs at least {needed}): use --repeat {needed} or more to call a change"
            ),
            ApplyNote::FailedRun {
                arm,
                block,
                termination,
                accepted,
                stderr_tail,
            } => {
                format!(
                "the '{arm}' run of block {block} ended with {termination}, not {accepted}: it \
                 is a failed run, never averaged in{}",
                stderr_tail.as_ref().map_or(String::new(), |t| format!("; {t}"))
            )
            }
            ApplyNote::WarmUpInterrupted => "interrupted (Ctrl-C) during the warm-up".to_string(),
            ApplyNote::Interrupted { blocks, planned } => format!(
                "interrupted (Ctrl-C) after {blocks} of {planned} blocks: the blocks after it \
                 were not run"
            ),
            ApplyNote::NormalStatus { code, every: true } => format!(
                "the program exits {code} in every run; taken as its normal status (--ok-status \
                 {code})"
            ),
            ApplyNote::NormalStatus { code, every: false } => format!(
                "the first 4 KiB run exited {code}; taken as the program's normal status \
                 (--ok-status {code}): runs with another status are failed runs"
            ),
            ApplyNote::KernelTime {
                arm,
                system_s,
                baseline_system_s,
            } => format!(
                "'{arm}' runs spent {:.2} s more in the kernel than the 4 KiB runs (median \
                 system time {system_s:.2} s against {baseline_system_s:.2} s): faulting memory \
                 in as huge pages costs zeroing 2 MiB at a time, compaction when memory is \
                 fragmented and, in a virtual machine, the host backing memory the guest had \
                 handed back",
                system_s - baseline_system_s
            ),
            ApplyNote::RecordAfterFailed { error } => {
                format!("the recorded run with huge pages failed: {error}")
            }
            ApplyNote::HugeMissing { hugetlb: true } => {
                "no hugetlb page was obtained in the all-huge arm: the 2 MiB pool is empty or \
                 too small (see /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages), or the \
                 program allocates without mmap (2m backs new mmaps only)"
                    .to_string()
            }
            ApplyNote::HugeMissing { hugetlb: false } => {
                "no transparent huge page was obtained in the all-huge arm: THP may be disabled \
                 (/sys/kernel/mm/transparent_hugepage/enabled is 'never'), memory too \
                 fragmented, or the program's mappings smaller than 2 MiB"
                    .to_string()
            }
            ApplyNote::Said(text) => text.clone(),
        }
    }
}
