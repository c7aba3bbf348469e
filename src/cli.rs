//! Command-line definitions (clap) and nothing else: raw values, validated later by
//! `plan`, so every error can quote the value and say what was expected.

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "memscope",
    version,
    about = "Measure this machine's memory hierarchy: latency of every level, where each ends, and more",
    long_about = "Measure this machine's memory hierarchy.\n\n\
                  Without a subcommand, memscope runs the full profile ('memscope run'): \
                  topology, the latency ladder with its levels, a cache-miss-impact table \
                  with an AMAT estimate, bandwidth per level, the stride matrix, a \
                  loaded-latency curve, DRAM memory-level parallelism and the TLB levels, \
                  written as a table, memscope-report.json and a \
                  self-contained memscope-report.html.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Flags of `memscope run` (the default command).
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The full profile of this machine, with quick defaults (the default command).
    Run(RunArgs),
    /// The machine as the OS and CPU report it: CPU, caches, TLBs, NUMA, pages, THP, clocks.
    Info(InfoArgs),
    /// Load-to-use latency vs working-set size, and the levels found from the curve.
    Latency(LatencyArgs),
    /// Bandwidth of read/write/copy/triad and read:write mixes per level and thread count.
    Bandwidth(BandwidthArgs),
    /// Access cost vs stride and random order (read and SAXPY): a throughput study.
    Stride(StrideArgs),
    /// Latency under load: a pointer chase while injector threads stream a traffic mix
    /// with a falling delay; the latency-vs-bandwidth curve, its knee and Little's law.
    Loaded(LoadedArgs),
    /// Memory-level parallelism: N independent pointer chains in one thread at L2, L3 and
    /// DRAM; where parallelism saturates, and n dependent misses in a row.
    Mlp(MlpArgs),
    /// The out-of-order window (x86_64): two misses separated by K generated filler
    /// instructions; the K where they stop overlapping sizes the ROB, register files,
    /// load and store queues.
    Rob(RobArgs),
    /// TLB levels, reach and miss cost with 4 KiB and 2 MiB pages, what huge pages buy a
    /// SAXPY and the misses in flight.
    Tlb(TlbArgs),
    /// Node × node matrix of latency and read bandwidth (threads on node i, memory on j).
    Numa(NumaArgs),
    /// Count hardware and software events around a command, like `perf stat` with a
    /// memory focus: IPC, miss ratios, misses per kilo-instruction, dTLB miss rate, a
    /// bandwidth estimate and the run time. The command runs directly (no shell); its
    /// output is left alone, the table goes to stderr, and its exit status is memscope's.
    Stat(StatArgs),
}

/// Flags shared by every measuring command.
#[derive(Debug, Clone, Default, Args)]
pub struct MeasureArgs {
    /// CPU to pin the measuring thread to [default: the last CPU this process may use].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<String>,

    /// Page policy of the buffers: 4k, thp, 2m or 1g (hugetlbfs) [default: thp when THP is
    /// enabled, else 4k].
    #[arg(long, value_name = "POLICY")]
    pub pages: Option<String>,

    /// Write the JSON report to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,

    /// Write the result rows as CSV to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,

    /// Fewer trials and shorter ones: a rough answer in a few seconds.
    #[arg(long)]
    pub quick: bool,

    /// Timed trials per point; the median is reported [default: 9, or 5 with --quick].
    #[arg(long, value_name = "N")]
    pub repetitions: Option<String>,

    /// Largest working set, e.g. 512M or 1GiB [default: max(256 MiB, 8 × the largest
    /// cache); with --quick max(64 MiB, 4 × the largest cache)].
    #[arg(long, value_name = "SIZE")]
    pub max_size: Option<String>,

    /// With --pages 2m or 1g (or tlb --huge 2m): when the hugetlbfs pool has too few free
    /// pages, reserve what the run needs (root) and restore the pool when memscope exits,
    /// also on error and on Ctrl-C.
    #[arg(long)]
    pub reserve_hugepages: bool,
}

