//! A loop's trip count from its samples taken as a whole, net of the
//! refill its exit costs.
//!
//! In a tight loop of conditional branches every sample may be a
//! mispredict's refetch (it lands just after a branch), so no block of the
//! loop gives a clean ratio and its trip count was left to conservation,
//! which cannot see it (btree's `find_index`, codec's `rle_encode`: their
//! inner loops came out at one trip per entry, −80 to −100 %). Yet the
//! loop's samples together say how many cycles it took, and a loop whose
//! trip count varies mispredicts its exit about once per entry: the cycles
//! less one refill per entry, over the best case of one trip along its hot
//! path, is how often its header ran (on the recorded find_index: 422 M
//! cycles, 19.6 M entries × 17, 1.0 cycle a trip → 89 M, callgrind 102 M).
//! Where the loop's header has an estimate of its own, the total is a
//! second measure beside it (`cpi.rs` `add_loop_totals`).
//!
//! A loop around a switch (an interpreter's dispatch through a jump
//! table) mispredicts inside its body too: each trip also pays a refill as
//! often as the case changes from one trip to the next, 1 − Σ p² for cases
//! taken with shares p in a random order ([`dispatch_mispredicts`]; 0.86
//! for kernels' interp, whose trips take 16 cycles on Zen 4 against 2 at
//! best). That holds only where the refills counted at the cases bear it
//! out ([`dispatch_total`]): a predictable dispatch leaves none there. An
//! if/else inside a loop is a switch of two, 2p(1 − p) refills a trip
//! (eventsim's heap `pop`, choosing the smaller child: +50..+97 % on its
//! loop without them, within ±11 % with them).
//!
//! Where nothing was counted past the exits (they return to callers),
//! only the exit branch's resolution is the loop's: half a refill per
//! entry ([`UNSEEN_EXIT_REFILL`]; btree's `find_index`).
//!
//! A machine description may give what a mispredicted exit leaves in the
//! loop as measured on its recorded profiles (`loop_exit_cycles`,
//! `unseen_loop_exit_cycles`: `benches/loop_entry_costs.py`'s X). On
//! Zen 5 it is well under the penalty (9 and 5 cycles of 15: the refetch,
//! 15-19 cycles there, lands past the exit); on Zen 4 the medians match
//! the penalty and half of it.
//!
//! Limits: the refill is the machine's nominal penalty, and when it is
//! most of the loop's cycles the answer is only as good as that figure
//! (hence a wide error, and the blocks stay low confidence); other
//! mispredicts inside the body and load misses count as trips (an
//! estimate from above); a loop whose exit is predicted loses a refill per
//! entry it did not pay (an estimate from below, small where trips are
//! many); a dispatch whose predictor does better than chance on a stream
//! it has half learned is charged too many refills (an estimate from
//! below). Loops with direct calls are left alone (their counts are tied
//! to their callees' entries in the linked solve, and their trips' cycles
//! include the calls' own, which the model does not see); a loop calling
//! through a pointer has nothing else to say how often it ran, and takes
//! its total (samples on the call's return address are the callee's).

/// Relative error of the refill per entry (the penalty varies with what
/// the refill finds in the caches; find_index's fits 16.4 of 17 cycles).
pub const REFILL_ERROR: f64 = 0.35;

/// Relative error of the entries (themselves an estimate, from the
/// blocks around the loop or its callers), which the refills multiply.
pub const ENTRIES_ERROR: f64 = 0.25;

/// Share of a refill a loop pays per entry where no refill was counted
/// past its exits: the exit branch's resolution stays in the loop, the
/// refetch lands where its exits lead, out of the loop's samples (btree's
/// `find_index` returns to three callers). Measured: find_index's exact
/// bytes at random trip counts 0-15 took 4.7 cycles a call over the same
/// trips predicted (13 a refill, Zen 4); its recordings, at the true trips
/// and entries, 4.4-9.7 (0.34-0.74 of a refill). Applied where a whole
/// refill overfilled the loop only, at 0.4 / 0.5 / 0.6 the 55 cells'
/// scaled ±10 % read 73.0 / 73.5 / 73.4 % (72.6 between bounds); to every
/// such loop, 74.1 % at 0.5.
pub const UNSEEN_EXIT_REFILL: f64 = 0.5;

