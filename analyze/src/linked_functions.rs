//! Frequencies of several functions of one image solved together, each
//! callee's entry tied to its call sites.
//!
//! A function's own samples often say little about how often it ran (its
//! blocks all stall, or it is short and retires in its caller's shadow),
//! while a caller or callee knows: a leaf with clean samples tells how
//! often the blocks that call it run, and through them how often their
//! function's other blocks and other callees run. When every way into a
//! function is a direct call or tail jump found in the analyzed functions
//! (checked against the references in the image's bytes, see
//! [`crate::call_sites::References`]), its entry frequency equals the sum,
//! over those call sites, of calls in the block × the block's frequency.
//! Those equalities join the functions' flow networks into one weighted
//! least squares ([`crate::flow_solve::solve_with_spread`]), solved per
//! connected group of linked functions; each function's class estimates
//! come from its own samples charged by its frequencies alone.
//!
//! Limits: an exported function (other images may call it) or one whose
//! address is taken anywhere is not linked; nor are callers without
//! samples (not analyzed). A call that does not return (longjmp, exit)
//! breaks the equality silently.

use crate::call_sites::References;
use crate::cfg::Exit;
use crate::cpi::{CpiReport, FunctionAnalysis};
use crate::flow_solve::{solve_with_spread, Link};
use crate::frequency::{finish, Frequencies};
use crate::function_code::FunctionCode;
use std::collections::HashMap;

/// Direct calls and tail jumps of the members: callee start -> (member,
/// block, calls from that block).
fn call_sites(members: &[&FunctionCode]) -> HashMap<u64, Vec<(usize, usize, f64)>> {
    let mut sites: HashMap<u64, Vec<(usize, usize, f64)>> = HashMap::new();
    for (m, code) in members.iter().enumerate() {
        for (b, blk) in code.cfg.blocks.iter().enumerate() {
            let mut here: Vec<u64> = blk.calls.iter().flatten().copied().collect();
            if let Some(Exit::TailCall(t)) = blk.exit {
                here.push(t);
            }
            here.sort_unstable();
            for chunk in here.chunk_by(|a, b| a == b) {
                sites
                    .entry(chunk[0])
                    .or_default()
                    .push((m, b, chunk.len() as f64));
            }
        }
    }
    sites
}

/// The links among `members`: a member is tied to its call sites when it
/// is not exported and every reference to it is one of them.
pub fn links(members: &[&FunctionCode], refs: &References) -> Vec<Link> {
    let sites = call_sites(members);
    members
        .iter()
        .enumerate()
        .filter_map(|(g, code)| {
            let start = code.function.start;
            let s = sites.get(&start)?;
            let calls: f64 = s.iter().map(|x| x.2).sum();
            if refs.is_exported(start) || calls as usize != refs.count(start) {
                return None;
            }
            Some(Link {
                callee: g,
                entry: 0,
                sites: s.clone(),
            })
        })
        .collect()
}

/// Groups of members joined by links (each group sorted; members without
/// a link are left out).
fn groups(n: usize, links: &[Link]) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut linked = vec![false; n];
    for l in links {
        linked[l.callee] = true;
        for &(m, _, _) in &l.sites {
            linked[m] = true;
            let (a, b) = (root(&mut parent, l.callee), root(&mut parent, m));
            parent[a] = b;
        }
    }
    let mut by_root: HashMap<usize, Vec<usize>> = HashMap::new();
    for m in (0..n).filter(|&m| linked[m]) {
        let r = root(&mut parent, m);
        by_root.entry(r).or_default().push(m);
    }
    let mut out: Vec<Vec<usize>> = by_root.into_values().collect();
    out.sort();
    out
}

