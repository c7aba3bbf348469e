//! The EXAMPLES block that ends each command's `--help` (clap's `after_help` on the
//! command's flags): a few command lines to copy, each under a comment saying what it
//! answers. One constant per command, all here, so the examples read as one set and are
//! checked together (`tests/integration/cli.rs` asserts every subcommand's help has one);
//! the depth is in docs/<command>.md.

/// `memscope run` (and `memscope` with no subcommand).
pub const RUN: &str = "\
EXAMPLES:
  # The full profile: tables, memscope-report.json and .html in this directory
  memscope run
  # A quick profile without the file reads, the reports written to /tmp
  memscope run --quick --no-files --out /tmp
  # Also record it for `memscope history --check`
  memscope run --quick --save";

/// `memscope info`.
pub const INFO: &str = "\
EXAMPLES:
  # CPU, caches, TLBs, NUMA nodes, page sizes and clocks
  memscope info
  # The same as the report's JSON `machine` object
  memscope info --json -
  # The cache table as CSV
  memscope info --csv caches.csv";

/// `memscope latency`.
pub const LATENCY: &str = "\
EXAMPLES:
  # The levels found and their latencies, in a few seconds
  memscope latency --quick
  # Every point of both chase orders, with misses per load where there is a PMU
  memscope latency --points --counters
  # The page-local order only, up to 1 GiB, with 4 KiB pages
  memscope latency --order page-local --max-size 1G --pages 4k";

/// `memscope bandwidth`.
pub const BANDWIDTH: &str = "\
EXAMPLES:
  # Every kernel at every level, one thread and all threads
  memscope bandwidth --quick
  # One and two threads over 1 GiB each (DRAM), read and copy only
  memscope bandwidth --threads 1,2 --sizes 1G --kernels read,copy
  # Bandwidth against working set for read and copy
  memscope bandwidth --sweep --sweep-kernels read,copy";

/// `memscope stride`.
pub const STRIDE: &str = "\
EXAMPLES:
  # ns per access against stride and random order, read and SAXPY
  memscope stride --quick
  # With misses per element where there is a PMU, every row as CSV
  memscope stride --counters --csv stride.csv";

/// `memscope loaded`.
pub const LOADED: &str = "\
EXAMPLES:
  # The read mix's latency-vs-bandwidth curve
  memscope loaded --quick
  # Two mixes with one injector thread
  memscope loaded --mix read,1:1 --threads 1
  # Your own delays (core cycles between the injectors' steps)
  memscope loaded --delays 0,50,500,5000";

/// `memscope mlp`.
pub const MLP: &str = "\
EXAMPLES:
  # Where parallelism saturates at L2 and DRAM
  memscope mlp --quick
  # Chosen working sets, up to 48 chains, without the size x chains grid
  memscope mlp --sizes 4M,256M --max-chains 48 --grid-max none";

/// `memscope rob`.
pub const ROB: &str = "\
EXAMPLES:
  # The reorder buffer, register files, load and store queues
  memscope rob
  # Two fillers only, K up to 512, without the serialised variant
  memscope rob --fillers nop,load --max-k 512 --no-serialized";

/// `memscope tlb`.
pub const TLB: &str = "\
EXAMPLES:
  # TLB levels, reach and miss cost with 4 KiB and 2 MiB (THP) pages
  memscope tlb --quick
  # The 2 MiB curve on hugetlbfs, pool grown for the run and set back (root)
  memscope tlb --huge 2m --reserve-hugepages
  # Misses per load where there is a PMU, without the SAXPY rows
  memscope tlb --counters --saxpy-footprint none";

/// `memscope numa`.
pub const NUMA: &str = "\
EXAMPLES:
  # Latency and read bandwidth for every node pair
  memscope numa
  # Every CPU of a node reading, the matrix as JSON
  memscope numa --threads all --json numa.json";

/// `memscope interleave`.
pub const INTERLEAVE: &str = "\
EXAMPLES:
  # The node of the measuring CPU against each other memory node, default ratios
  memscope interleave
  # DRAM node 0 with CXL node 2 only, chosen ratios, 8 reading threads
  memscope interleave --nodes 0,2 --ratios 4:1,3:1,2:1 --threads 8";