/// Below this share of the loop's cycles left after the refills, the
/// remainder is noise in the refill's figure: no estimate.
const MIN_NET_SHARE: f64 = 0.2;

/// Share of a dispatch loop's expected mispredicts that the refills
/// counted at its cases must reach for its total to stand
/// ([`dispatch_total`]). On kernels' interp the counted refills are
/// 0.4-0.5 of the expected ones (a refill leaves about 9 of its 13 cycles
/// at the case it lands on).
pub const DISPATCH_EVIDENCE: f64 = 0.25;

/// Relative error of a dispatch loop's mispredicts a trip (a guess from
/// how its cases are shared out, not a count).
pub const DISPATCH_ERROR: f64 = 0.3;

/// Mispredicts a trip of a loop around a switch whose cases ran `runs`
/// times each: how often two trips in a row take different cases when
/// the cases come in a random order, 1 − Σ p². Without runs, every case
/// alike.
pub fn dispatch_mispredicts(runs: &[f64]) -> f64 {
    let all: f64 = runs.iter().map(|r| r.max(0.0)).sum();
    if all > 0.0 {
        1.0 - runs.iter().map(|r| (r.max(0.0) / all).powi(2)).sum::<f64>()
    } else if runs.is_empty() {
        0.0
    } else {
        1.0 - 1.0 / runs.len() as f64
    }
}

/// A dispatch loop's header frequency `e` (from [`header_frequency`] with
/// `mispredicts` refills a trip in the trip's cycles), kept only where
/// the refills `counted` at its cases bear the mispredicts out, with the
/// guess's error added.
pub fn dispatch_total(e: (f64, f64), mispredicts: f64, counted: f64) -> Option<(f64, f64)> {
    (counted >= DISPATCH_EVIDENCE * e.0 * mispredicts)
        .then(|| (e.0, (e.1 * e.1 + (DISPATCH_ERROR * e.0).powi(2)).sqrt()))
}

/// Samples that landed in and around one loop.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoopSamples {
    /// On the loop's instructions other than its header's first.
    pub inside: f64,
    /// On the header's first instruction: skid from the instruction before
    /// it, which is the loop's own (a back edge) or the entry's.
    pub on_header: f64,
    /// On the first instructions of blocks only the loop leads to (skid
    /// from its exit branches, and where their refill lands).
    pub on_exits: f64,
}

impl LoopSamples {
    /// Every sample in and around the loop.
    pub fn all(&self) -> f64 {
        self.inside + self.on_header + self.on_exits
    }
}

/// How often the header ran, and the standard error, from `s`, `entries`
/// (times the loop was entered), `trip_cycles` (best-case cycles of one
/// trip along the hot path), `cycles_per_sample` and `refill` (cycles of
/// one mispredict). None where the refills would take nearly all of it.
pub fn header_frequency(
    s: LoopSamples,
    entries: f64,
    trip_cycles: f64,
    cycles_per_sample: f64,
    refill: f64,
) -> Option<(f64, f64)> {
    if trip_cycles <= 0.0 || cycles_per_sample <= 0.0 || entries <= 0.0 {
        return None;
    }
    let own = s.inside + s.on_exits;
    let refills = entries * refill;
    // The header's first samples are shared with the entries in
    // proportion to how often each leads there: a fixed point, reached
    // from above (from below it stops at once at `entries`, where the
    // back edges get no share and the refills take everything else).
    let mut freq = f64::INFINITY;
    for _ in 0..20 {
        let back_share = (1.0 - entries / freq.max(entries)).max(0.0);
        let gross = (own + s.on_header * back_share) * cycles_per_sample;
        let net = gross - refills;
        let next = (net / trip_cycles).max(entries);
        if (next - freq).abs() <= 1e-6 * next {
            freq = next;
            break;
        }
        freq = next;
    }
    let gross = (own + s.on_header * (1.0 - entries / freq).max(0.0)) * cycles_per_sample;
    if gross <= 0.0 || gross - refills < MIN_NET_SHARE * gross {
        return None;
    }
    let samples = gross / cycles_per_sample;
    let sd_refill = (REFILL_ERROR * REFILL_ERROR + ENTRIES_ERROR * ENTRIES_ERROR).sqrt() * refills
        / trip_cycles;
    let sd_count = samples.sqrt() * cycles_per_sample / trip_cycles;
    let sd_model = crate::frequency::MODEL_ERROR * freq;
    let sd = (sd_refill * sd_refill + sd_count * sd_count + sd_model * sd_model).sqrt();
    Some((freq, sd))
}

