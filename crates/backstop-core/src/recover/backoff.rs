//! Delays between attempts: exponential growth, spread by jitter, bounded by a cap, and never
//! shorter than a server's retry hint.
//!
//! Randomness comes from a seed the caller passes: the same seed, task and attempt always give
//! the same delay, so steps can be replayed and tested.

use super::strategy::{BackoffConfig, BackoffKind};

/// A deterministic random stream (`SplitMix64`): small, fast and good enough to spread delays.
#[derive(Debug, Clone, Copy)]
pub struct Jitter(u64);

impl Jitter {
    /// A stream for one decision, from a seed and the parts that make it unique.
    pub fn new(seed: u64, parts: &[u64]) -> Jitter {
        let mut state = seed;
        for part in parts {
            state = mix(state ^ part.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
        Jitter(state)
    }

    /// The next number in `0..=max`.
    pub fn upto(&mut self, max: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let x = mix(self.0);
        if max == u64::MAX { x } else { x % (max + 1) }
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hash of a task name, to make its delays its own.
pub fn task_hash(task: &str) -> u64 {
    // FNV-1a: stable across runs and platforms, unlike the std hasher.
    task.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The exponential delay before attempt `attempt` (0 for the first retry), capped.
pub fn exponential_ms(config: &BackoffConfig, attempt: u32) -> u64 {
    let factor = config
        .multiplier
        .powi(i32::try_from(attempt.min(1000)).unwrap_or(1000));
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let raw = (config.base_ms as f64 * factor).min(config.cap_ms as f64) as u64;
    raw.min(config.cap_ms)
}

/// The computed delay for an attempt, before any server hint.
///
/// `previous_ms` is the delay given before (for decorrelated jitter; 0 for none).
pub fn delay_ms(
    config: &BackoffConfig,
    kind: BackoffKind,
    attempt: u32,
    previous_ms: u64,
    jitter: &mut Jitter,
) -> u64 {
    let ceiling = exponential_ms(config, attempt);
    match kind {
        BackoffKind::None => ceiling,
        BackoffKind::FullJitter => jitter.upto(ceiling),
        BackoffKind::EqualJitter => ceiling / 2 + jitter.upto(ceiling - ceiling / 2),
        BackoffKind::Decorrelated => {
            let low = config.base_ms;
            let high = previous_ms
                .max(low)
                .saturating_mul(3)
                .min(config.cap_ms)
                .max(low);
            low + jitter.upto(high - low)
        }
    }
}

/// The delay when the server gave a hint: the hint itself, never less, plus a little jitter so
/// that clients told the same time do not all come back at once.
pub fn hinted_ms(config: &BackoffConfig, hint_ms: u64, jitter: &mut Jitter) -> u64 {
    let spread = config.hint_jitter_ms.min(hint_ms / 10 + 1);
    hint_ms.saturating_add(jitter.upto(spread))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn config() -> BackoffConfig {
        BackoffConfig {
            kind: BackoffKind::FullJitter,
            base_ms: 100,
            multiplier: 2.0,
            cap_ms: 10_000,
            hint_jitter_ms: 250,
        }
    }

    #[test]
    fn exponential_grows_then_caps() {
        let c = config();
        let delays: Vec<u64> = (0..9).map(|a| exponential_ms(&c, a)).collect();
        assert_eq!(
            delays,
            [100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]
        );
        assert_eq!(exponential_ms(&c, u32::MAX), 10_000);
    }

    #[test]
    fn the_same_seed_gives_the_same_delays() {
        let c = config();
        let run = |seed| {
            let mut j = Jitter::new(seed, &[task_hash("t"), 3]);
            (0..5)
                .map(|a| delay_ms(&c, BackoffKind::FullJitter, a, 0, &mut j))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn equal_jitter_keeps_at_least_half() {
        let c = config();
        let mut j = Jitter::new(1, &[]);
        for attempt in 0..10 {
            let d = delay_ms(&c, BackoffKind::EqualJitter, attempt, 0, &mut j);
            let ceiling = exponential_ms(&c, attempt);
            assert!(d >= ceiling / 2 && d <= ceiling, "{d} {ceiling}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(11),
            ..ProptestConfig::default()
        })]

        #[test]
        fn a_delay_is_never_above_the_cap(seed in any::<u64>(), attempt in 0u32..64, prev in 0u64..100_000, kind in 0usize..4) {
            let c = config();
            let kind = [BackoffKind::FullJitter, BackoffKind::EqualJitter, BackoffKind::Decorrelated, BackoffKind::None][kind];
            let d = delay_ms(&c, kind, attempt, prev, &mut Jitter::new(seed, &[]));
            prop_assert!(d <= c.cap_ms);
            if kind == BackoffKind::Decorrelated {
                prop_assert!(d >= c.base_ms);
            }
        }

        #[test]
        fn a_hinted_delay_is_never_below_the_hint(seed in any::<u64>(), hint in 0u64..10_000_000) {
            let c = config();
            let d = hinted_ms(&c, hint, &mut Jitter::new(seed, &[]));
            prop_assert!(d >= hint);
            prop_assert!(d <= hint + c.hint_jitter_ms);
        }
    }
}
