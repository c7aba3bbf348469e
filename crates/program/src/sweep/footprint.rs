//! The variants' footprints compared: after every variant is built and read by
//! `binary::footprint`, each one's summary keeps only the static and TLS objects whose
//! size (or, for a TLS pointer, its pointee's size) differs between the variants, so a
//! knob that grows a static struct or a per-thread heap shows by name; and the table of
//! those objects, one column per variant.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{FootprintSummary, SweepResult};
use crate::binary::FootprintResult;
use crate::view::format;
use crate::view::{Column, Table};

/// Rows of the table before the rest is left to the JSON.
const MAX_ROWS: usize = 25;

/// One object of a variant's binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectSize {
    pub name: String,
    pub tls: bool,
    pub bytes: u64,
    /// A TLS pointer's pointee, bytes (per thread, outside the TLS block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pointee_bytes: Option<u64>,
}

/// Every object of a footprint (all TLS objects and every static one it lists).
pub(super) fn objects(result: &FootprintResult) -> Vec<ObjectSize> {
    result
        .objects
        .iter()
        .map(|o| ObjectSize {
            name: o.name.clone(),
            tls: o.tls,
            bytes: o.bytes,
            pointee_bytes: o.pointee.as_ref().map(|p| p.size),
        })
        .collect()
}

type Key = (bool, String);
type Sizes = Vec<(u64, Option<u64>)>;

/// Each summary's objects by (tls, name): a name can occur more than once (static
/// variables of the same name in different files), so its sizes, sorted.
fn by_key(summary: &FootprintSummary) -> BTreeMap<Key, Sizes> {
    let mut map: BTreeMap<Key, Sizes> = BTreeMap::new();
    for o in &summary.differing {
        map.entry((o.tls, o.name.clone()))
            .or_default()
            .push((o.bytes, o.pointee_bytes));
    }
    for sizes in map.values_mut() {
        sizes.sort_unstable();
    }
    map
}

/// Keeps in each summary only the objects whose sizes differ between the summaries (an
/// object missing from some variant differs too); with fewer than two summaries nothing
/// is compared and nothing kept.
pub(super) fn keep_differing(summaries: &mut [&mut FootprintSummary]) {
    if summaries.len() < 2 {
        for s in summaries.iter_mut() {
            s.differing.clear();
        }
        return;
    }
    let maps: Vec<BTreeMap<Key, Sizes>> = summaries.iter().map(|s| by_key(s)).collect();
    let keys: BTreeSet<&Key> = maps.iter().flat_map(|m| m.keys()).collect();
    let empty = Sizes::new();
    let differs: BTreeSet<Key> = keys
        .into_iter()
        .filter(|key| {
            let first = maps[0].get(*key).unwrap_or(&empty);
            maps.iter().any(|m| m.get(*key).unwrap_or(&empty) != first)
        })
        .cloned()
        .collect();
    for s in summaries.iter_mut() {
        s.differing
            .retain(|o| differs.contains(&(o.tls, o.name.clone())));
    }
}

impl SweepResult {
    /// The objects whose size differs between the variants, one column per variant; None
    /// when no variant's binary was read or none differs.
    pub(super) fn footprint_differences(&self) -> Option<Table> {
        let read: Vec<(usize, &FootprintSummary)> = self
            .variants
            .iter()
            .enumerate()
            .filter_map(|(v, info)| Some((v, info.footprint.as_ref()?)))
            .collect();
        let (_, first) = read.first()?;
        // Rows: TLS objects first, then by the largest size any variant gives.
        let mut rows: BTreeMap<Key, u64> = BTreeMap::new();
        for (_, f) in &read {
            for o in &f.differing {
                let size = o.bytes.max(o.pointee_bytes.unwrap_or(0));
                let entry = rows.entry((o.tls, o.name.clone())).or_default();
                *entry = (*entry).max(size);
            }
        }
        if rows.is_empty() {
            return None;
        }
        let mut rows: Vec<(Key, u64)> = rows.into_iter().collect();
        rows.sort_by(|a, b| {
            b.0 .0
                .cmp(&a.0 .0)
                .then(b.1.cmp(&a.1))
                .then(a.0 .1.cmp(&b.0 .1))
        });
        let mut columns = vec![Column::text("object"), Column::text("kind")];
        columns.extend(
            read.iter()
                .map(|(v, _)| Column::text(self.variants[*v].label.clone())),
        );
        let mut table = Table::new(columns).titled(format!(
            "Objects of {} whose size differs between the variants (bytes)",
            first.binary
        ));
        for ((tls, name), _) in rows.iter().take(MAX_ROWS) {
            let mut row = vec![
                name.clone(),
                if *tls { "TLS" } else { "static" }.to_string(),
            ];
            for (_, f) in &read {
                let sizes: Vec<String> = f
                    .differing
                    .iter()
                    .filter(|o| o.tls == *tls && o.name == *name)
                    .map(|o| {
                        let own = format::thousands(o.bytes as f64);
                        match o.pointee_bytes {
                            Some(p) => format!("{own} → {}", format::thousands(p as f64)),
                            None => own,
                        }
                    })
                    .collect();
                row.push(if sizes.is_empty() {
                    format::DASH.to_string()
                } else {
                    sizes.join(", ")
                });
            }
            table.row(row);
        }
        table.note(
            "only the objects whose size differs (— absent from that variant); a → b: a TLS \
             pointer of a bytes to b bytes allocated per thread, outside the TLS block",
        );
        if rows.len() > MAX_ROWS {
            table.note(format!(
                "{} more in the JSON (variants[].footprint.differing)",
                rows.len() - MAX_ROWS
            ));
        }
        Some(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(objects: &[(&str, bool, u64, Option<u64>)]) -> FootprintSummary {
        FootprintSummary {
            binary: "libx.so".into(),
            tls_bytes: 9,
            static_bytes: 0,
            largest_tls: Vec::new(),
            l1d_bytes: None,
            l2_bytes: None,
            tls_pointee_bytes: 0,
            differing: objects
                .iter()
                .map(|(name, tls, bytes, pointee_bytes)| ObjectSize {
                    name: name.to_string(),
                    tls: *tls,
                    bytes: *bytes,
                    pointee_bytes: *pointee_bytes,
                })
                .collect(),
        }
    }

    #[test]
    fn only_objects_that_differ_are_kept() {
        let mut a = summary(&[
            ("_mi_heap_main", false, 2576, None),
            ("_mi_heap_default", true, 8, Some(2576)),
            ("recurse", true, 1, None),
            ("buffer", false, 16, None),
            ("buffer", false, 32, None),
            ("gone", false, 4, None),
        ]);
        let mut b = summary(&[
            ("_mi_heap_main", false, 4112, None),
            ("_mi_heap_default", true, 8, Some(4112)),
            ("recurse", true, 1, None),
            ("buffer", false, 32, None),
            ("buffer", false, 16, None),
        ]);
        keep_differing(&mut [&mut a, &mut b]);
        let names = |s: &FootprintSummary| {
            s.differing
                .iter()
                .map(|o| o.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&a), ["_mi_heap_main", "_mi_heap_default", "gone"]);
        assert_eq!(names(&b), ["_mi_heap_main", "_mi_heap_default"]);
        let mut alone = summary(&[("x", false, 1, None)]);
        keep_differing(&mut [&mut alone]);
        assert!(alone.differing.is_empty());
    }
}
