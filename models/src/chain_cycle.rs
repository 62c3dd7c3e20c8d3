//! The rate of a block's loop-carried dependency chains without simulating
//! them: the maximum cycle mean of the template iteration's dependency
//! graph (Karp, 1978), the rate a max-plus system settles at.
//!
//! [`crate::simulate::chain_rate`] runs the graph with two iterations
//! dispatched a cycle, every port free, a ROB of 64 iterations and
//! retirement unbounded, and measures the periodic regime. Its rate is the
//! larger of the chains' (the heaviest cycle of inputs through the
//! iterations: latencies summed over iterations crossed) and dispatch's
//! (under half a cycle an iteration at that width). Where a chain carries
//! at least a cycle an iteration this is the chain's, unless the ROB fills
//! before the chain's next input is due (a path within one iteration longer
//! than a 64-iteration window of the chain, checked with a margin; over
//! every 7th block of python3.11 on Golden Cove and Zen 4 the rates equal
//! the chain pass's on all but 5 blocks each, where that pass stopped in a
//! transient (0x51f452: 0.25 where its 400-iteration run and this say 1.0;
//! BENCHMARKS session 35): then
//! [`Carried::Unknown`], and the simulation decides; so do chains of under
//! a cycle an iteration. Limits: inputs from at most [`MAX_DISTANCE`]
//! iterations back, and at most [`MAX_STATES`] carried values and delays.

use crate::simulate::Graph;

/// Inputs from further back than this many iterations: simulated instead.
const MAX_DISTANCE: usize = 4;
/// More carried values (each delay of an input counts) than this: simulated.
const MAX_STATES: usize = 24;
/// Iterations the chain pass's ROB holds.
const ROB_ITERATIONS: f64 = 64.0;
/// No path (the weights' minus infinity).
const NONE: i64 = i64::MIN / 4;

/// What the values carried from one iteration to the next do to
/// [`crate::simulate::chain_rate`].
#[derive(Debug, PartialEq)]
pub(crate) enum Carried {
    /// No input comes from an earlier iteration.
    Nothing,
    /// Inputs do, but no value feeds itself: the chains add latency, not
    /// rate. The longest path through any number of iterations.
    Acyclic { longest: u64 },
    /// A chain of at least a cycle an iteration bounds the rate: this one.
    Rate(f64),
    /// Only the simulation can tell (see the module header).
    Unknown,
}

/// The template iteration's carried chains (see [`Carried`]); `None`
/// before a template is found.
pub(crate) fn carried_chains(g: &Graph) -> Option<Carried> {
    let (u0, u1) = g.template_uops()?;
    let nu = u1 - u0;
    // Carried inputs: (template µop of the producer, iterations back,
    // consumer's index in the template).
    let mut carried: smallvec::SmallVec<[(usize, usize, usize); 8]> = smallvec::SmallVec::new();
    for v in u0..u1 {
        for k in g.uops[v].deps.iter() {
            let p = g.producer_of(v, k);
            if p < u0 {
                let distance = (u0 - p).div_ceil(nu);
                if distance > MAX_DISTANCE {
                    return Some(Carried::Unknown);
                }
                carried.push((p + distance * nu - u0, distance, v - u0));
            }
        }
    }
    if carried.is_empty() {
        return Some(Carried::Nothing);
    }
    // States: (producer, delay) for delay 0..distance: the producer's value
    // `delay` iterations before the current one.
    let mut states: smallvec::SmallVec<[(usize, usize); 8]> = smallvec::SmallVec::new();
    for &(q, distance, _) in &carried {
        for delay in 0..distance {
            if !states.contains(&(q, delay)) {
                states.push((q, delay));
            }
        }
    }
    if states.len() > MAX_STATES {
        return Some(Carried::Unknown);
    }
    let ns = states.len();
    // weight[a * ns + b]: the heaviest path from state a at the end of one
    // iteration to state b at the end of the next (NONE: no path).
    let mut weight = vec![NONE; ns * ns];
    let mut best = vec![NONE; nu];
    for (a, &(q, delay)) in states.iter().enumerate() {
        // A delayed value moves one delay on.
        if let Some(b) = states.iter().position(|&s| s == (q, delay + 1)) {
            weight[a * ns + b] = 0;
        }
        for (j, v) in (u0..u1).enumerate() {
            let latency = g.uops[v].latency as i64;
            let entered = carried
                .iter()
                .any(|&(cq, distance, consumer)| consumer == j && cq == q && distance == delay + 1);
            let mut t = if entered { latency } else { NONE };
            for k in g.uops[v].deps.iter() {
                let p = g.producer_of(v, k);
                if p >= u0 && best[p - u0] > NONE {
                    t = t.max(best[p - u0] + latency);
                }
            }
            best[j] = t;
        }
        for (b, &(q2, delay2)) in states.iter().enumerate() {
            if delay2 == 0 && best[q2] > NONE {
                weight[a * ns + b] = weight[a * ns + b].max(best[q2]);
            }
        }
    }
    let Some((sum, steps)) = max_cycle_mean(&weight, ns) else {
        return Some(Carried::Acyclic {
            longest: longest_path(g, u0, u1, &carried, ns + 2),
        });
    };
    // Under a cycle an iteration, dispatch may bound the rate; and a path
    // within an iteration longer than the ROB's window of the chain fills
    // the ROB before the chain's next input is due.
    let rate = sum as f64 / steps as f64;
    let within = longest_path(g, u0, u1, &[], 1);
    Some(
        if sum >= steps as i64 && ROB_ITERATIONS * rate >= (2 * within + 4) as f64 {
            Carried::Rate(rate)
        } else {
            Carried::Unknown
        },
    )
}

