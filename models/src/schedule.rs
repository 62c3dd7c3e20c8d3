//! The best-case pipeline model: a cycle-level simulation of a block on a
//! [`Machine`], every load hitting L1 and every branch predicted.
//!
//! Each instruction becomes µops (load, execute, store-address/data); the
//! front end dispatches up to `dispatch_width` fused slots per cycle (and at
//! most `decode_bytes` of code) into a ROB of `rob_size`; a µop issues, oldest
//! first, once its inputs are complete and one of its ports is free; results
//! arrive `latency` cycles later; a port stays busy `occupancy` cycles;
//! instructions retire in order, `retire_width` per cycle. Zero idioms,
//! move elimination, immediate folding, macro-fusion of cmp/test+jcc and
//! store-to-load forwarding (same address expression) are modeled.
//!
//! The block runs `iterations` times back to back (BHive's "unrolled"
//! definition) or as a loop body; cycles per iteration are measured over the
//! second half, in steady state. Per instruction the model reports the
//! cycles it spends at the head of the ROB (`head_cycles`, summing to the
//! cycles per iteration) and `m`, the share of cycles samples land on under
//! the skid model of a timer interrupt: the sample IP is the instruction
//! *after* the one the ROB head waits on (measured on this project's hosts:
//! the instruction after a long-latency load or imul takes the samples).

use crate::block::Decoded;
use crate::classify::{shape, MemAddr, Reg, Shape};
use crate::machine::Machine;
use iced_x86::InstructionInfoFactory;
use serde::Serialize;
use std::collections::VecDeque;

/// Why an instruction waited.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Stall {
    /// Waiting for a register value.
    Dependency {
        register: String,
        producer: usize,
        producer_text: String,
        latency: u32,
        loop_carried: bool,
    },
    /// Waiting for a store's data through store-to-load forwarding.
    StoreForward { store: usize, latency: u32 },
    /// Inputs ready, every allowed port busy.
    PortContention { ports: Vec<String> },
    /// Inputs ready, an unpipelined unit (divider, square root) still busy.
    UnitBusy { unit: String },
    /// The front end could not dispatch it earlier: width used up.
    DispatchWidth,
    /// Dispatch waited for a free ROB entry.
    RobFull,
    /// Fetch/decode bytes per cycle used up (long encodings).
    FrontEnd { bytes_per_cycle: u32 },
}

/// One instruction's result.
#[derive(Debug, Clone, Serialize)]
pub struct InsnTiming {
    pub index: usize,
    pub addr: u64,
    pub text: String,
    pub class: String,
    pub ports: Vec<String>,
    pub latency: u32,
    pub uops: u32,
    /// Cycles of the measured iteration, relative to its first dispatch.
    pub dispatch: u64,
    pub issue: Option<u64>,
    pub complete: u64,
    pub retire: u64,
    /// Cycles per iteration this instruction is the oldest not retired.
    pub head_cycles: f64,
    /// Best-case cycles attributed to it under the timer skid model (sum = cycles per iteration).
    pub m: f64,
    /// Average cycles its execution µop waited after dispatch.
    pub wait: f64,
    /// Reasons it waited, most frequent first.
    pub stalls: Vec<Stall>,
    pub notes: Vec<String>,
}

/// How the block repeats. The simulation is the same for both — the block
/// back to back, a trailing branch predicted taken — the mode labels the
/// report (and says the last instruction is the loop's back edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RepeatMode {
    /// Back to back, as BHive measures blocks.
    Unrolled,
    /// As a loop body whose last instruction branches back.
    Loop,
}

#[derive(Debug, Clone, Serialize)]
pub struct Bounds {
    pub dispatch: f64,
    pub ports: f64,
    /// Busiest port under the greedy assignment.
    pub busiest_port: String,
    pub dependency_chain: f64,
    pub front_end: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimelineRow {
    pub iteration: usize,
    pub index: usize,
    pub dispatch: u64,
    pub issue: Option<u64>,
    pub complete: u64,
    pub retire: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    pub machine: String,
    pub mode: RepeatMode,
    pub instructions: usize,
    pub cycles_per_iteration: f64,
    pub ipc: f64,
    pub bottleneck: String,
    pub bounds: Bounds,
    pub insns: Vec<InsnTiming>,
    pub timeline: Vec<TimelineRow>,
}

#[derive(Debug, Clone)]
struct Uop {
    insn: usize, // dynamic instruction id
    ports: std::rc::Rc<[usize]>,
    latency: u32,
    occupancy: u32,
    deps: Vec<(usize, u32)>, // (uop id, extra latency beyond the producer's)
    dep_why: Vec<DepWhy>,
    issued: Option<u64>,
    complete: Option<u64>,
    ready: Option<u64>,
}

#[derive(Debug, Clone)]
enum DepWhy {
    Reg(Reg),
    Forward(usize), // static store index
}

struct Dyn {
    stat: usize,
    iter: usize,
    uops: Vec<usize>,
    slots: u32,
    bytes: u32,
    dispatched: u64,
    retired: Option<u64>,
    exec: Option<usize>,
    dispatch_stall: Option<Stall>,
}

fn reg_name(r: Reg) -> String {
    if r == crate::classify::FLAGS {
        return "flags".into();
    }
    // SAFETY-free conversion: iced's Register values are < 256.
    iced_x86::Register::values()
        .find(|x| *x as Reg == r)
        .map(|x| format!("%{:?}", x).to_lowercase())
        .unwrap_or_else(|| format!("r{r}"))
}

/// Last producer µop of each register (indexed by [`Reg`]; a flat table is
/// much cheaper than a map on this hot path).
struct Producers(Vec<Option<usize>>);

impl Producers {
    fn get(&self, r: &Reg) -> Option<&usize> {
        self.0.get(*r as usize).and_then(|x| x.as_ref())
    }
    fn contains_key(&self, r: &Reg) -> bool {
        self.get(r).is_some()
    }
    fn insert(&mut self, r: Reg, u: usize) {
        if let Some(x) = self.0.get_mut(r as usize) {
            *x = Some(u);
        }
    }
    fn remove(&mut self, r: &Reg) {
        if let Some(x) = self.0.get_mut(*r as usize) {
            *x = None;
        }
    }
}

/// Options of one analysis.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub mode: RepeatMode,
    pub iterations: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: RepeatMode::Unrolled,
            iterations: 0,
        }
    }
}

