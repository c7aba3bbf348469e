//! The flags of `memscope files` and how they, with the measuring flags, become a
//! `FilesConfig`; the quick form the full profile runs.

use std::path::PathBuf;

use clap::Args;

use super::FilesConfig;
use crate::error::UsageError;
use crate::experiments::params::{invalid, parse_count, CommandArgs, MeasureArgs, MeasurePlan};
use crate::topology::Machine;
use crate::units::{Bytes, KIB, MIB};

#[derive(Debug, Clone, Default, Args)]
#[command(after_help = crate::examples::FILES)]
pub struct FilesArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,

    /// Directory to make the test files in (a fresh subdirectory, removed afterwards)
    /// [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<String>,

    /// File sizes: a list (4K,1M,64M) or a range FIRST..LAST in steps of ×4 (FIRST..LAST:*F
    /// for another factor); rounded up to 4 KiB. The test files take at most a quarter of
    /// the free space [default: 4K..1G, 1.33 GiB written; with --quick 4K,64K,1M,16M,64M,
    /// 81 MiB].
    #[arg(long, value_name = "SIZES")]
    pub sizes: Option<String>,

    /// Block sizes of the cold sequential sweep, as --sizes [default: 4K..4M; with --quick
    /// 4K,64K,1M].
    #[arg(long = "block", value_name = "SIZES")]
    pub blocks: Option<String>,

    /// io_uring queue depths of the random 4 KiB reads (pread runs at depth 1 beside them)
    /// [default: 1,4,16,32; with --quick 1,32].
    #[arg(long, value_name = "DEPTHS")]
    pub depth: Option<String>,

    /// Random reads per queue depth [default: 20000; with --quick 2000].
    #[arg(long, value_name = "N", value_parser = crate::flags::count(16, 10_000_000))]
    pub reads: Option<usize>,
}

impl CommandArgs for FilesArgs {
    fn measure(&self) -> &MeasureArgs {
        &self.measure
    }
}