/// A loop's header frequency where one refill per entry leaves no room
/// for its trips ([`overfilled`]; half a refill where no refill is
/// counted past its exits, [`UNSEEN_EXIT_REFILL`]): the refill per entry
/// is then what is wrong (an exit the predictor learned costs none), and
/// nothing says how much was paid. The trips lie between one per entry
/// and all the loop's cycles at its best case: their middle in log terms,
/// at an error as large as itself (a guess). None where that range is
/// empty.
pub fn between_bounds(
    s: LoopSamples,
    entries: f64,
    trip_cycles: f64,
    cycles_per_sample: f64,
) -> Option<(f64, f64)> {
    if trip_cycles <= 0.0 || entries <= 0.0 {
        return None;
    }
    let most = s.all() * cycles_per_sample / trip_cycles;
    (most > entries).then(|| {
        let mid = (most * entries).sqrt();
        (mid, mid)
    })
}

/// The share of the cycles of the loop's samples `s` that one refill for
/// each of `entries` would take; None without samples.
fn refill_share(s: LoopSamples, entries: f64, cycles_per_sample: f64, refill: f64) -> Option<f64> {
    let gross = s.all() * cycles_per_sample;
    (gross > 0.0).then(|| entries * refill / gross)
}

/// Whether one refill for each of `entries` would take (nearly) all the
/// cycles of the loop's samples `s`, leaving no room for its trips: the
/// entries are more than the loop allows (None from [`header_frequency`]
/// for that reason, not for want of samples).
pub fn overfilled(s: LoopSamples, entries: f64, cycles_per_sample: f64, refill: f64) -> bool {
    refill_share(s, entries, cycles_per_sample, refill).is_some_and(|r| r > 1.0 - MIN_NET_SHARE)
}