/// The frequencies of a group solved together; None (keep each member's
/// own) when a member has no frequency problem (no time event).
fn solve_group(
    group: &[usize],
    analyses: &[FunctionAnalysis],
    alone: &[Option<Frequencies>],
    links: &[Link],
) -> Option<Vec<(Frequencies, f64)>> {
    let at: HashMap<usize, usize> = group.iter().enumerate().map(|(k, &m)| (m, k)).collect();
    let prepared = group
        .iter()
        .map(|&m| analyses[m].prepared(&alone[m].as_ref()?.freq))
        .collect::<Option<Vec<_>>>()?;
    let local: Vec<Link> = links
        .iter()
        .filter(|l| at.contains_key(&l.callee))
        .map(|l| Link {
            callee: at[&l.callee],
            entry: l.entry,
            sites: l.sites.iter().map(|&(m, b, n)| (at[&m], b, n)).collect(),
        })
        .collect();
    let parts: Vec<_> = prepared.iter().map(|p| p.problem.clone()).collect();
    let mut solution = solve_with_spread(&parts, &local)?;
    // Once more from the linked answer: a loop's entries (its callers'
    // calls) and the split of a block's first samples were each member's
    // own guesses the first time.
    let prepared = group
        .iter()
        .zip(&solution.freq)
        .map(|(&m, f)| analyses[m].prepared(f))
        .collect::<Option<Vec<_>>>()?;
    let parts: Vec<_> = prepared.iter().map(|p| p.problem.clone()).collect();
    if let Some(again) = solve_with_spread(&parts, &local) {
        solution = again;
    }
    let solved = &solution.freq;
    let calls: Vec<f64> = (0..group.len())
        .map(|k| {
            local
                .iter()
                .filter(|l| l.callee == k)
                .flat_map(|l| &l.sites)
                .map(|&(p, b, n)| n * solved[p][b])
                .sum()
        })
        .collect();
    for ((p, f), &m) in prepared.iter().zip(&solution.freq).zip(group) {
        let name = &analyses[m].code().function.name;
        crate::frequency::debug_dump(
            &format!("{name} (solved with its callers and callees)"),
            p,
            f,
        );
    }
    Some(
        prepared
            .into_iter()
            .zip(solution.freq.clone())
            .zip(&solution.spread)
            .zip(calls)
            .map(|(((p, f), sd), c)| (finish(p, f, sd), c))
            .collect(),
    )
}

/// The reports of `analyses` (whose own frequencies are `alone`), linked
/// members solved together; `only`: just that member's report is wanted.
pub fn reports(
    analyses: &[FunctionAnalysis],
    codes: &[&FunctionCode],
    alone: Vec<Option<Frequencies>>,
    refs: &References,
    only: Option<usize>,
) -> Vec<Option<CpiReport>> {
    use rayon::prelude::*;
    let links = links(codes, refs);
    let mut groups = groups(analyses.len(), &links);
    // In address order, so a group solves the same (to the last bit)
    // whichever members around it were analyzed and in what order.
    for g in &mut groups {
        g.sort_by_key(|&m| codes[m].function.start);
    }
    let wanted = |m: usize| only.is_none_or(|o| o == m);
    let mut result: Vec<Option<(Option<Frequencies>, Option<f64>)>> =
        (0..analyses.len()).map(|_| None).collect();
    let solved: Vec<(usize, Vec<(Frequencies, f64)>)> = groups
        .par_iter()
        .enumerate()
        .filter(|(_, g)| g.iter().any(|&m| wanted(m)))
        .filter_map(|(k, g)| solve_group(g, analyses, &alone, &links).map(|s| (k, s)))
        .collect();
    let called: Vec<bool> = (0..analyses.len())
        .map(|m| links.iter().any(|l| l.callee == m))
        .collect();
    for (k, s) in solved {
        for (&m, (f, c)) in groups[k].iter().zip(s) {
            result[m] = Some((Some(f), called[m].then_some(c)));
        }
    }
    let mut alone: Vec<Option<Option<Frequencies>>> = alone.into_iter().map(Some).collect();
    let inputs: Vec<(Option<Frequencies>, Option<f64>)> = result
        .into_iter()
        .enumerate()
        .map(|(m, r)| r.unwrap_or_else(|| (alone[m].take().flatten(), None)))
        .collect();
    inputs
        .into_par_iter()
        .enumerate()
        .map(|(m, (f, c))| wanted(m).then(|| analyses[m].report(f, c)))
        .collect()
}