struct Sim<'m> {
    m: &'m Machine,
    port_names: Vec<String>,
    ideal: bool,
}

struct SimResult {
    dyns: Vec<Dyn>,
    uops: Vec<Uop>,
    head: Vec<u64>, // per dynamic instr: cycles at ROB head
    /// Iterations of the steady state the results are measured over.
    measured: std::ops::Range<usize>,
}

impl<'m> Sim<'m> {
    fn port_index(&self, name: &str) -> usize {
        self.port_names.iter().position(|p| p == name).unwrap_or(0)
    }

    fn run(&self, block: &[Decoded], shapes: &[Shape], iterations: usize) -> SimResult {
        let m = self.m;
        let n = block.len();
        let (width, rob_cap, retire_w, bytes_pc) = if self.ideal {
            // Unbounded for practical purposes (two iterations dispatched and
            // 64 in flight per cycle), but finite so the graph is built lazily.
            let slots: u32 = shapes
                .iter()
                .map(|s| m.class(s.class).uops.max(1) + 1)
                .sum();
            (2 * slots, 64 * n.max(1), u32::MAX / 4, u32::MAX / 4)
        } else {
            (
                m.dispatch_width,
                m.rob_size as usize,
                m.retire_width,
                m.decode_bytes.max(16),
            )
        };
        let mut uops: Vec<Uop> = Vec::new();
        let mut dyns: Vec<Dyn> = Vec::new();
        let mut producer = Producers(vec![None; crate::classify::FLAGS as usize + 1]);
        // (address, producers of its registers, store-data µop, static index)
        let mut stores: VecDeque<(MemAddr, Vec<Option<usize>>, usize, usize)> = VecDeque::new();
        let fuse_next = |s: usize| -> bool {
            m.macro_fusion && shapes[s].fusible && s + 1 < n && shapes[s + 1].cond_branch
        };
        // Port index sets per class, built once.
        let mut sets: std::collections::BTreeMap<&str, std::rc::Rc<[usize]>> =
            std::collections::BTreeMap::new();
        for (name, cost) in &m.classes {
            sets.insert(
                name.as_str(),
                cost.ports.iter().map(|p| self.port_index(p)).collect(),
            );
        }
        let alu_ports = sets
            .get("alu")
            .cloned()
            .unwrap_or_else(|| std::rc::Rc::from(Vec::new()));
        let port_set = |class: &str| {
            sets.get(class)
                .cloned()
                .unwrap_or_else(|| alu_ports.clone())
        };
        // The dynamic µop graph is built one iteration at a time, as dispatch
        // needs it, so a simulation that reaches its steady state early stops early.
        let mut build_iteration = |it: usize, uops: &mut Vec<Uop>, dyns: &mut Vec<Dyn>| {
            let mut s = 0;
            while s < n {
                let sh = &shapes[s];
                let cost = m.class(sh.class);
                let mut d = Dyn {
                    stat: s,
                    iter: it,
                    uops: Vec::new(),
                    slots: 0,
                    bytes: sh.len as u32,
                    dispatched: 0,
                    retired: None,
                    exec: None,
                    dispatch_stall: None,
                };
                let id = dyns.len();
                let addr_deps: Vec<(usize, u32)> = sh
                    .addr_reads
                    .iter()
                    .filter_map(|r| producer.get(r).map(|&u| (u, 0)))
                    .collect();
                let addr_why: Vec<DepWhy> = sh
                    .addr_reads
                    .iter()
                    .filter(|r| producer.contains_key(r))
                    .map(|r| DepWhy::Reg(*r))
                    .collect();
                let addr_prod: Vec<Option<usize>> = sh
                    .addr_reads
                    .iter()
                    .map(|r| producer.get(r).copied())
                    .collect();
                let mut load_uop = None;
                if let Some(addr) = sh.load {
                    let lc = m.class(if sh.vector_mem { "vec_load" } else { "load" });
                    let mut deps = addr_deps.clone();
                    let mut why = addr_why.clone();
                    let mut latency = lc.latency;
                    if let Some((_, _, data, st)) = stores
                        .iter()
                        .rev()
                        .find(|(a, p, _, _)| *a == addr && *p == addr_prod)
                    {
                        let stack =
                            matches!(addr.base, iced_x86::Register::RSP | iced_x86::Register::RBP)
                                && addr.index == iced_x86::Register::None;
                        let renamed = match m.memory_renaming.as_str() {
                            // Measured on Golden Cove: general-register data only; an
                            // xmm store/load round trip takes ~7 cycles.
                            "any" => !shapes[*st].rmw_reg_source && !shapes[*st].vector_mem,
                            "stack" => stack,
                            _ => false,
                        };
                        if renamed {
                            // Renamed: the load's value is the stored register's, no forwarding delay.
                            deps.extend(uops[*data].deps.iter().copied());
                            why.extend(uops[*data].dep_why.iter().cloned());
                            latency = 0;
                        } else {
                            deps.push((*data, 0));
                            why.push(DepWhy::Forward(*st));
                            // From the store data's issue to the load's result.
                            latency = m.store_forward_latency.saturating_sub(1).max(1);
                        }
                    }
                    let ports = port_set(if sh.vector_mem { "vec_load" } else { "load" });
                    uops.push(Uop {
                        insn: id,
                        ports,
                        latency,
                        occupancy: 1,
                        deps,
                        dep_why: why,
                        issued: None,
                        complete: None,
                        ready: None,
                    });
                    load_uop = Some(uops.len() - 1);
                    d.uops.push(uops.len() - 1);
                }
                let eliminated = (sh.zero_idiom && m.zero_idioms)
                    || (sh.movable && m.move_elimination)
                    || (sh.imm_add && m.immediate_folding);
                let fused_branch = s > 0 && sh.cond_branch && fuse_next(s - 1) && {
                    // The previous dynamic instruction was this branch's fusion partner.
                    dyns.last().is_some_and(|p: &Dyn| p.stat == s - 1)
                };
                let mut exec_uop = None;
                if !fused_branch && sh.class != "nop" && !eliminated {
                    let latency = cost.latency;
                    let mut deps: Vec<(usize, u32)> = sh
                        .reads
                        .iter()
                        .filter_map(|r| producer.get(r).map(|&u| (u, 0)))
                        .collect();
                    let mut why: Vec<DepWhy> = sh
                        .reads
                        .iter()
                        .filter(|r| producer.contains_key(r))
                        .map(|r| DepWhy::Reg(*r))
                        .collect();
                    if let Some(l) = load_uop {
                        deps.push((l, 0));
                        why.push(DepWhy::Reg(u16::MAX)); // the load's result
                    }
                    let ports = port_set(if fuse_next(s) { "branch" } else { sh.class });
                    uops.push(Uop {
                        insn: id,
                        ports,
                        latency,
                        occupancy: cost.occupancy,
                        deps,
                        dep_why: why,
                        issued: None,
                        complete: None,
                        ready: None,
                    });
                    exec_uop = Some(uops.len() - 1);
                    d.uops.push(uops.len() - 1);
                    d.exec = exec_uop;
                }
                if let Some(addr) = sh.store {
                    let ports = port_set("store_addr");
                    uops.push(Uop {
                        insn: id,
                        ports,
                        latency: 1,
                        occupancy: 1,
                        deps: addr_deps.clone(),
                        dep_why: addr_why.clone(),
                        issued: None,
                        complete: None,
                        ready: None,
                    });
                    d.uops.push(uops.len() - 1);
                    let data_deps: Vec<(usize, u32)> = match exec_uop {
                        Some(e) => vec![(e, 0)],
                        None => sh
                            .reads
                            .iter()
                            .filter_map(|r| producer.get(r).map(|&u| (u, 0)))
                            .collect(),
                    };
                    let data_why: Vec<DepWhy> = match exec_uop {
                        Some(_) => vec![DepWhy::Reg(u16::MAX)],
                        None => sh
                            .reads
                            .iter()
                            .filter(|r| producer.contains_key(r))
                            .map(|r| DepWhy::Reg(*r))
                            .collect(),
                    };
                    let ports = port_set("store_data");
                    uops.push(Uop {
                        insn: id,
                        ports,
                        latency: 1,
                        occupancy: 1,
                        deps: data_deps,
                        dep_why: data_why,
                        issued: None,
                        complete: None,
                        ready: None,
                    });
                    d.uops.push(uops.len() - 1);
                    stores.push_back((addr, addr_prod.clone(), uops.len() - 1, s));
                    if stores.len() > 64 {
                        stores.pop_front();
                    }
                }
                // Results: the execution µop, else the load; eliminated moves alias the source.
                for w in &sh.writes {
                    if sh.zero_idiom && m.zero_idioms {
                        producer.remove(w);
                    } else if let Some(e) = exec_uop {
                        producer.insert(*w, e);
                    } else if sh.movable && m.move_elimination {
                        match sh.reads.first().and_then(|r| producer.get(r).copied()) {
                            Some(p) => {
                                producer.insert(*w, p);
                            }
                            None => {
                                producer.remove(w);
                            }
                        }
                    } else if sh.imm_add && m.immediate_folding {
                        // Folded at rename: the value is ready when its source is.
                        let src = sh
                            .reads
                            .iter()
                            .chain(sh.addr_reads.iter())
                            .find(|r| **r != crate::classify::FLAGS);
                        match src.and_then(|r| producer.get(r).copied()) {
                            Some(p) => {
                                producer.insert(*w, p);
                            }
                            None => {
                                producer.remove(w);
                            }
                        }
                    } else if let Some(l) = load_uop {
                        producer.insert(*w, l);
                    }
                }
                d.slots = if fused_branch {
                    0
                } else {
                    cost.uops.max(1) + (sh.load.is_some() && sh.store.is_some()) as u32
                };
                dyns.push(d);
                s += 1;
            }
        };

        // Cycle loop.
        let total = iterations * n;
        let mut built = 0usize;
        let mut head = vec![0u64; total];
        let mut port_free = vec![0u64; self.port_names.len().max(1)];
        let mut port_load = vec![0u64; self.port_names.len().max(1)];
        // Event-driven issue: a µop enters `ready_heap` once every input has
        // issued (so its ready time is known) and it is dispatched; from there
        // it moves to `issuable` (age order) when its time comes.
        let mut pending: Vec<u32> = Vec::new();
        let mut dependents: Vec<Vec<usize>> = Vec::new();
        let mut dispatched_uop: Vec<bool> = Vec::new();
        let mut ready_heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> =
            std::collections::BinaryHeap::new();
        let mut issuable: std::collections::BTreeSet<usize> = std::collections::BTreeSet::new();
        let mut candidates: Vec<usize> = Vec::new();
        let ready_time = |uops: &Vec<Uop>, u: usize, dispatched: u64| -> u64 {
            uops[u]
                .deps
                .iter()
                .map(|&(p, extra)| uops[p].complete.unwrap_or(0) + extra as u64)
                .max()
                .unwrap_or(0)
                .max(dispatched + 1)
        };
        let mut next_dispatch = 0usize;
        let mut rob: VecDeque<usize> = VecDeque::new();
        let mut retired = 0usize;
        let mut cycle: u64 = 0;
        // Steady state: stop once the last window of `w` iterations retired at
        // the same rate as the window before it.
        let w = (64 / n.max(1)).clamp(4, 32);
        let mut ends: Vec<u64> = Vec::with_capacity(iterations);
        let mut last_store_line: Option<(iced_x86::Register, iced_x86::Register, i64)> = None;
        let mut measured = (iterations / 2)..iterations;
        'sim: while retired < total && cycle < 10_000_000 {
            // Retire (stores also commit to L1: `store_commit` per cycle, more
            // when they write the same cache line as the previous store).
            let mut r = 0;
            let mut commits = 0u32;
            while let Some(&front) = rob.front() {
                if r >= retire_w {
                    break;
                }
                let done = dyns[front]
                    .uops
                    .iter()
                    .all(|&u| uops[u].complete.is_some_and(|c| c <= cycle));
                if !done {
                    break;
                }
                if let Some(addr) = shapes[dyns[front].stat].store {
                    let line = (addr.base, addr.index, addr.disp as i64 >> 6);
                    let same_line = last_store_line == Some(line);
                    if !self.ideal && commits >= m.store_commit && !same_line {
                        break;
                    }
                    commits += 1;
                    last_store_line = Some(line);
                }
                dyns[front].retired = Some(cycle);
                rob.pop_front();
                retired += 1;
                r += 1;
                if retired.is_multiple_of(n) {
                    ends.push(cycle);
                    let k = ends.len();
                    if k > 3 * w {
                        let last = (ends[k - 1] - ends[k - 1 - w]) as f64;
                        let prev = (ends[k - 1 - w] - ends[k - 1 - 2 * w]) as f64;
                        if (last - prev).abs() <= 0.01 * last.max(1.0) {
                            measured = (k - w)..k;
                            break 'sim;
                        }
                    }
                }
            }
            // Head of the ROB this cycle (or the next to dispatch when empty).
            if let Some(&front) = rob.front() {
                head[front] += 1;
            } else if next_dispatch < total {
                head[next_dispatch] += 1;
            }
            // Issue, oldest first.
            for _pass in 0..2 {
                while let Some(&std::cmp::Reverse((t, u))) = ready_heap.peek() {
                    if t > cycle {
                        break;
                    }
                    ready_heap.pop();
                    issuable.insert(u);
                }
                candidates.clear();
                candidates.extend(issuable.iter().copied());
                for &u in &candidates {
                    let port = if uops[u].ports.is_empty() || self.ideal {
                        None
                    } else {
                        match uops[u]
                            .ports
                            .iter()
                            .copied()
                            .filter(|&p| port_free[p] <= cycle)
                            .min_by_key(|&p| (port_load[p], p))
                        {
                            Some(p) => Some(p),
                            None => continue,
                        }
                    };
                    if let Some(p) = port {
                        port_free[p] = cycle + uops[u].occupancy as u64;
                        port_load[p] += uops[u].occupancy as u64;
                    }
                    issuable.remove(&u);
                    uops[u].issued = Some(cycle);
                    uops[u].complete = Some(cycle + uops[u].latency as u64);
                    for &d in &dependents[u] {
                        pending[d] -= 1;
                        if pending[d] == 0 && dispatched_uop[d] {
                            let r = ready_time(&uops, d, dyns[uops[d].insn].dispatched);
                            uops[d].ready = Some(r);
                            ready_heap.push(std::cmp::Reverse((r, d)));
                        }
                    }
                }
            }
            // Dispatch.
            let mut slots = 0u32;
            let mut bytes = 0u32;
            while next_dispatch < total {
                if next_dispatch >= dyns.len() {
                    let before = uops.len();
                    build_iteration(built, &mut uops, &mut dyns);
                    built += 1;
                    for u in before..uops.len() {
                        // Only inputs not issued yet will announce themselves.
                        let mut waiting_on = 0;
                        for k in 0..uops[u].deps.len() {
                            let p = uops[u].deps[k].0;
                            if uops[p].issued.is_none() {
                                dependents[p].push(u);
                                waiting_on += 1;
                            }
                        }
                        pending.push(waiting_on);
                        dependents.push(Vec::new());
                        dispatched_uop.push(false);
                    }
                }
                let d = &dyns[next_dispatch];
                if rob.len() >= rob_cap {
                    if next_dispatch < total {
                        dyns[next_dispatch]
                            .dispatch_stall
                            .get_or_insert(Stall::RobFull);
                    }
                    break;
                }
                if slots + d.slots > width {
                    dyns[next_dispatch]
                        .dispatch_stall
                        .get_or_insert(Stall::DispatchWidth);
                    break;
                }
                if bytes + d.bytes > bytes_pc && bytes > 0 {
                    dyns[next_dispatch]
                        .dispatch_stall
                        .get_or_insert(Stall::FrontEnd {
                            bytes_per_cycle: bytes_pc,
                        });
                    break;
                }
                slots += d.slots;
                bytes += d.bytes;
                dyns[next_dispatch].dispatched = cycle;
                for k in 0..dyns[next_dispatch].uops.len() {
                    let u = dyns[next_dispatch].uops[k];
                    dispatched_uop[u] = true;
                    if pending[u] == 0 {
                        let r = ready_time(&uops, u, cycle);
                        uops[u].ready = Some(r);
                        ready_heap.push(std::cmp::Reverse((r, u)));
                    }
                }
                rob.push_back(next_dispatch);
                next_dispatch += 1;
            }
            cycle += 1;
        }
        // Stopped by the cycle limit before `iterations` completed: measure
        // over the second half of what did.
        let k = ends.len();
        if measured.end > k {
            measured = (k / 2).max(1)..k.max(1);
        }
        SimResult {
            dyns,
            uops,
            head,
            measured,
        }
    }
}

