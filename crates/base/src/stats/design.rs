//! Randomized block designs: each block runs every arm (variant, page policy) once, in an
//! order shuffled per block, so a drift of the machine's speed over time falls on all
//! arms alike instead of on whichever ran last.

/// A Fisher–Yates shuffler on a xorshift stream: fast, reproducible from its seed, and
/// good enough to decorrelate run order from time (nothing here needs a cryptographic
/// generator).
#[derive(Debug, Clone)]
pub struct Shuffler {
    state: u64,
}

impl Shuffler {
    /// A shuffler seeded from the clock.
    pub fn from_clock() -> Shuffler {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Shuffler::seeded(nanos)
    }

    /// A shuffler with a fixed seed (tests, reproducible orders).
    pub fn seeded(seed: u64) -> Shuffler {
        Shuffler { state: seed | 1 }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// A uniform value in [0, 1) (53 random bits), e.g. for simulations in tests.
    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Puts `items` in a uniformly random order.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }

    /// 0..n in a random order: one block's run order.
    pub fn block(&mut self, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        self.shuffle(&mut order);
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_a_permutation_and_orders_vary() {
        let mut shuffler = Shuffler::seeded(42);
        let mut first_positions = [0usize; 4];
        for _ in 0..400 {
            let block = shuffler.block(4);
            let mut sorted = block.clone();
            sorted.sort();
            assert_eq!(sorted, vec![0, 1, 2, 3]);
            first_positions[block[0]] += 1;
        }
        // Each arm runs first about a quarter of the time.
        assert!(
            first_positions.iter().all(|&n| n > 60),
            "{first_positions:?}"
        );
    }
}
