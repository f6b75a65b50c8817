//! One cache of buckets read again, for every run a viewer follows, capped in bytes.
//!
//! A viewer keeps per step only an index; a card's buckets are decoded again from
//! the segment (stretch of an events file) that holds them. The buckets of the
//! steps asked for are kept here, of every tag the segment holds, least recently
//! used dropped first: the cards of one screen ask for many tags at the same
//! (thinned) steps, so each segment is decoded once for all of them, while the
//! steps no card draws are not kept. The cap holds across all runs: memory does
//! not grow with the number of runs shown.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// Values kept under a cap on the sum of their sizes, least recently used dropped first.
#[derive(Debug)]
pub struct ByteLru<K, V> {
    cap: u64,
    used: u64,
    clock: u64,
    entries: HashMap<K, Entry<V>>,
    /// Each entry's last use, oldest first: what eviction takes.
    by_use: BTreeMap<u64, K>,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    bytes: u64,
    used_at: u64,
}

impl<K: Hash + Eq + Clone, V: Clone> ByteLru<K, V> {
    /// An empty cache holding at most `cap` bytes.
    pub fn new(cap: u64) -> Self {
        ByteLru {
            cap,
            used: 0,
            clock: 0,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// The bytes held now, never more than the cap.
    pub fn used(&self) -> u64 {
        self.used
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `key`, now the most recently used; None if absent or evicted.
    pub fn get(&mut self, key: &K) -> Option<V> {
        self.clock += 1;
        let entry = self.entries.get_mut(key)?;
        self.by_use.remove(&entry.used_at);
        entry.used_at = self.clock;
        self.by_use.insert(self.clock, key.clone());
        Some(entry.value.clone())
    }

    /// Keeps `value` of `bytes` under `key`, dropping the least recently used until it
    /// fits; a value larger than the cap is not kept (its caller still has it).
    pub fn insert(&mut self, key: K, value: V, bytes: u64) {
        self.remove(&key);
        if bytes > self.cap {
            return;
        }
        while self.used + bytes > self.cap {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if let Some(gone) = self.entries.remove(&oldest) {
                self.used -= gone.bytes;
            }
        }
        self.clock += 1;
        self.by_use.insert(self.clock, key.clone());
        self.entries.insert(
            key,
            Entry {
                value,
                bytes,
                used_at: self.clock,
            },
        );
        self.used += bytes;
    }

    fn remove(&mut self, key: &K) {
        if let Some(gone) = self.entries.remove(key) {
            self.by_use.remove(&gone.used_at);
            self.used -= gone.bytes;
        }
    }
}

/// One step's buckets as kept. Where each bucket starts where the one before ends (as
/// TensorBoard's legacy histograms and every usual writer store them), the first left
/// edge, every right edge and every count: two thirds of the (left, right, count)
/// rows. Otherwise the rows themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct StepBuckets {
    joined: bool,
    values: Arc<[f64]>,
}

impl StepBuckets {
    /// Keeps the flattened (left, right, count) `rows`.
    pub fn from_rows(rows: &[f64]) -> Self {
        let buckets: Vec<&[f64]> = rows.chunks_exact(3).collect();
        // Bit for bit: -0.0 must come back as -0.0.
        let joined = !buckets.is_empty()
            && rows.len().is_multiple_of(3)
            && buckets
                .windows(2)
                .all(|w| w[0][1].to_bits() == w[1][0].to_bits());
        if !joined {
            return StepBuckets {
                joined,
                values: rows.into(),
            };
        }
        let mut values = Vec::with_capacity(2 * buckets.len() + 1);
        values.push(buckets[0][0]);
        values.extend(buckets.iter().map(|b| b[1]));
        values.extend(buckets.iter().map(|b| b[2]));
        StepBuckets {
            joined,
            values: values.into(),
        }
    }

    /// The flattened (left, right, count) rows, as given to [`StepBuckets::from_rows`].
    pub fn rows(&self) -> Vec<f64> {
        if !self.joined {
            return self.values.to_vec();
        }
        let k = self.values.len() / 2;
        let (edges, counts) = self.values.split_at(k + 1);
        let mut rows = Vec::with_capacity(3 * k);
        for (edge, count) in edges.windows(2).zip(counts) {
            rows.extend([edge[0], edge[1], *count]);
        }
        rows
    }

    /// The bytes its numbers take.
    pub fn bytes(&self) -> usize {
        size_of_val(&*self.values)
    }
}

/// Which run loader (by its number), which of its segments, which tag and step.
pub type StepKey = (u64, usize, String, i64);

/// The cache every run loader of one viewer shares.
pub type SharedBuckets = Arc<Mutex<ByteLru<StepKey, StepBuckets>>>;

/// What an entry costs beyond its numbers and tag: its key, the Arc's counts, the
/// map's and the recency list's slots.
const ENTRY_OVERHEAD: usize = 128;

/// A cache of buckets holding at most `cap` bytes, for loaders to share.
pub fn shared_buckets(cap: u64) -> SharedBuckets {
    Arc::new(Mutex::new(ByteLru::new(cap)))
}

/// The bytes the entry of `tag`'s `buckets` holds: what the cap counts.
pub fn entry_bytes(tag: &str, buckets: &StepBuckets) -> u64 {
    (buckets.bytes() + tag.len() + ENTRY_OVERHEAD) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_least_recently_used_goes_first_and_the_cap_holds() {
        let mut cache = ByteLru::new(10);
        cache.insert("a", 1, 4);
        cache.insert("b", 2, 4);
        assert_eq!(cache.get(&"a"), Some(1)); // b is now the oldest
        cache.insert("c", 3, 4);
        assert_eq!(cache.get(&"b"), None);
        assert_eq!(cache.get(&"a"), Some(1));
        assert_eq!(cache.get(&"c"), Some(3));
        assert_eq!(cache.used(), 8);
        cache.insert("d", 4, 10); // takes the whole cap
        assert_eq!((cache.len(), cache.used()), (1, 10));
        cache.insert("e", 5, 11); // larger than the cap: not kept, nothing dropped
        assert_eq!((cache.len(), cache.get(&"d")), (1, Some(4)));
    }

    #[test]
    fn inserting_a_key_again_replaces_its_bytes() {
        let mut cache = ByteLru::new(10);
        cache.insert("a", 1, 6);
        cache.insert("a", 2, 3);
        assert_eq!(
            (cache.len(), cache.used(), cache.get(&"a")),
            (1, 3, Some(2))
        );
    }

    #[test]
    fn an_entry_weighs_its_kept_numbers_and_tag() {
        let joined: Vec<f64> = (0..1000)
            .flat_map(|i| [i as f64, i as f64 + 1.0, 2.0])
            .collect();
        let gapped: Vec<f64> = (0..1000)
            .flat_map(|i| [i as f64, i as f64 + 0.5, 2.0])
            .collect();
        assert_eq!(
            entry_bytes("tag", &StepBuckets::from_rows(&joined)),
            2001 * 8 + 3 + 128
        );
        assert_eq!(
            entry_bytes("tag", &StepBuckets::from_rows(&gapped)),
            3000 * 8 + 3 + 128
        );
    }

    #[test]
    fn buckets_come_back_as_given_bit_for_bit() {
        let cases: [&[f64]; 5] = [
            &[],
            &[0.0, 1.0, 3.0],
            &[-1.0, -0.0, 2.0, -0.0, 1.0, 5.0],
            &[-1.0, -0.0, 2.0, 0.0, 1.0, 5.0], // -0.0 then 0.0: not joined
            &[f64::NAN, f64::NAN, 1.0, f64::NAN, 2.0, 1.0],
        ];
        for rows in cases {
            let kept = StepBuckets::from_rows(rows);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&kept.rows()), bits(rows));
        }
    }