#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Directory for memscope-report.json and memscope-report.html.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: String,

    /// Write the HTML report here instead of DIR/memscope-report.html.
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct InfoArgs {
    /// Write the `machine` JSON object's report to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,

    /// Write the cache table as CSV to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Chase order: 'page-local' (random lines, a window of pages at a time: cache misses
    /// without TLB misses; the levels are found from this sweep), 'random' (one cycle over
    /// the whole buffer: cache plus TLB misses; levels from this sweep), or 'both'.
    #[arg(long, value_name = "ORDER", default_value = "both")]
    pub order: String,

    /// Bytes between chased slots (a multiple of 8; 64 = one cache line).
    #[arg(long, value_name = "BYTES", default_value = "64")]
    pub stride: String,

    /// Smallest working set.
    #[arg(long, value_name = "SIZE", default_value = "4K")]
    pub min_size: String,

    /// Sweep points per doubling of the working set.
    #[arg(long, value_name = "N", default_value = "4")]
    pub points_per_octave: String,

    /// Pages (4 KiB) per window of the page-local order (64 fits every first-level DTLB
    /// memscope knows of; it is also multichase's default locality).
    #[arg(long, value_name = "N", default_value = "64")]
    pub window_pages: String,

    /// Also print every point of the sweep.
    #[arg(long)]
    pub points: bool,

    /// Count L1, L2, LLC and dTLB misses per access for every point with the hardware
    /// counters (in a short untimed pass after the point's timed trials); on a machine
    /// without a PMU each row says why instead.
    #[arg(long)]
    pub counters: bool,
}

#[derive(Debug, Clone, Default, Args)]
pub struct BandwidthArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Thread counts, comma-separated, or 'all' for every CPU this process may use.
    #[arg(long, value_name = "LIST", default_value = "1,all")]
    pub threads: String,

    /// Kernels, comma-separated, or 'all' (see the list in `memscope bandwidth --help`:
    /// read, write, write-nt, copy, copy-nt, triad, triad-nt, mix-3:1, mix-3:1-nt,
    /// mix-2:1, mix-2:1-nt, mix-1:1, mix-1:1-nt).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub kernels: String,

    /// Vector instructions: avx512, avx2, sse2 or portable [default: the widest available].
    #[arg(long, value_name = "ISA")]
    pub isa: Option<String>,

    /// Working sets per thread (all of a kernel's arrays together), comma-separated,
    /// instead of one inside each cache level and DRAM.
    #[arg(long, value_name = "SIZES")]
    pub sizes: Option<String>,

    /// Also measure bandwidth vs working-set size (4 KiB to --max-size) for
    /// --sweep-kernels, with the first thread count.
    #[arg(long)]
    pub sweep: bool,

    /// Kernels of the sweep, comma-separated.
    #[arg(long, value_name = "LIST", default_value = "read,copy,write-nt")]
    pub sweep_kernels: String,
}

#[derive(Debug, Clone, Default, Args)]
pub struct StrideArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Count L1, L2, LLC and dTLB misses per access for every point with the hardware
    /// counters (in a short untimed pass after the point's timed trials); on a machine
    /// without a PMU each row says why instead.
    #[arg(long)]
    pub counters: bool,
}

#[derive(Debug, Clone, Default, Args)]
pub struct LoadedArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Injectors' traffic mixes, comma-separated, or 'all': read, 2:1, 1:1, write-nt
    /// [default: all; with --quick: read].
    #[arg(long, value_name = "LIST")]
    pub mix: Option<String>,

    /// Injector thread counts (the latency thread not counted), comma-separated, or
    /// 'all' for one on every other CPU this process may use.
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub threads: String,

    /// Delays between the injectors' accesses, core cycles, comma-separated [default:
    /// Intel MLC's series 0,2,8,15,50,…,9000,20000; with --quick ten of them].
    #[arg(long, value_name = "LIST")]
    pub delays: Option<String>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct MlpArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Working sets of the chain sweep, comma-separated, instead of one inside L2, L3 and
    /// DRAM [with --quick: L2 and DRAM].
    #[arg(long, value_name = "SIZES")]
    pub sizes: Option<String>,

    /// Most chains of the sweep (1 to 64) [default: 32].
    #[arg(long, value_name = "N")]
    pub max_chains: Option<String>,

    /// Largest working set of the size × chains grid (from 1 KiB in powers of two);
    /// 'none' skips the grid [default: 1G; with --quick none].
    #[arg(long, value_name = "SIZE")]
    pub grid_max: Option<String>,
}