/// Sizes from a list or a geometric range, rounded up to 4 KiB, ascending, each once.
pub fn parse_sizes(flag: &'static str, text: &str) -> Result<Vec<u64>, UsageError> {
    let expected = "sizes as a list (4K,1M,64M) or a range FIRST..LAST[:*FACTOR] with FIRST ≤ \
                    LAST, from 4K to 64G";
    let one = |s: &str| -> Result<u64, UsageError> {
        let b = Bytes::parse(s.trim())?.0;
        if !(1..=64 << 30).contains(&b) {
            return Err(invalid(flag, text, expected));
        }
        Ok(b.next_multiple_of(4 * KIB))
    };
    let mut sizes = match text.split_once("..") {
        Some((first, rest)) => {
            let (last, factor) = match rest.split_once(":*") {
                Some((last, f)) => (last, f.trim().parse::<u64>().ok().filter(|f| *f >= 2)),
                None => (rest, Some(4)),
            };
            let (first, last) = (one(first)?, one(last)?);
            let factor = factor.ok_or_else(|| invalid(flag, text, expected))?;
            if first > last {
                return Err(invalid(flag, text, expected));
            }
            let mut sizes = Vec::new();
            let mut s = first;
            while s <= last {
                sizes.push(s);
                // A next size beyond u64 is beyond LAST too: the range ends here.
                match s.checked_mul(factor) {
                    Some(next) => s = next,
                    None => break,
                }
            }
            sizes
        }
        None => text.split(',').map(one).collect::<Result<Vec<_>, _>>()?,
    };
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

impl FilesConfig {
    /// The test directory checked (it must exist and be a directory), the lists parsed.
    pub fn resolve(
        args: &FilesArgs,
        measure: &MeasurePlan,
        _machine: &Machine,
    ) -> Result<FilesConfig, UsageError> {
        let dir = PathBuf::from(args.dir.as_deref().unwrap_or("."));
        if !dir.is_dir() {
            return Err(invalid(
                "--dir",
                &dir.to_string_lossy(),
                "an existing directory to make the test files in",
            ));
        }
        // --quick is the full profile's form (the full list with shorter trials took 43 s
        // and wrote 1.33 GiB here); a list the user gave is kept as given.
        let quick = measure.quick.then(FilesConfig::quick_profile);
        let depths = match (&args.depth, &quick) {
            (Some(text), _) => text
                .split(',')
                .map(|d| parse_count("--depth", d, 1, 4096))
                .collect::<Result<Vec<_>, _>>()?,
            (None, Some(q)) => q.depths.clone(),
            (None, None) => vec![1, 4, 16, 32],
        };
        let sizes = match (&args.sizes, &quick) {
            (Some(text), _) => parse_sizes("--sizes", text)?,
            (None, Some(q)) => q.sizes.clone(),
            (None, None) => parse_sizes("--sizes", "4K..1G")?,
        };
        let blocks = match (&args.blocks, &quick) {
            (Some(text), _) => parse_sizes("--block", text)?,
            (None, Some(q)) => q.blocks.clone(),
            (None, None) => parse_sizes("--block", "4K..4M")?,
        };
        let random_reads = match (&args.reads, &quick) {
            (Some(n), _) => *n,
            (None, Some(q)) => q.random_reads,
            (None, None) => 20_000,
        };
        let repetitions = match (&args.measure.repetitions, &quick) {
            (None, Some(q)) => q.repetitions,
            _ => measure.repetitions.min(7),
        };
        Ok(FilesConfig {
            dir,
            sizes,
            sizes_given: args.sizes.is_some(),
            blocks,
            read_block: MIB,
            depths,
            random_reads,
            sweep_bytes: quick.as_ref().map_or(256 * MIB, |q| q.sweep_bytes),
            repetitions,
            trial_ns: if measure.quick { 5e6 } else { 20e6 },
        })
    }

    /// The full profile's quick form, in the current directory: five sizes up to 64 MiB,
    /// three block sizes, depths 1 and 32, 2000 reads, 3 trials.
    pub fn quick_profile() -> FilesConfig {
        FilesConfig {
            dir: PathBuf::from("."),
            sizes: vec![4 * KIB, 64 * KIB, MIB, 16 * MIB, 64 * MIB],
            sizes_given: false,
            blocks: vec![4 * KIB, 64 * KIB, MIB],
            read_block: MIB,
            depths: vec![1, 32],
            random_reads: 2000,
            sweep_bytes: 64 * MIB,
            repetitions: 3,
            trial_ns: 5e6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(quick: bool) -> MeasurePlan {
        MeasurePlan {
            cpu: 0,
            pages: crate::platform::arena::PagePolicy::Base,
            quick,
            repetitions: if quick { 5 } else { 9 },
            trial_ns: 1e6,
            max_size: Bytes(64 * MIB),
            max_size_given: false,
            reserve_hugepages: false,
            until_stable: None,
        }
    }

    fn args(flags: &[&str]) -> FilesArgs {
        use clap::{FromArgMatches, Parser};
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            files: FilesArgs,
        }
        let mut argv = vec!["files"];
        argv.extend(flags);
        Cli::from_arg_matches(&<Cli as clap::CommandFactory>::command().get_matches_from(argv))
            .unwrap()
            .files
    }

    #[test]
    fn quick_writes_the_profile_s_81_mib_and_keeps_lists_given() {
        let machine = Machine::default();
        let written = |c: &FilesConfig| c.sizes.iter().sum::<u64>();
        let quick = FilesConfig::resolve(&args(&[]), &plan(true), &machine).unwrap();
        let profile = FilesConfig::quick_profile();
        assert_eq!(quick.sizes, profile.sizes);
        assert!(written(&quick) <= 256 * MIB, "{}", written(&quick));
        assert_eq!(
            (
                quick.blocks.clone(),
                quick.depths.clone(),
                quick.random_reads
            ),
            (profile.blocks, profile.depths, profile.random_reads)
        );
        assert_eq!(quick.repetitions, profile.repetitions);
        assert!(!quick.sizes_given);
        // Without --quick, the full list; with --quick, what was given stays.
        let full = FilesConfig::resolve(&args(&[]), &plan(false), &machine).unwrap();
        assert_eq!(*full.sizes.last().unwrap(), 1 << 30);
        let given = FilesConfig::resolve(
            &args(&["--sizes", "4K..1G", "--reads", "300", "--repetitions", "4"]),
            &plan(true),
            &machine,
        )
        .unwrap();
        assert_eq!(*given.sizes.last().unwrap(), 1 << 30);
        assert_eq!(given.random_reads, 300);
    }

    #[test]
    fn sizes_parse_as_lists_and_ranges() {
        assert_eq!(
            parse_sizes("--sizes", "4K..1M").unwrap(),
            vec![4096, 16384, 65536, 262144, 1 << 20]
        );
        assert_eq!(parse_sizes("--sizes", "4K..32K:*2").unwrap().len(), 4);
        assert_eq!(
            parse_sizes("--sizes", "1M,4K,1M,5000").unwrap(),
            vec![4096, 8192, 1 << 20]
        );
        for bad in ["", "1M..4K", "4K..1M:*1", "0", "128G", "lots"] {
            assert!(parse_sizes("--sizes", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_huge_factor_ends_the_range_instead_of_overflowing() {
        // Found by tests/hostile_input.rs: size × factor overflowed u64 (a panic in debug
        // builds; in release a wrapped 0 looped forever, filling memory).
        assert_eq!(
            parse_sizes("--sizes", "1K..1K:*4503599627370496").unwrap(),
            vec![4096]
        );
        assert_eq!(
            parse_sizes("--sizes", &format!("4K..64G:*{}", u64::MAX)).unwrap(),
            vec![4096]
        );
        assert_eq!(
            parse_sizes("--sizes", "4K..64G:*9223372036854775808").unwrap(),
            vec![4096]
        );
    }
}
