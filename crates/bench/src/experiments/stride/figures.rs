//! The comparable figures of stride (for compare, history and the Prometheus export): ns
//! per access at every array size for the orders that tell the matrix apart (the smallest
//! stride measured, one cache line, one base page and the random order), each kernel
//! apart, with its trials' spread. The other strides stay in the report.

use super::{Kernel, StrideResult, StrideRow};
use crate::units::{Bytes, KIB};
use crate::view::figure::{Better, Figure, Figures};

/// The strides compared besides the smallest one: a cache line and a base page.
const KEY_STRIDES: [u64; 2] = [64, 4 * KIB];

impl Figures for StrideResult {
    fn figures(&self) -> Vec<Figure> {
        let smallest = |kernel: Kernel| {
            (self.rows.iter())
                .filter(|r| r.kernel == kernel)
                .filter_map(|r| r.stride_bytes)
                .min()
        };
        (self.rows.iter())
            .filter(|r| match r.stride_bytes {
                Some(s) => KEY_STRIDES.contains(&s) || Some(s) == smallest(r.kernel),
                None => true,
            })
            .map(row_figure)
            .collect()
    }
}

fn row_figure(r: &StrideRow) -> Figure {
    let (order_key, order) = match r.stride_bytes {
        Some(s) => (format!("stride_{s}"), format!("stride {}", Bytes(s))),
        None => ("random".to_string(), "random".to_string()),
    };
    Figure::new(
        "stride",
        format!("{}.{}.{order_key}.ns_per_access", r.kernel, r.bytes),
        format!("{}, {}, {order}", r.kernel, Bytes(r.bytes)),
        "ns",
        r.ns_per_access,
        Better::Lower,
    )
    .spread(r.spread_pct)
}

#[cfg(test)]
mod tests {
    use super::super::samples;
    use super::*;
    use crate::units::MIB;
    use std::collections::HashSet;

    #[test]
    fn every_size_has_the_key_orders_of_each_kernel() {
        let result = samples::stride(8 * MIB);
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "keys are unique");
        // 2 KiB … 8 MiB: 13 sizes × 2 kernels × (8 B, 64 B, 4 KiB, random).
        assert_eq!(figures.len(), 13 * 2 * 4);
        for key in [
            "stride.read.2048.stride_8.ns_per_access",
            "stride.read.2048.stride_64.ns_per_access",
            "stride.saxpy.8388608.stride_4096.ns_per_access",
            "stride.saxpy.8388608.random.ns_per_access",
        ] {
            assert!(keys.contains(key), "{key}");
        }
        assert!(!keys.contains("stride.read.2048.stride_24.ns_per_access"));

        let f = (figures.iter())
            .find(|f| f.key == "stride.read.1048576.stride_4096.ns_per_access")
            .unwrap();
        let row = (result.rows.iter())
            .find(|r| r.kernel == Kernel::Read && r.bytes == MIB && r.stride_bytes == Some(4096))
            .unwrap();
        assert_eq!(f.value, row.ns_per_access);
        assert_eq!(f.label, "read, 1 MiB, stride 4 KiB");
        assert_eq!((f.unit.as_str(), f.better), ("ns", Better::Lower));
        assert_eq!((f.spread_pct, f.step_pct), (Some(12.0), None));
        assert!(figures
            .iter()
            .all(|f| f.metric.is_none() && f.section == "stride"));
    }

    #[test]
    fn the_smallest_stride_measured_stands_for_unit_stride() {
        // Strides 8 and 64 only: both kept, with random.
        let figures = samples::stride_counted(false).figures();
        assert_eq!(figures.len(), 2 * 3);
        let random = figures
            .iter()
            .find(|f| f.key == "stride.read.4096.random.ns_per_access");
        assert_eq!(random.unwrap().label, "read, 4 KiB, random");
    }
}