/// The answer when not even two iterations complete within the simulation's
/// cycle limit (a pathological block): no cycles, no timings, said so.
fn no_steady_state(
    machine: &Machine,
    block: &[Decoded],
    shapes: &[Shape],
    mode: RepeatMode,
) -> Analysis {
    Analysis {
        machine: machine.name.clone(),
        mode,
        instructions: block.len(),
        cycles_per_iteration: 0.0,
        ipc: 0.0,
        bottleneck: "no steady state within the simulation limit".into(),
        bounds: Bounds {
            dispatch: 0.0,
            ports: 0.0,
            busiest_port: String::new(),
            dependency_chain: 0.0,
            front_end: 0.0,
        },
        insns: block
            .iter()
            .zip(shapes)
            .enumerate()
            .map(|(index, (d, sh))| {
                let cost = machine.class(sh.class);
                InsnTiming {
                    index,
                    addr: d.addr,
                    text: d.text.clone(),
                    class: sh.class.to_string(),
                    ports: cost.ports.clone(),
                    latency: cost.latency,
                    uops: cost.uops,
                    dispatch: 0,
                    issue: None,
                    complete: 0,
                    retire: 0,
                    head_cycles: 0.0,
                    m: 0.0,
                    wait: 0.0,
                    stalls: Vec::new(),
                    notes: vec!["not simulated to a steady state".into()],
                }
            })
            .collect(),
        timeline: Vec::new(),
    }
}