#[derive(Debug, Clone, Default, Args)]
pub struct RobArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Filler instructions, comma-separated, or 'all': nop (reorder buffer), add (integer
    /// registers), xor (vector registers), load (load queue), store (store queue).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub fillers: String,

    /// Largest K (filler instructions between the two misses) [default: 1024; with
    /// --quick 512].
    #[arg(long, value_name = "K")]
    pub max_k: Option<String>,

    /// Skip the serialized N × K grid (misses and nops timed as one block).
    #[arg(long)]
    pub no_serialized: bool,
}

#[derive(Debug, Clone, Default, Args)]
pub struct TlbArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Huge pages of the second curve: thp, 2m (hugetlbfs) or none [default: thp when THP
    /// is enabled, else 2m when its pool has pages, else none].
    #[arg(long, value_name = "PAGES")]
    pub huge: Option<String>,

    /// Most 4 KiB pages of the sweep [default: 131072 (2^17); with --quick 65536].
    #[arg(long, value_name = "N")]
    pub max_pages: Option<String>,

    /// Most 2 MiB pages of the sweep [default: twice the largest 2 MiB TLB CPUID reports,
    /// at most half the free memory; with --quick 256].
    #[arg(long, value_name = "N")]
    pub max_huge_pages: Option<String>,

    /// Footprint of x and y together in the SAXPY comparison, or 'none' [default: 1G;
    /// with --quick none].
    #[arg(long, value_name = "SIZE")]
    pub saxpy_footprint: Option<String>,

    /// Count L1, L2, LLC and dTLB misses per access for every point with the hardware
    /// counters (in a short untimed pass after the point's timed trials); on a machine
    /// without a PMU each row says why instead.
    #[arg(long)]
    pub counters: bool,
}

#[derive(Debug, Clone, Default, Args)]
pub struct NumaArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Reading threads per node in the bandwidth cells: a number, or 'all' for every CPU
    /// of the node this process may use.
    #[arg(long, value_name = "N", default_value = "1")]
    pub threads: String,
}

#[derive(Debug, Clone, Default, Args)]
pub struct StatArgs {
    /// Events to count, comma-separated; '{a,b}' groups events so they are counted over
    /// the same time; repeatable. Generic names (cycles, instructions, cache-misses,
    /// LLC-load-misses, dTLB-load-misses, task-clock, page-faults …), raw rNNNN,
    /// cpu/event=0xNN,umask=0xNN/, cpu_core/…/ or cpu_atom/…/ [default: task-clock,
    /// context-switches, cpu-migrations, page-faults, {cycles,instructions},
    /// {cache-references,cache-misses}, {L1-dcache-loads,L1-dcache-load-misses},
    /// {LLC-loads,LLC-load-misses}, {dTLB-loads,dTLB-load-misses}, dTLB-store-misses].
    #[arg(short = 'e', long = "events", value_name = "EVENTS")]
    pub events: Vec<String>,

    /// Run the command N times and report the median and spread of every count; stops
    /// early at a run that fails.
    #[arg(short = 'r', long, value_name = "N", default_value = "1")]
    pub repeat: String,

    /// Write the JSON report to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,

    /// Write the counts and derived figures as CSV to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<String>,

    /// The command and its arguments (put `--` before it when it has options of its own).
    #[arg(
        value_name = "COMMAND",
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<std::ffi::OsString>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