/// `memscope files`.
pub const FILES: &str = "\
EXAMPLES:
  # Page cache and device reads, test files in a directory under /tmp, removed
  memscope files --quick --dir /tmp
  # Chosen file sizes and io_uring queue depths
  memscope files --sizes 4K..64M --depth 1,32
  # The file system you care about, two block sizes, more random reads
  memscope files --dir /mnt/scratch --block 4K,1M --reads 5000";

/// `memscope stat`.
pub const STAT: &str = "\
EXAMPLES:
  # Counters around a command (its output is its own; the table goes to stderr)
  memscope stat -- ls -R /usr/share/doc
  # The median and spread of 5 runs
  memscope stat --repeat 5 -- gzip -k -f -c big.file
  # Chosen events, cycles and instructions counted over the same time
  memscope stat -e '{cycles,instructions},dTLB-load-misses' -- ./my-program";

/// `memscope pages`.
pub const PAGES: &str = "\
EXAMPLES:
  # Where the program's TLB pressure is: its top 2 MiB regions
  memscope pages record -- ./my-program --its-flags
  # Huge pages under just those regions, measured against 4 KiB and all-huge
  memscope pages apply --top 8 -- ./my-program --its-flags";

/// `memscope pages record`.
pub const PAGES_RECORD: &str = "\
EXAMPLES:
  # The 8 hottest 2 MiB regions (PMU samples, or accessed bits without a PMU)
  memscope pages record -- ./my-program --its-flags
  # Accessed bits every 10 ms, the ranking kept for `pages apply --from r.json`
  memscope pages record --source refs --interval 10 --json r.json -- ./prog";

/// `memscope pages apply`.
pub const PAGES_APPLY: &str = "\
EXAMPLES:
  # Record, then huge pages under the top 8 regions against 4 KiB and all-huge
  memscope pages apply --top 8 -- ./my-program --its-flags
  # Regions from an earlier record, 11 blocks of interleaved runs
  memscope pages apply --from r.json --repeat 11 -- ./my-program --its-flags";

/// `memscope footprint`.
pub const FOOTPRINT: &str = "\
EXAMPLES:
  # Per-thread (TLS) and static data against this machine's caches
  memscope footprint ./my-program
  # 16 threads, against the measured capacities of a memscope report
  memscope footprint ./my-program --threads 16 --against memscope-report.json
  # With a running process's resident memory and huge pages
  memscope footprint ./my-server --pid 1234";

/// `memscope sweep`.
pub const SWEEP: &str = "\
EXAMPLES:
  # A build knob: each variant built once, the benchmark run interleaved
  memscope sweep -p KIB=8,16,32,64 --keep l1d \\
    --build 'cc -O2 -pthread -DWORK_KIB={KIB} examples/sweep_l1d.c -o l1d' \\
    --metric 'ns/step:lower=ns/step=([0-9.]+)' ./l1d
  # A runtime knob through the environment, 10 blocks
  memscope sweep -p T=1,2,4 --env 'OMP_NUM_THREADS={T}' --runs 10 ./my-program
  # Within a time budget, judging changes of 5% or more
  memscope sweep -p N=1..4 --time-limit 5m --effect 5 './bench --level {N}'";

/// `memscope compare`.
pub const COMPARE: &str = "\
EXAMPLES:
  # Two runs side by side, every shared figure with its verdict
  memscope compare before.json after.json
  # A fleet: every report in a directory, grouped by CPU model
  memscope compare reports/
  # The runs' curves on shared plots
  memscope compare before.json after.json --html compare.html";

/// `memscope history`.
pub const HISTORY: &str = "\
EXAMPLES:
  # Saved runs (--save, or MEMSCOPE_SAVE=1) by host and date
  memscope history
  # Each host's latest run against its earlier ones; exit 1 on a regression
  memscope history --check
  # Import reports made elsewhere or without --save, then check
  memscope history --add other-host.json --check";

/// `memscope restore`.
pub const RESTORE: &str = "\
EXAMPLES:
  # Undo what a killed memscope left (every command also does this first)
  memscope restore";

/// `memscope advise`.
pub const ADVISE: &str = "\
EXAMPLES:
  # What holds the program back in memory, and which remedy buys how much
  memscope advise -- ./my-program --its-flags
  # Within 10 minutes, against this machine's profile, with an HTML report
  memscope advise --time-limit 10m --from run.json --html a.html -- ./prog
  # Fixed 8 blocks per stage; the co-runner on CPU 3
  memscope advise --runs 8 --cpu 3 -- ./my-program";