/// Whether one refill for each of `entries` would take more than all the
/// cycles of the loop's samples `s`: entries the loop cannot have had,
/// whatever its trips (stronger than [`overfilled`], which leaves a
/// margin for the refill's figure).
pub fn impossible_entries(
    s: LoopSamples,
    entries: f64,
    cycles_per_sample: f64,
    refill: f64,
) -> bool {
    refill_share(s, entries, cycles_per_sample, refill).is_some_and(|r| r > 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_stream_of_cases_mispredicts_as_often_as_it_changes_case() {
        assert!((dispatch_mispredicts(&[1.0; 8]) - 0.875).abs() < 1e-12);
        // kernels' interp: seven cases a ninth each, the default two.
        let mut runs = [1.0; 8];
        runs[7] = 2.0;
        assert!((dispatch_mispredicts(&runs) - 70.0 / 81.0).abs() < 1e-12);
        assert_eq!(dispatch_mispredicts(&[5.0, 0.0, 0.0]), 0.0);
        assert!((dispatch_mispredicts(&[0.0; 4]) - 0.75).abs() < 1e-12);
        assert_eq!(dispatch_mispredicts(&[]), 0.0);
    }

    #[test]
    fn a_dispatch_total_stands_only_on_counted_refills() {
        // 10 M trips at 0.8 mispredicts: 8 M refills expected.
        let e = (1e7, 1e6);
        let (f, sd) = dispatch_total(e, 0.8, 4e6).unwrap();
        assert_eq!(f, 1e7);
        assert!(sd > DISPATCH_ERROR * f && sd < 0.4 * f, "{sd}");
        // A predicted dispatch leaves (almost) no refills at its cases.
        assert!(dispatch_total(e, 0.8, 1e6).is_none());
    }

    #[test]
    fn refills_come_off_the_loops_cycles() {
        // 1000 entries, 10 trips each at 2 cycles, 15 cycles a refill:
        // 20000 + 15000 cycles, at 1 cycle a sample.
        let s = LoopSamples {
            inside: 35000.0,
            on_header: 0.0,
            on_exits: 0.0,
        };
        let (f, sd) = header_frequency(s, 1000.0, 2.0, 1.0, 15.0).unwrap();
        assert!((f - 10000.0).abs() < 1e-6, "{f}");
        assert!(sd > 0.1 * f && sd < f, "{sd}");
    }

    #[test]
    fn the_headers_first_samples_are_shared_with_the_entries() {
        // As above with a tenth of the loop's samples on the header's
        // first instruction, plus the entries' own share there.
        let s = LoopSamples {
            inside: 31500.0,
            on_header: 3500.0 / 0.9,
            on_exits: 0.0,
        };
        let (f, _) = header_frequency(s, 1000.0, 2.0, 1.0, 15.0).unwrap();
        assert!((f - 10000.0).abs() < 1.0, "{f}");
    }

    #[test]
    fn the_fixed_point_is_reached_from_above() {
        // btree's find_index on Golden Cove: 101.7 M trips of 1 cycle and
        // 19.6 M entries; refills are most of the loop's cycles and its
        // header's first samples count only if the back edge gets its
        // share. From below the fixed point stopped at F = entries.
        let s = LoopSamples {
            inside: 1577.0,
            on_header: 683.0,
            on_exits: 589.0,
        };
        let entries = 18.7e6;
        let (f, _) = header_frequency(s, entries, 1.0, 148.3e3, 17.0).unwrap();
        assert!(f > 3.0 * entries && f < 120e6, "{f}");
    }

    #[test]
    fn entries_that_overfill_or_cannot_fit_their_loop_are_told_apart() {
        let s = LoopSamples {
            inside: 15500.0,
            ..Default::default()
        };
        // 1000 entries x 15 cycles against 15500 cycles: no room for trips.
        assert!(overfilled(s, 1000.0, 1.0, 15.0));
        assert!(!overfilled(s, 100.0, 1.0, 15.0));
        // A loop without samples says nothing of its entries.
        assert!(!overfilled(LoopSamples::default(), 1000.0, 1.0, 15.0));
        // 1000 x 15 cycles is within 15500: overfilled, not impossible.
        assert!(!impossible_entries(s, 1000.0, 1.0, 15.0));
        assert!(impossible_entries(s, 1100.0, 1.0, 15.0));
        assert!(!impossible_entries(LoopSamples::default(), 1e9, 1.0, 15.0));
    }

    #[test]
    fn an_overfilled_loop_takes_the_middle_of_its_bounds() {
        // 1000 entries, 16000 cycles at 1 cycle a trip: between 1000 and
        // 16000 trips, 4000 in the middle, as sure as a guess.
        let s = LoopSamples {
            inside: 16000.0,
            ..Default::default()
        };
        let (f, sd) = between_bounds(s, 1000.0, 1.0, 1.0).unwrap();
        assert!((f - 4000.0).abs() < 1e-6 && sd == f, "{f} {sd}");
        // No room above one trip an entry: nothing.
        assert!(between_bounds(s, 20000.0, 1.0, 1.0).is_none());
        assert!(between_bounds(s, 0.0, 1.0, 1.0).is_none());
    }

    #[test]
    fn nothing_when_the_refills_take_it_all() {
        let s = LoopSamples {
            inside: 15500.0,
            ..Default::default()
        };
        assert!(header_frequency(s, 1000.0, 2.0, 1.0, 15.0).is_none());
        assert!(header_frequency(s, 0.0, 2.0, 1.0, 15.0).is_none());
    }
}