/// Runs the model on a block.
pub fn analyze(machine: &Machine, block: &[Decoded], opts: Options) -> Analysis {
    let n = block.len().max(1);
    let mut info = InstructionInfoFactory::new();
    let shapes: Vec<Shape> = block.iter().map(|d| shape(&d.instr, &mut info)).collect();
    let iterations = if opts.iterations > 0 {
        opts.iterations
    } else {
        (1200 / n).clamp(24, 400)
    };
    let port_names = machine.ports();
    let sim = Sim {
        m: machine,
        port_names: port_names.clone(),
        ideal: false,
    };
    let res = sim.run(block, &shapes, iterations);
    let ideal = Sim {
        m: machine,
        port_names: port_names.clone(),
        ideal: true,
    }
    .run(block, &shapes, iterations);
    if res.measured.is_empty() || ideal.measured.is_empty() {
        return no_steady_state(machine, block, &shapes, opts.mode);
    }

    let last_retire =
        |r: &SimResult, it: usize| r.dyns[(it + 1) * n - 1].retired.unwrap_or(0) as f64;
    let rate = |r: &SimResult| {
        let (a, b) = (r.measured.start, r.measured.end);
        (last_retire(r, b - 1) - last_retire(r, a - 1)) / (b - a) as f64
    };
    let cpi = rate(&res);
    let chain = rate(&ideal);
    let half = res.measured.start;

    // Per instruction, over the measured iterations.
    let measured = res.measured.clone();
    let per_iter = measured.len() as f64;
    let show_iter = half;
    let base = res.dyns[show_iter * n].dispatched;
    let mut insns = Vec::with_capacity(n);
    for (s, d) in block.iter().enumerate() {
        let sh = &shapes[s];
        let cost = machine.class(sh.class);
        let mut head = 0u64;
        let mut wait = 0u64;
        // Compact reasons counted per iteration; turned into `Stall`s once.
        #[derive(PartialEq, Clone, Copy)]
        enum Why {
            Dispatch(u8),
            Dep {
                reg: Reg,
                producer: usize,
                latency: u32,
                carried: bool,
            },
            Forward(usize),
            Unit,
            Ports,
        }
        let mut reasons: Vec<(Why, u64)> = Vec::new();
        let mut count = |w: Why| match reasons.iter_mut().find(|(x, _)| *x == w) {
            Some(e) => e.1 += 1,
            None => reasons.push((w, 1)),
        };
        for it in measured.clone() {
            let id = it * n + s;
            head += res.head[id];
            let dy = &res.dyns[id];
            match &dy.dispatch_stall {
                Some(Stall::DispatchWidth) => count(Why::Dispatch(0)),
                Some(Stall::RobFull) => count(Why::Dispatch(1)),
                Some(Stall::FrontEnd { .. }) => count(Why::Dispatch(2)),
                _ => {}
            }
            let Some(e) = dy.exec.or_else(|| dy.uops.first().copied()) else {
                continue;
            };
            let u = &res.uops[e];
            let (Some(issued), Some(ready)) = (u.issued, u.ready) else {
                continue;
            };
            let earliest = dy.dispatched + 1;
            wait += issued.saturating_sub(earliest);
            if ready > earliest {
                // The input that arrived last explains the wait.
                let Some((k, _)) = u
                    .deps
                    .iter()
                    .enumerate()
                    .max_by_key(|(_, (p, x))| res.uops[*p].complete.unwrap_or(0) + *x as u64)
                else {
                    continue;
                };
                let (p, _) = u.deps[k];
                let pd = &res.dyns[res.uops[p].insn];
                match u.dep_why.get(k) {
                    Some(DepWhy::Forward(st)) => count(Why::Forward(*st)),
                    Some(DepWhy::Reg(r)) => count(Why::Dep {
                        reg: *r,
                        producer: pd.stat,
                        latency: res.uops[p].latency,
                        carried: pd.iter < it,
                    }),
                    None => {}
                }
            } else if issued > ready {
                count(if cost.occupancy > 1 {
                    Why::Unit
                } else {
                    Why::Ports
                });
            }
        }
        reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
        let stalls: Vec<(u64, Stall)> = reasons
            .into_iter()
            .map(|(w, n)| {
                let stall = match w {
                    Why::Dispatch(0) => Stall::DispatchWidth,
                    Why::Dispatch(1) => Stall::RobFull,
                    Why::Dispatch(_) => Stall::FrontEnd {
                        bytes_per_cycle: machine.decode_bytes.max(16),
                    },
                    Why::Dep {
                        reg,
                        producer,
                        latency,
                        carried,
                    } => Stall::Dependency {
                        register: if reg == u16::MAX {
                            "load result".into()
                        } else {
                            reg_name(reg)
                        },
                        producer,
                        producer_text: block[producer].text.clone(),
                        latency,
                        loop_carried: carried,
                    },
                    Why::Forward(store) => Stall::StoreForward {
                        store,
                        latency: machine.store_forward_latency,
                    },
                    Why::Unit => Stall::UnitBusy {
                        unit: sh.class.to_string(),
                    },
                    Why::Ports => Stall::PortContention {
                        // A pure load or store waits on its memory ports.
                        ports: if !cost.ports.is_empty() {
                            cost.ports.clone()
                        } else if sh.load.is_some() {
                            machine
                                .class(if sh.vector_mem { "vec_load" } else { "load" })
                                .ports
                                .clone()
                        } else {
                            machine.class("store_addr").ports.clone()
                        },
                    },
                };
                (n, stall)
            })
            .collect();
        let dy = &res.dyns[show_iter * n + s];
        let exec = dy.exec.map(|e| &res.uops[e]);
        let mut notes = Vec::new();
        if sh.zero_idiom && machine.zero_idioms {
            notes.push("zero idiom: no execution, breaks dependencies".into());
        }
        if sh.movable && machine.move_elimination {
            notes.push("move eliminated at rename".into());
        }
        if sh.imm_add && machine.immediate_folding {
            notes.push("immediate add folded at rename".into());
        }
        if dy.slots == 0 && sh.cond_branch {
            notes.push("macro-fused with the previous compare".into());
        }
        if sh.unknown {
            notes.push("class guessed (mnemonic not in the model's tables)".into());
        }
        insns.push(InsnTiming {
            index: s,
            addr: d.addr,
            text: d.text.clone(),
            // Pure loads and stores have no execution µop: name them by what they do.
            class: match (sh.class, sh.load.is_some(), sh.store.is_some()) {
                ("nop", true, false) => "load".to_string(),
                ("nop", false, true) => "store".to_string(),
                (c, _, _) => c.to_string(),
            },
            ports: match (exec, sh.load.is_some(), sh.store.is_some()) {
                (Some(_), _, _) => cost.ports.clone(),
                (None, true, _) => machine
                    .class(if sh.vector_mem { "vec_load" } else { "load" })
                    .ports
                    .clone(),
                (None, false, true) => machine.class("store_addr").ports.clone(),
                _ => Vec::new(),
            },
            // For a pure load, its load µop's latency (forwarding or renaming included).
            latency: exec
                .or_else(|| dy.uops.first().map(|&u| &res.uops[u]))
                .map(|u| u.latency)
                .unwrap_or(0),
            uops: dy.slots,
            dispatch: dy.dispatched - base,
            issue: exec.and_then(|u| u.issued).map(|c| c - base),
            complete: dy
                .uops
                .iter()
                .filter_map(|&u| res.uops[u].complete)
                .max()
                .unwrap_or(dy.dispatched)
                - base,
            retire: dy.retired.unwrap_or(0) - base,
            head_cycles: head as f64 / per_iter,
            m: 0.0,
            wait: wait as f64 / per_iter,
            stalls: stalls.into_iter().map(|(_, s)| s).collect(),
            notes,
        });
    }
    // Skid model: samples land on the instruction after the ROB head.
    for s in 0..n {
        let pred = (s + n - 1) % n;
        insns[s].m = insns[pred].head_cycles;
    }

    // Bounds.
    let slots: u32 = (0..n).map(|s| res.dyns[half * n + s].slots).sum();
    let dispatch = slots as f64 / machine.dispatch_width as f64;
    let bytes: usize = shapes.iter().map(|s| s.len).sum();
    let front_end = bytes as f64 / machine.decode_bytes.max(16) as f64;
    let mut load = vec![0f64; port_names.len().max(1)];
    let mut per_port: Vec<(Vec<usize>, f64)> = Vec::new();
    for s in 0..n {
        let dy = &res.dyns[half * n + s];
        for &u in &dy.uops {
            let uo = &res.uops[u];
            if !uo.ports.is_empty() {
                per_port.push((uo.ports.to_vec(), uo.occupancy as f64));
            }
        }
    }
    per_port.sort_by_key(|(p, _)| p.len());
    for (ports, occ) in per_port {
        let p = ports
            .iter()
            .copied()
            .min_by(|a, b| load[*a].total_cmp(&load[*b]))
            .expect("non-empty");
        load[p] += occ;
    }
    let (bp, ports_bound) =
        load.iter().enumerate().fold(
            (0, 0.0),
            |acc, (i, &l)| if l > acc.1 { (i, l) } else { acc },
        );
    let bounds = Bounds {
        dispatch,
        ports: ports_bound,
        busiest_port: port_names.get(bp).cloned().unwrap_or_default(),
        dependency_chain: chain,
        front_end,
    };
    let candidates = [
        ("dependency chain", bounds.dependency_chain),
        ("dispatch width", bounds.dispatch),
        ("port pressure", bounds.ports),
        ("front end (bytes per cycle)", bounds.front_end),
    ];
    let (name, value) = candidates
        .iter()
        .fold(("", 0.0), |acc, c| if c.1 > acc.1 { *c } else { acc });
    let bottleneck = if name == "port pressure" {
        format!("port pressure ({})", bounds.busiest_port)
    } else {
        name.to_string()
    };
    let bottleneck = if cpi > value * 1.15 {
        format!("{bottleneck}, with interactions (bound {value:.2})")
    } else {
        bottleneck
    };

    let mut timeline = Vec::new();
    for it in half..(half + 2).min(res.measured.end) {
        for s in 0..n {
            let dy = &res.dyns[it * n + s];
            timeline.push(TimelineRow {
                iteration: it - half,
                index: s,
                dispatch: dy.dispatched - base,
                issue: dy.exec.and_then(|e| res.uops[e].issued).map(|c| c - base),
                complete: dy
                    .uops
                    .iter()
                    .filter_map(|&u| res.uops[u].complete)
                    .max()
                    .unwrap_or(dy.dispatched)
                    - base,
                retire: dy.retired.unwrap_or(0) - base,
            });
        }
    }
    Analysis {
        machine: machine.name.clone(),
        mode: opts.mode,
        instructions: block.len(),
        cycles_per_iteration: cpi,
        ipc: if cpi > 0.0 {
            block.len() as f64 / cpi
        } else {
            0.0
        },
        bottleneck,
        bounds,
        insns,
        timeline,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{decode, parse_hex};

    #[test]
    #[ignore]
    fn profile_loop() {
        let m = Machine::by_name("golden-cove").unwrap();
        let b = decode(
            &parse_hex("48 8b 47 10 48 01 d8 48 89 c1 48 83 c2 01 48 39 ca").unwrap(),
            0,
            false,
        )
        .unwrap();
        let t = std::time::Instant::now();
        for _ in 0..300 {
            std::hint::black_box(analyze(&m, &b, Options::default()));
        }
        eprintln!("{:?} per block", t.elapsed() / 300);
    }

    fn run(hex: &str, machine: &str, mode: RepeatMode) -> Analysis {
        let m = Machine::by_name(machine).unwrap();
        let b = decode(&parse_hex(hex).unwrap(), 0x1000, false).unwrap();
        analyze(
            &m,
            &b,
            Options {
                mode,
                iterations: 0,
            },
        )
    }

    fn cpi(hex: &str, machine: &str) -> f64 {
        run(hex, machine, RepeatMode::Unrolled).cycles_per_iteration
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.06 * b.max(1.0)
    }

    #[test]
    fn dependency_chains_run_at_their_latency() {
        for m in ["golden-cove", "zen5", "skylake"] {
            assert!(close(cpi("48 01 d8", m), 1.0), "add chain on {m}");
            assert!(close(cpi("48 0f af c3", m), 3.0), "imul chain on {m}");
        }
        assert!(close(cpi("48 8b 00", "zen5"), 4.0), "load-use chain, Zen 5");
        assert!(
            close(cpi("48 8b 00", "golden-cove"), 5.0),
            "load-use chain, Golden Cove"
        );
        // A dependent div chain runs at the divider's latency.
        assert!(close(cpi("48 f7 f1", "golden-cove"), 15.0));
    }

    #[test]
    fn independent_work_is_bound_by_width_and_ports() {
        // Eight adds into eight registers: Golden Cove has 5 ALU ports.
        let adds = "48 01 d8 48 01 d9 48 01 da 48 01 de 48 01 df 49 01 d8 49 01 d9 49 01 da";
        let gc = run(adds, "golden-cove", RepeatMode::Unrolled);
        assert!(
            close(gc.cycles_per_iteration, 8.0 / 5.0),
            "{}",
            gc.cycles_per_iteration
        );
        assert!(
            gc.bottleneck.starts_with("port pressure"),
            "{}",
            gc.bottleneck
        );
        // Zen 5: 6 ALUs, 8-wide dispatch.
        assert!(close(cpi(adds, "zen5"), 8.0 / 6.0));
        // Skylake: 4 ALUs and 4-wide dispatch.
        assert!(close(cpi(adds, "skylake"), 2.0));
        // Independent divides (zero idioms break the chain) are bound by the unpipelined divider.
        let divs = run("31 c0 31 d2 48 f7 f1", "golden-cove", RepeatMode::Unrolled);
        assert!(
            close(divs.cycles_per_iteration, 10.0),
            "{}",
            divs.cycles_per_iteration
        );
        assert!(
            divs.insns[2]
                .stalls
                .iter()
                .any(|s| matches!(s, Stall::UnitBusy { .. })),
            "{:?}",
            divs.insns[2]
        );
    }

    #[test]
    fn store_forwarding_round_trip_and_fusion() {
        // mov %rax,(%rdi); mov (%rdi),%rax: the load forwards from the store
        // (Skylake: 5 cycles), or is renamed (Golden Cove: measured 0.50 cycles).
        let a = run("48 89 07 48 8b 07", "skylake", RepeatMode::Unrolled);
        assert!(
            close(a.cycles_per_iteration, 5.0),
            "{}",
            a.cycles_per_iteration
        );
        assert!(close(cpi("48 89 07 48 8b 07", "golden-cove"), 0.5));
        // A read-modify-write with a register source is not renamed (measured 7.3).
        assert!(cpi("48 01 00", "golden-cove") >= 5.0);
        assert!(
            a.insns[1]
                .stalls
                .iter()
                .any(|s| matches!(s, Stall::StoreForward { store: 0, .. })),
            "{:?}",
            a.insns[1]
        );
        // Through the stack, Golden Cove renames the pair (the SLEEPY loop runs at
        // ~1.1 cycles per iteration on it); Skylake forwards in 5 cycles.
        let sleepy = "48 8b 4c 24 08 48 01 d1 48 89 4c 24 08"; // mov 8(%rsp),%rcx; add %rdx,%rcx; mov %rcx,8(%rsp)
        assert!(
            close(cpi(sleepy, "golden-cove"), 1.0),
            "{}",
            cpi(sleepy, "golden-cove")
        );
        assert!(
            close(cpi(sleepy, "skylake"), 6.0),
            "{}",
            cpi(sleepy, "skylake")
        );
        // add %rbx,%rax; cmp %rcx,%rax; jne back: cmp+jne fuse into one slot.
        let l = run("48 01 d8 48 39 c8 75 f8", "golden-cove", RepeatMode::Loop);
        assert_eq!(l.insns[2].uops, 0);
        assert!(l.insns[2].notes.iter().any(|n| n.contains("macro-fused")));
        assert!(
            close(l.cycles_per_iteration, 1.0),
            "{}",
            l.cycles_per_iteration
        );
    }

    #[test]
    fn stores_commit_one_line_per_cycle_on_golden_cove() {
        // movl $2,(%rax); movl $-1,0x30(%rbx): two lines (measured 2.31 cycles);
        // movl $2,(%rax); movl $-1,8(%rax): one line (measured 1.31).
        assert!(close(
            cpi("c7 00 02 00 00 00 c7 43 30 ff ff ff ff", "golden-cove"),
            2.0
        ));
        assert!(close(
            cpi("c7 00 02 00 00 00 c7 40 08 ff ff ff ff", "golden-cove"),
            1.0
        ));
        // Zen 5 commits two stores per cycle.
        assert!(close(
            cpi("c7 00 02 00 00 00 c7 43 30 ff ff ff ff", "zen5"),
            1.0
        ));
    }

    #[test]
    fn m_sums_to_cycles_and_follows_the_skid_model() {
        // imul chain then an add: the add (after the slow imul) takes the samples.
        let a = run("48 0f af c3 48 01 c1", "golden-cove", RepeatMode::Loop);
        let sum: f64 = a.insns.iter().map(|i| i.m).sum();
        assert!(
            close(sum, a.cycles_per_iteration),
            "{sum} vs {}",
            a.cycles_per_iteration
        );
        assert!(
            a.insns[1].m > a.insns[0].m,
            "{:?}",
            a.insns.iter().map(|i| i.m).collect::<Vec<_>>()
        );
        let dep = &a.insns[0].stalls;
        assert!(
            dep.iter().any(|s| matches!(
                s,
                Stall::Dependency {
                    loop_carried: true,
                    producer: 0,
                    ..
                }
            )),
            "{dep:?}"
        );
    }
}
