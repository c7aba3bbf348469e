//! The comparable figures of rob (for compare, history and the Prometheus export): each
//! structure's entries (with the step of the K grid around its cliff), the window and the
//! misses in flight read from the serialised grid.

use super::{entries_at, RobResult, RobStructure};
use crate::kernels::jit::Filler;
use crate::view::figure::{ladder_step_pct, Better, Figure, Figures};

impl Figures for RobResult {
    fn figures(&self) -> Vec<Figure> {
        let mut figures = Vec::new();
        for st in &self.structures {
            let Some(entries) = st.entries else { continue };
            figures.push(
                Figure::new(
                    "rob",
                    format!("structure.{}.entries", st.filler),
                    format!("{} entries ({} filler)", st.structure, st.filler),
                    "",
                    f64::from(entries),
                    Better::Neither,
                )
                .step(entries_step_pct(self, st, entries).unwrap_or(f64::NAN))
                .metric(
                    "rob_entries",
                    "Entries of an out-of-order structure, from the cliff of its filler",
                    &[("structure", st.structure.to_string())],
                    1.0,
                ),
            );
        }
        if let Some(window) = self.serialized_window {
            // At two misses the window at K is entries_at(nop, K) = K + 1.
            let mut ladder: Vec<u64> = (self.serialized.iter())
                .filter(|r| r.misses == 2)
                .map(|r| u64::from(entries_at(Filler::Nop, r.k)))
                .collect();
            ladder.sort_unstable();
            ladder.dedup();
            let step = ladder_step_pct(&ladder, u64::from(window));
            figures.push(
                Figure::new(
                    "rob",
                    "serialized.window_entries",
                    "window, serialised blocks",
                    "",
                    f64::from(window),
                    Better::Neither,
                )
                .step(step.unwrap_or(f64::NAN)),
            );
        }
        if let Some(mlp) = self.serialized_mlp {
            figures.push(Figure::new(
                "rob",
                "serialized.misses_in_flight",
                "misses in flight, serialised blocks",
                "",
                mlp,
                Better::Higher,
            ));
        }
        figures.retain(|f| f.value.is_finite());
        figures
    }
}

/// One step of the K grid measured around a structure's cliff, in entries (the K values
/// of its filler's curve mapped to the entries they imply).
fn entries_step_pct(result: &RobResult, st: &RobStructure, entries: u32) -> Option<f64> {
    let filler = st.filler;
    let mut ladder: Vec<u64> = (result.rows.iter())
        .filter(|r| r.filler == st.filler)
        .map(|r| u64::from(entries_at(filler, r.k) + st.architectural))
        .collect();
    ladder.sort_unstable();
    ladder.dedup();
    ladder_step_pct(&ladder, u64::from(entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::rob::samples;
    use crate::view::figure::find;
    use std::collections::HashSet;

    #[test]
    fn structures_window_and_mlp_with_their_grid_steps() {
        let result = samples::rob();
        let figures = result.figures();
        let keys: HashSet<&str> = figures.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys.len(), figures.len(), "unique keys");
        assert!(figures.iter().all(|f| f.section == "rob"));
        // Three cliffs (store has none), the window and the MLP.
        assert_eq!(figures.len(), 5);
        assert!(!keys.contains("rob.structure.store.entries"));

        let nop = find(&figures, "rob.structure.nop.entries");
        assert_eq!((nop.value, nop.better), (224.0, Better::Neither));
        assert_eq!(nop.label, "reorder buffer entries (nop filler)");
        // K every 16: entries 209, 225, 241 around 224.
        let step = nop.step_pct.unwrap();
        assert!(
            (step - (225.0 / 209.0 - 1.0) * 100.0).abs() < 1e-9,
            "{step}"
        );
        assert_eq!(nop.spread_pct, None);
        let metric = nop.metric.as_ref().unwrap();
        assert_eq!(metric.name, "rob_entries");
        let labels = vec![("structure".to_string(), "reorder buffer".to_string())];
        assert_eq!((metric.labels.clone(), metric.scale), (labels, 1.0));
        assert_eq!(find(&figures, "rob.structure.load.entries").value, 72.0);

        let window = find(&figures, "rob.serialized.window_entries");
        assert_eq!(window.value, 224.0);
        assert!(window.step_pct.unwrap() > 10.0, "K every 32 near 224");
        let mlp = find(&figures, "rob.serialized.misses_in_flight");
        assert_eq!((mlp.value, mlp.better), (3.6, Better::Higher));
        assert_eq!((mlp.step_pct, mlp.metric.clone()), (None, None));
    }

    #[test]
    fn missing_and_empty_results_give_fewer_figures() {
        assert!(RobResult::default().figures().is_empty());
        let figures = samples::nan_rob().figures();
        assert_eq!(figures.len(), 3, "{figures:?}");
        assert!(figures.iter().all(|f| f.key.starts_with("rob.structure.")));
    }
}