/// The longest latency path through `iterations` copies of the template
/// (µops `u0..u1`) joined by the `carried` inputs, entered anywhere.
fn longest_path(
    g: &Graph,
    u0: usize,
    u1: usize,
    carried: &[(usize, usize, usize)],
    iterations: usize,
) -> u64 {
    let nu = u1 - u0;
    // Path lengths of the iterations so far, newest last.
    let mut paths = vec![0u64; iterations * nu];
    let mut longest = 0;
    for it in 0..iterations {
        for (j, v) in (u0..u1).enumerate() {
            let mut from = 0;
            for k in g.uops[v].deps.iter() {
                let p = g.producer_of(v, k);
                if p >= u0 {
                    from = from.max(paths[it * nu + p - u0]);
                }
            }
            for &(q, distance, consumer) in carried {
                if consumer == j && distance <= it {
                    from = from.max(paths[(it - distance) * nu + q]);
                }
            }
            let p = from + g.uops[v].latency as u64;
            paths[it * nu + j] = p;
            longest = longest.max(p);
        }
    }
    longest
}

/// Karp's maximum cycle mean of a dense graph (`weight[a * n + b]`, edges
/// of weight [`NONE`] absent), as (cycle weight, cycle length) of a
/// ratio equal to it; `None` without a cycle.
fn max_cycle_mean(weight: &[i64], n: usize) -> Option<(i64, usize)> {
    // d[k * n + v]: heaviest walk of k edges ending at v, from anywhere.
    let mut d = vec![NONE; (n + 1) * n];
    d[..n].fill(0);
    for k in 1..=n {
        for a in 0..n {
            let da = d[(k - 1) * n + a];
            if da == NONE {
                continue;
            }
            for b in 0..n {
                let w = weight[a * n + b];
                if w > NONE {
                    let x = da + w;
                    if x > d[k * n + b] {
                        d[k * n + b] = x;
                    }
                }
            }
        }
    }
    let mut result: Option<(i64, usize)> = None;
    for v in 0..n {
        let dn = d[n * n + v];
        if dn == NONE {
            continue;
        }
        // min over k of (d_n - d_k) / (n - k)
        let mut worst: Option<(i64, usize)> = None;
        for k in 0..n {
            let dk = d[k * n + v];
            if dk == NONE {
                continue;
            }
            let (s, l) = (dn - dk, n - k);
            if worst.is_none_or(|(ws, wl)| (s as i128) * (wl as i128) < (ws as i128) * (l as i128))
            {
                worst = Some((s, l));
            }
        }
        if let Some((s, l)) = worst {
            if result.is_none_or(|(rs, rl)| (s as i128) * (rl as i128) > (rs as i128) * (l as i128))
            {
                result = Some((s, l));
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::max_cycle_mean;

    const X: i64 = i64::MIN / 4;

    #[test]
    fn karp_finds_the_heaviest_cycle_per_step() {
        // 0 -> 1 (3), 1 -> 0 (1): mean 2; 2 -> 2 (1): mean 1.
        let w = [X, 3, X, 1, X, X, X, X, 1];
        let (s, l) = max_cycle_mean(&w, 3).unwrap();
        assert_eq!(s as f64 / l as f64, 2.0);
        // A self loop of 5 beats it.
        let w = [5, 3, X, 1, X, X, X, X, 1];
        let (s, l) = max_cycle_mean(&w, 3).unwrap();
        assert_eq!(s as f64 / l as f64, 5.0);
    }

    #[test]
    fn no_cycle_no_mean() {
        let w = [X, 3, X, X];
        assert_eq!(max_cycle_mean(&w, 2), None);
    }
}