    proptest! {
        /// Any rows, joined or not, come back bit for bit.
        #[test]
        fn kept_buckets_round_trip(
            edges in prop::collection::vec(prop_oneof![Just(0.0), Just(-0.0), any::<f64>()], 1..20),
            counts in prop::collection::vec(any::<f64>(), 0..20),
            gap in any::<bool>(),
        ) {
            let rows: Vec<f64> = edges
                .windows(2)
                .zip(&counts)
                .flat_map(|(e, &c)| [e[0], if gap { e[1] + 1.0 } else { e[1] }, c])
                .collect();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&StepBuckets::from_rows(&rows).rows()), bits(&rows));
        }

        /// Whatever is inserted and looked up, the bytes held stay under the cap, equal
        /// the sum of the entries kept, and the entry used last is kept if it fits.
        #[test]
        fn the_bytes_held_never_pass_the_cap(
            cap in 0u64..100,
            ops in prop::collection::vec((0u8..12, 0u64..60, any::<bool>()), 0..200),
        ) {
            let mut cache = ByteLru::new(cap);
            let mut sizes = HashMap::new();
            for (key, bytes, is_insert) in ops {
                if is_insert {
                    cache.insert(key, bytes, bytes);
                    sizes.insert(key, bytes);
                    prop_assert_eq!(cache.get(&key).is_some(), bytes <= cap);
                } else if let Some(found) = cache.get(&key) {
                    prop_assert_eq!(found, sizes[&key]);
                }
                prop_assert!(cache.used() <= cap);
                let held: u64 = cache.entries.values().map(|e| e.bytes).sum();
                prop_assert_eq!(held, cache.used());
                prop_assert_eq!(cache.by_use.len(), cache.len());
            }
        }
    }
}
