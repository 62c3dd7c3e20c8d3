//! The cycle-level simulation behind [`crate::schedule`]: a block's
//! dynamic µop graph, built one iteration at a time, run on a [`Machine`]
//! (dispatch width and bytes, ROB, ports, latencies, in-order retire, store
//! commit), and the same graph's dependency-chain rate with every resource
//! unbounded.
//!
//! Speed matters here (the analyzer models every block of an image): the
//! graph lives in flat arrays (a µop's inputs are a range of one shared
//! list, its dependents a linked list in another), reused from block to
//! block on a thread; once the builder's state repeats, iterations are
//! shifted copies of a template; ready µops wait in a timing wheel, then
//! in one age-ordered queue per port set; and a run stops as soon as the
//! retirement of whole iterations is exactly periodic.
//!
//! Limits: the steady-state test looks at iteration boundaries only; a
//! transient that repeats exactly for three periods is taken for the steady
//! state (the ROB filling behind a long chain keeps the rate, so it does not
//! matter there).

use crate::classify::{MemAddr, Reg, Shape, FLAGS};
use crate::machine::{ClassCost, Machine};
use std::collections::VecDeque;
use std::ops::Range;

const NONE: u32 = u32::MAX;

/// One µop of the dynamic graph.
#[derive(Debug, Clone)]
pub(crate) struct Uop {
    /// Dynamic instruction id.
    pub insn: u32,
    /// Index into [`Graph::port_sets`].
    pub ports: u16,
    pub latency: u32,
    pub occupancy: u32,
    /// Inputs: a range of [`Graph::deps`] (and of [`Graph::why`]).
    pub deps: Range<u32>,
    /// Cycles it issued, its result was ready, its inputs were ready:
    /// [`NOT_YET`] until known.
    issued: u64,
    complete: u64,
    ready: u64,
}

/// A time not known yet.
const NOT_YET: u64 = u64::MAX;

fn known(t: u64) -> Option<u64> {
    (t != NOT_YET).then_some(t)
}

impl Uop {
    pub fn issued(&self) -> Option<u64> {
        known(self.issued)
    }
    pub fn complete(&self) -> Option<u64> {
        known(self.complete)
    }
    pub fn ready(&self) -> Option<u64> {
        known(self.ready)
    }
}

/// Why a µop depends on an input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum DepWhy {
    /// A register ([`LOAD_RESULT`] for the instruction's own load).
    Reg(Reg),
    /// Store-to-load forwarding from this static store.
    Forward(usize),
}

/// The register number standing for "the instruction's own load result".
pub(crate) const LOAD_RESULT: Reg = u16::MAX;

/// Why dispatch stopped before an instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DispatchStall {
    Width,
    RobFull,
    FrontEnd,
}

/// One dynamic instruction.
#[derive(Debug, Clone)]
pub(crate) struct Dyn {
    pub stat: usize,
    pub iter: usize,
    /// Its µops, contiguous.
    pub uops: Range<u32>,
    pub slots: u32,
    pub bytes: u32,
    pub dispatched: u64,
    pub retired: Option<u64>,
    pub exec: Option<usize>,
    pub dispatch_stall: Option<DispatchStall>,
}

/// What each static instruction costs, looked up once.
struct StaticCost<'a> {
    /// Its class's cost, and its load's (`load` or `vec_load`).
    class: &'a ClassCost,
    load_class: &'a ClassCost,
    latency: u32,
    occupancy: u32,
    slots: u32,
    exec_ports: u16,
    load_ports: u16,
    load_latency: u32,
    /// Fuses with the conditional branch after it.
    fuse_next: bool,
    /// Done at rename: zero idiom, eliminated move, folded immediate.
    eliminated: bool,
}

/// A store the next loads may read: address, producers of its address
/// registers, store-data µop, static index.
struct StoreRec {
    addr: MemAddr,
    prod: [u32; 4],
    data: u32,
    stat: usize,
}

/// The dynamic µop graph of a block repeated back to back.
pub(crate) struct Graph<'a> {
    m: &'a Machine,
    shapes: &'a [Shape],
    costs: Vec<StaticCost<'a>>,
    store_addr_class: &'a ClassCost,
    store_addr_ports: u16,
    store_data_ports: u16,
    /// Nop fusion applies: the machine does it and the block has something
    /// besides nops (a block of nops only would alternate between
    /// iterations).
    nop_fusion: bool,
    pub port_sets: Vec<Vec<usize>>,
    pub uops: Vec<Uop>,
    pub dyns: Vec<Dyn>,
    /// (producer µop, extra latency beyond the producer's).
    pub deps: Vec<(u32, u32)>,
    pub why: Vec<DepWhy>,
    /// Producer of each register in `written`, same order.
    producer: Vec<u32>,
    stores: VecDeque<StoreRec>,
    /// Iterations built.
    pub built: usize,
    /// The iteration later ones are copies of, once one is found.
    template: Option<usize>,
    /// Start of each built iteration in `uops` and `deps` (one more entry
    /// than iterations built).
    uop_start: Vec<u32>,
    dep_start: Vec<u32>,
    /// The builder's state after the previous iteration, µop ids made
    /// relative to that iteration's end.
    last_state: Option<BuilderState>,
    /// Registers the block writes (the others never get a producer).
    written: Vec<Reg>,
}

/// What decides the next iterations' inputs: each register's producer and
/// the stores loads may forward from (static index, data, address
/// producers), µop ids as distances back from the end of the iteration
/// just built (`-1` none, `-2` matches no load).
#[derive(PartialEq)]
struct BuilderState {
    producer: Vec<i64>,
    stores: Vec<(usize, i64, [i64; 4])>,
}

/// A graph's big arrays, handed from one graph to the next on a thread
/// (the analyzer models thousands of blocks: no allocation once warm).
#[derive(Default)]
struct GraphArrays {
    uops: Vec<Uop>,
    dyns: Vec<Dyn>,
    deps: Vec<(u32, u32)>,
    why: Vec<DepWhy>,
    uop_start: Vec<u32>,
    dep_start: Vec<u32>,
}

impl GraphArrays {
    fn clear(&mut self) {
        self.uops.clear();
        self.dyns.clear();
        self.deps.clear();
        self.why.clear();
        self.uop_start.clear();
        self.dep_start.clear();
    }
}

thread_local! {
    static GRAPH_ARRAYS: std::cell::RefCell<GraphArrays> = std::cell::RefCell::default();
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        let arrays = GraphArrays {
            uops: std::mem::take(&mut self.uops),
            dyns: std::mem::take(&mut self.dyns),
            deps: std::mem::take(&mut self.deps),
            why: std::mem::take(&mut self.why),
            uop_start: std::mem::take(&mut self.uop_start),
            dep_start: std::mem::take(&mut self.dep_start),
        };
        // During thread teardown the slot may be gone: then just free them.
        let _ = GRAPH_ARRAYS.try_with(|a| *a.borrow_mut() = arrays);
    }
}

/// Iterations the builder compares with their predecessor looking for a
/// template before it gives up and builds every iteration by hand.
const TEMPLATE_SEARCH: usize = 6;

impl<'a> Graph<'a> {
    pub fn new(m: &'a Machine, shapes: &'a [Shape], port_names: &[String]) -> Self {
        let n = shapes.len();
        let mut port_sets: Vec<Vec<usize>> = Vec::new();
        // Class costs and port sets by class name, remembered by the name's
        // address (shapes name their class with static strings): the
        // machine's table is a map of strings, and a block asks for a few
        // classes many times.
        let mut seen: Vec<(&'static str, &ClassCost, u16)> = Vec::new();
        let mut class_of = |class: &'static str| -> (&'a ClassCost, u16) {
            if let Some(&(_, cost, set)) = seen.iter().find(|e| std::ptr::eq(e.0, class)) {
                return (cost, set);
            }
            let cost = m.class(class);
            let ids: Vec<usize> = cost
                .ports
                .iter()
                .map(|p| port_names.iter().position(|x| x == p).unwrap_or(0))
                .collect();
            let set = match port_sets.iter().position(|s| *s == ids) {
                Some(k) => k as u16,
                None => {
                    port_sets.push(ids);
                    (port_sets.len() - 1) as u16
                }
            };
            seen.push((class, cost, set));
            (cost, set)
        };
        let fuse_next = |s: usize| {
            m.macro_fusion && shapes[s].fusible && s + 1 < n && shapes[s + 1].cond_branch
        };
        let costs = (0..n)
            .map(|s| {
                let sh = &shapes[s];
                let (cost, _) = class_of(sh.class);
                let load_class = if sh.vector_mem { "vec_load" } else { "load" };
                let (load_cost, load_ports) = class_of(load_class);
                StaticCost {
                    class: cost,
                    load_class: load_cost,
                    latency: cost.latency,
                    occupancy: cost.occupancy,
                    slots: cost.uops.max(1) + (sh.load.is_some() && sh.store.is_some()) as u32,
                    exec_ports: class_of(if fuse_next(s) { "branch" } else { sh.class }).1,
                    load_ports,
                    load_latency: load_cost.latency,
                    fuse_next: fuse_next(s),
                    eliminated: (sh.zero_idiom && m.zero_idioms)
                        || m.eliminates_move(sh)
                        || (sh.imm_add && m.immediate_folding),
                }
            })
            .collect();
        let (store_addr_class, store_addr_ports) = class_of("store_addr");
        let store_data_ports = class_of("store_data").1;
        // The arrays of the thread's previous graph, emptied.
        let mut arrays = GRAPH_ARRAYS.with(|a| std::mem::take(&mut *a.borrow_mut()));
        arrays.clear();
        let mut written: Vec<Reg> = shapes
            .iter()
            .flat_map(|s| s.writes.iter().copied())
            .collect();
        written.sort_unstable();
        written.dedup();
        Graph {
            store_addr_class,
            store_addr_ports,
            store_data_ports,
            nop_fusion: m.nop_fusion && shapes.iter().any(|sh| !sh.is_nop),
            m,
            shapes,
            costs,
            port_sets,
            uops: arrays.uops,
            dyns: arrays.dyns,
            deps: arrays.deps,
            why: arrays.why,
            producer: vec![NONE; written.len()],
            stores: VecDeque::new(),
            built: 0,
            template: None,
            uop_start: {
                arrays.uop_start.push(0);
                arrays.uop_start
            },
            dep_start: {
                arrays.dep_start.push(0);
                arrays.dep_start
            },
            last_state: None,
            written,
        }
    }

    /// The cost of static instruction `s`'s class.
    pub fn class_cost(&self, s: usize) -> &'a ClassCost {
        self.costs[s].class
    }

    /// The ports a pure load of `s` (`load` or `vec_load`) or a pure store
    /// (`store_addr`) waits on.
    pub fn memory_ports(&self, s: usize) -> &'a [String] {
        if self.shapes[s].load.is_some() {
            &self.costs[s].load_class.ports
        } else {
            &self.store_addr_class.ports
        }
    }

    fn builder_state(&self) -> BuilderState {
        let end = self.uops.len() as i64;
        let rel = |x: u32| match x {
            NONE => -1,
            x if x == NONE - 1 => -2,
            x => end - x as i64,
        };
        BuilderState {
            producer: self.producer.iter().map(|&p| rel(p)).collect(),
            stores: self
                .stores
                .iter()
                .map(|st| (st.stat, rel(st.data), st.prod.map(rel)))
                .collect(),
        }
    }

    /// Appends one iteration: a shifted copy of the template once the graph
    /// repeats (from the second or third iteration on, every input comes from
    /// the same or an earlier iteration at a fixed distance), else built
    /// from the instructions.
    pub fn build_iteration(&mut self) {
        match self.template {
            Some(t) => self.copy_iteration(t),
            None if self.built > TEMPLATE_SEARCH => self.build_from_instructions(),
            None => {
                self.build_from_instructions();
                let k = self.built - 1;
                let state = self.builder_state();
                if let Some(last) = &self.last_state {
                    // How far back a producer may point: not into the first iteration.
                    let reach = self.uops.len() as i64 - self.uop_start[1] as i64;
                    if self.repeats_previous(k) && Self::state_repeats(last, &state, reach) {
                        self.template = Some(k);
                    }
                }
                self.last_state = Some(state);
            }
        }
        self.uop_start.push(self.uops.len() as u32);
        self.dep_start.push(self.deps.len() as u32);
    }

    /// Whether iteration `k` is iteration `k - 1` shifted by one
    /// iteration's µops, inputs and instructions.
    fn repeats_previous(&self, k: usize) -> bool {
        let n = self.shapes.len() as u32;
        let (u0, u1, u2) = (
            self.uop_start[k - 1],
            self.uop_start[k],
            self.uops.len() as u32,
        );
        let (d0, d1, d2) = (
            self.dep_start[k - 1],
            self.dep_start[k],
            self.deps.len() as u32,
        );
        let (du, dd) = (u1 - u0, d1 - d0);
        if u2 - u1 != du || d2 - d1 != dd {
            return false;
        }
        let same_uop = |a: &Uop, b: &Uop| {
            b.insn == a.insn + n
                && b.ports == a.ports
                && b.latency == a.latency
                && b.occupancy == a.occupancy
                && b.deps.start == a.deps.start + dd
                && b.deps.end == a.deps.end + dd
        };
        let same_dep = |i: u32| {
            let (a, b) = (i as usize, (i + dd) as usize);
            self.deps[b] == (self.deps[a].0 + du, self.deps[a].1) && self.why[b] == self.why[a]
        };
        let same_dyn = |i: usize| {
            let (a, b) = (&self.dyns[i], &self.dyns[i + n as usize]);
            b.stat == a.stat
                && b.uops.start == a.uops.start + du
                && b.uops.end == a.uops.end + du
                && b.slots == a.slots
                && b.bytes == a.bytes
                && b.exec.map(|e| e as u32) == a.exec.map(|e| e as u32 + du)
        };
        (u0..u1).all(|u| same_uop(&self.uops[u as usize], &self.uops[(u + du) as usize]))
            && (d0..d1).all(same_dep)
            && ((k - 1) * n as usize..k * n as usize).all(same_dyn)
    }

    /// Whether the builder's state after iteration k (`now`) is the one after
    /// k − 1 (`last`) moved one iteration on — then the graph repeats from
    /// here: the builder works the same on it. The stores are compared from
    /// the newest (the oldest of `now` have no counterpart in `last`; they
    /// are the first iteration's, and no later load can reach them when no
    /// producer still points into that iteration, as required here: a
    /// register's producer moves on by one iteration every iteration).
    fn state_repeats(last: &BuilderState, now: &BuilderState, reach: i64) -> bool {
        let (a, b) = (&last.stores, &now.stores);
        let tail = a.len().min(b.len());
        last.producer == now.producer
            && a[a.len() - tail..] == b[b.len() - tail..]
            && (b.len() == a.len() || a.len() < 64)
            && now.producer.iter().all(|&p| p <= reach)
    }

    /// Appends iteration `built` as a copy of iteration `t` shifted.
    fn copy_iteration(&mut self, t: usize) {
        let it = self.built;
        self.built += 1;
        let n = self.shapes.len();
        let shift = (it - t) as u32;
        let (u0, u1) = (self.uop_start[t], self.uop_start[t + 1]);
        let (d0, d1) = (self.dep_start[t], self.dep_start[t + 1]);
        let (du, dd, dn) = (shift * (u1 - u0), shift * (d1 - d0), shift * n as u32);
        for k in d0..d1 {
            let (p, x) = self.deps[k as usize];
            self.deps.push((p + du, x));
            let w = self.why[k as usize];
            self.why.push(w);
        }
        for u in u0..u1 {
            let a = &self.uops[u as usize];
            let b = Uop {
                insn: a.insn + dn,
                ports: a.ports,
                latency: a.latency,
                occupancy: a.occupancy,
                deps: a.deps.start + dd..a.deps.end + dd,
                issued: NOT_YET,
                complete: NOT_YET,
                ready: NOT_YET,
            };
            self.uops.push(b);
        }
        for i in t * n..(t + 1) * n {
            let a = &self.dyns[i];
            let b = Dyn {
                stat: a.stat,
                iter: it,
                uops: a.uops.start + du..a.uops.end + du,
                slots: a.slots,
                bytes: a.bytes,
                dispatched: 0,
                retired: None,
                exec: a.exec.map(|e| e + du as usize),
                dispatch_stall: None,
            };
            self.dyns.push(b);
        }
    }

    /// A register's producer: [`NONE`] for one the block never writes.
    fn producer(&self, r: Reg) -> u32 {
        match self.written.iter().position(|&w| w == r) {
            Some(k) => self.producer[k],
            None => NONE,
        }
    }

    fn set_producer(&mut self, r: Reg, u: u32) {
        if let Some(k) = self.written.iter().position(|&w| w == r) {
            self.producer[k] = u;
        }
    }

    /// Adds the inputs named by `regs` that have a producer.
    fn push_reg_deps(&mut self, regs: &[Reg]) {
        for &r in regs {
            let p = self.producer(r);
            if p != NONE {
                self.deps.push((p, 0));
                self.why.push(DepWhy::Reg(r));
            }
        }
    }

    fn push_uop(&mut self, insn: u32, ports: u16, latency: u32, occupancy: u32, from: u32) -> u32 {
        self.uops.push(Uop {
            insn,
            ports,
            latency,
            occupancy,
            deps: from..self.deps.len() as u32,
            issued: NOT_YET,
            complete: NOT_YET,
            ready: NOT_YET,
        });
        (self.uops.len() - 1) as u32
    }

    /// Appends one iteration of the block, from its instructions.
    fn build_from_instructions(&mut self) {
        let m = self.m;
        let shapes = self.shapes;
        let n = shapes.len();
        let it = self.built;
        self.built += 1;
        let (store_addr_ports, store_data_ports) = (self.store_addr_ports, self.store_data_ports);
        let nop_fusion = self.nop_fusion;
        for (s, sh) in shapes.iter().enumerate() {
            let c = &self.costs[s];
            let (latency, occupancy, slots, exec_ports, load_ports, load_latency, eliminated) = (
                c.latency,
                c.occupancy,
                c.slots,
                c.exec_ports,
                c.load_ports,
                c.load_latency,
                c.eliminated,
            );
            let id = self.dyns.len() as u32;
            let first_uop = self.uops.len() as u32;
            let mut addr_prod = [NONE; 4];
            // More address registers than the table holds (never seen): such
            // an access neither forwards nor is forwarded to.
            let addr_known = sh.addr_reads.len() <= addr_prod.len();
            for (k, r) in sh.addr_reads.iter().take(4).enumerate() {
                addr_prod[k] = self.producer(*r);
            }
            let mut load_uop = None;
            if let Some(addr) = sh.load {
                let from = self.deps.len() as u32;
                self.push_reg_deps(&sh.addr_reads);
                let mut latency = load_latency;
                let found = if addr_known {
                    self.stores
                        .iter()
                        .rev()
                        .find(|st| st.addr == addr && st.prod == addr_prod)
                        .map(|st| (st.data, st.stat))
                } else {
                    None
                };
                if let Some((data, st)) = found {
                    let stack =
                        matches!(addr.base, iced_x86::Register::RSP | iced_x86::Register::RBP)
                            && addr.index == iced_x86::Register::None;
                    let renamed = match m.memory_renaming.as_str() {
                        // Measured on Golden Cove: general-register data only; an
                        // xmm store/load round trip takes ~7 cycles.
                        "any" => !shapes[st].rmw_reg_source && !shapes[st].vector_mem,
                        "stack" => stack,
                        // Measured on Zen 4: any base, RMW included; 1 cycle
                        // round trips for 32/64-bit data, 6-9 otherwise.
                        "wide-gpr" => {
                            addr.size >= 4
                                && !shapes[st].vector_mem
                                && !sh.vector_mem
                                && !sh.extending_load
                        }
                        _ => false,
                    };
                    if renamed {
                        // Renamed: the load's value is the stored register's, no forwarding delay.
                        let r = self.uops[data as usize].deps.clone();
                        for k in r {
                            let (d, w) = (self.deps[k as usize], self.why[k as usize]);
                            self.deps.push(d);
                            self.why.push(w);
                        }
                        latency = 0;
                    } else {
                        self.deps.push((data, 0));
                        self.why.push(DepWhy::Forward(st));
                        // From the store data's issue to the load's result.
                        latency = m.store_forward_latency.saturating_sub(1).max(1);
                    }
                }
                load_uop = Some(self.push_uop(id, load_ports, latency, 1, from));
            }
            let fused_branch = s > 0
                && sh.cond_branch
                && self.costs[s - 1].fuse_next
                && self.dyns.last().is_some_and(|p| p.stat == s - 1);
            let nop_fused =
                nop_fusion && sh.is_nop && self.dyns.last().is_some_and(|p| p.slots > 0);
            let mut exec_uop = None;
            if !fused_branch && sh.class != "nop" && !eliminated {
                let from = self.deps.len() as u32;
                self.push_reg_deps(&sh.reads);
                if let Some(l) = load_uop {
                    self.deps.push((l, 0));
                    self.why.push(DepWhy::Reg(LOAD_RESULT));
                }
                exec_uop = Some(self.push_uop(id, exec_ports, latency, occupancy, from));
            }
            if let Some(addr) = sh.store {
                let from = self.deps.len() as u32;
                self.push_reg_deps(&sh.addr_reads);
                self.push_uop(id, store_addr_ports, 1, 1, from);
                let from = self.deps.len() as u32;
                match exec_uop {
                    Some(e) => {
                        self.deps.push((e, 0));
                        self.why.push(DepWhy::Reg(LOAD_RESULT));
                    }
                    None => self.push_reg_deps(&sh.reads),
                }
                let data = self.push_uop(id, store_data_ports, 1, 1, from);
                self.stores.push_back(StoreRec {
                    addr,
                    // A producer id no µop has: matches no load.
                    prod: if addr_known { addr_prod } else { [NONE - 1; 4] },
                    data,
                    stat: s,
                });
                if self.stores.len() > 64 {
                    self.stores.pop_front();
                }
            }
            // Results: the execution µop, else the load; eliminated moves alias the source.
            for &w in &sh.writes {
                if sh.zero_idiom && m.zero_idioms {
                    self.set_producer(w, NONE);
                } else if let Some(e) = exec_uop {
                    self.set_producer(w, e);
                } else if m.eliminates_move(sh) {
                    let p = sh.reads.first().map_or(NONE, |r| self.producer(*r));
                    self.set_producer(w, p);
                } else if sh.imm_add && m.immediate_folding {
                    // Folded at rename: the value is ready when its source is.
                    let src = sh
                        .reads
                        .iter()
                        .chain(sh.addr_reads.iter())
                        .find(|r| **r != FLAGS);
                    let p = src.map_or(NONE, |r| self.producer(*r));
                    self.set_producer(w, p);
                } else if let Some(l) = load_uop {
                    self.set_producer(w, l);
                }
            }
            self.dyns.push(Dyn {
                stat: s,
                iter: it,
                uops: first_uop..self.uops.len() as u32,
                slots: if fused_branch || nop_fused { 0 } else { slots },
                bytes: sh.len as u32,
                dispatched: 0,
                retired: None,
                exec: exec_uop.map(|e| e as usize),
                dispatch_stall: None,
            });
        }
        debug_assert_eq!(self.dyns.len(), self.built * n);
    }

    /// The time a µop's inputs are all available (and it has been dispatched).
    fn ready_time(&self, u: usize, dispatched: u64) -> u64 {
        let mut t = dispatched + 1;
        for k in self.uops[u].deps.clone() {
            let (p, extra) = self.deps[k as usize];
            t = t.max(self.uops[p as usize].complete().unwrap_or(0) + extra as u64);
        }
        t
    }
}

/// Decides when a simulation has reached its steady state, from what it
/// looks like each time an iteration's last instruction retires: that
/// cycle, the ROB's occupancy and the µops issued but not retired.
///
/// Steady: over the last three periods (at least [`Steady::MIN_RUN`]
/// iterations) of some period p ≤ [`Steady::MAX_PERIOD`], the cycles between
/// iteration ends repeat exactly, and occupancy and issued-not-retired µops
/// each grow by the same amount every period, never shrink (a ROB filling
/// behind a slow chain keeps the rate; a backlog of finished work draining
/// at the retire width does not). The simulation is deterministic, so this
/// is the periodic regime itself, and results are measured over whole
/// periods: exact, not averaged.
struct Steady {
    min_run: usize,
    /// Per iteration: (end cycle, ROB occupancy, µops issued not retired).
    marks: Vec<(u64, u64, u64)>,
}

impl Steady {
    const MAX_PERIOD: usize = 16;
    const MIN_RUN: usize = 12;
    /// Iterations measured: whole periods covering at least this many.
    const MEASURE: usize = 8;
    /// Per period p, the iterations measured (a table: a division per
    /// period per iteration was a sixth of this test's time).
    const MEASURE_OF: [usize; Self::MAX_PERIOD + 1] = {
        let mut t = [0; Self::MAX_PERIOD + 1];
        let mut p = 1;
        while p <= Self::MAX_PERIOD {
            t[p] = p * Self::MEASURE.div_ceil(p);
            p += 1;
        }
        t
    };

    /// Never steady when not stopping early (every iteration asked for runs).
    fn new(iterations: usize, stop_early: bool) -> Self {
        Steady {
            min_run: if stop_early {
                Self::MIN_RUN
            } else {
                usize::MAX / 4
            },
            marks: Vec::with_capacity(iterations.min(64)),
        }
    }

    /// Cycle each iteration's last instruction retired.
    fn end(&self, it: usize) -> u64 {
        self.marks[it].0
    }

    fn len(&self) -> usize {
        self.marks.len()
    }

    /// Records an iteration's end; the iterations to measure over once steady.
    fn push(&mut self, end: u64, occupancy: u64, in_flight: u64) -> Option<Range<usize>> {
        self.marks.push((end, occupancy, in_flight));
        let e = &self.marks;
        let k = e.len();
        for p in 1..=Self::MAX_PERIOD {
            let span = (3 * p).max(self.min_run);
            let measure = Self::MEASURE_OF[p];
            if k < span + 2 * p + 1 || k < measure + 1 {
                break;
            }
            // Growth over one period, by the last one.
            let grow =
                |j: usize, f: fn(&(u64, u64, u64)) -> u64| f(&e[j]) as i64 - f(&e[j - p]) as i64;
            let (go, gi) = (grow(k - 1, |m| m.1), grow(k - 1, |m| m.2));
            if go < 0 || gi < 0 {
                continue;
            }
            let periodic = (k - span..k).rev().all(|j| {
                e[j].0 - e[j - 1].0 == e[j - p].0 - e[j - p - 1].0
                    && grow(j, |m| m.1) == go
                    && grow(j, |m| m.2) == gi
            });
            if periodic {
                return Some((k - measure)..k);
            }
        }
        None
    }

    /// Stopped before a steady state: the second half of what completed.
    fn fallback(&self, measured: Range<usize>) -> Range<usize> {
        let k = self.len();
        if measured.end > k {
            (k / 2).max(1)..k.max(1)
        } else {
            measured
        }
    }
}

/// The simulation's working buffers, reused from one block to the next.
#[derive(Default)]
struct Scratch {
    /// Per µop: inputs not issued yet.
    pending: Vec<u32>,
    /// Dependents as linked lists: first edge per µop, (dependent, next edge).
    first_edge: Vec<u32>,
    edges: Vec<(u32, u32)>,
    dispatched_uop: Vec<bool>,
    wheel: Wheel,
    /// Issuable µops per port set, oldest first.
    queues: Vec<VecDeque<u32>>,
    rob: VecDeque<usize>,
}

impl Scratch {
    fn clear(&mut self, port_sets: usize) {
        self.pending.clear();
        self.first_edge.clear();
        self.edges.clear();
        self.dispatched_uop.clear();
        self.wheel.clear();
        self.queues.iter_mut().for_each(VecDeque::clear);
        self.queues.resize(port_sets, VecDeque::new());
        self.rob.clear();
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// µops waiting for the cycle their inputs are ready, in buckets by cycle
/// (a ready time is never in the past and seldom far ahead); those further
/// than the wheel's span wait in a list.
#[derive(Default)]
struct Wheel {
    slots: Vec<Vec<u32>>,
    far: Vec<(u64, u32)>,
}

impl Wheel {
    const SPAN: u64 = 128;

    fn clear(&mut self) {
        self.slots.resize(Self::SPAN as usize, Vec::new());
        self.slots.iter_mut().for_each(Vec::clear);
        self.far.clear();
    }

    fn push(&mut self, now: u64, t: u64, u: u32) {
        debug_assert!(t >= now);
        if t - now < Self::SPAN {
            self.slots[(t % Self::SPAN) as usize].push(u);
        } else {
            self.far.push((t, u));
        }
    }

    /// Hands out every µop ready by `now`: this cycle's bucket, and the
    /// last cycle's (filled after its last look).
    fn take_due(&mut self, now: u64, mut f: impl FnMut(u32)) {
        if !self.far.is_empty() {
            let slots = &mut self.slots;
            self.far.retain(|&(t, u)| {
                let near = t - now < Self::SPAN;
                if near {
                    slots[(t % Self::SPAN) as usize].push(u);
                }
                !near
            });
        }
        for c in [now.wrapping_sub(1), now] {
            for u in self.slots[(c % Self::SPAN) as usize].drain(..) {
                f(u);
            }
        }
    }
}

/// A simulation's outcome.
pub(crate) struct SimResult<'a> {
    pub graph: Graph<'a>,
    /// Per dynamic instruction: cycles it was the oldest not retired.
    pub head: Vec<u64>,
    /// Iterations of the steady state the results are measured over.
    pub measured: Range<usize>,
}

/// Runs `shapes` back to back on `m` until the steady state (at most
/// `iterations` times or 10 M cycles).
pub(crate) fn simulate<'a>(
    m: &'a Machine,
    shapes: &'a [Shape],
    port_names: &[String],
    iterations: usize,
    stop_early: bool,
) -> SimResult<'a> {
    let n = shapes.len();
    let mut g = Graph::new(m, shapes, port_names);
    let (width, rob_cap, retire_w, bytes_pc) = (
        m.dispatch_width,
        m.rob_size as usize,
        m.retire_width,
        m.decode_bytes.max(16),
    );
    let total = iterations * n;
    // Grown with the graph (most runs stop long before `total`).
    let mut head: Vec<u64> = Vec::with_capacity(g.dyns.capacity());
    let nports = port_names.len().max(1);
    let mut port_free = vec![0u64; nports];
    let mut port_load = vec![0u64; nports];
    // Port sets as bit masks (a machine has at most 64 ports, checked when
    // its description is read); an empty set (0) needs no port.
    let masks: Vec<u64> = g
        .port_sets
        .iter()
        .map(|s| s.iter().fold(0u64, |m, &p| m | 1u64 << p))
        .collect();
    // Event-driven issue: a µop enters `ready_heap` once every input has
    // issued (so its ready time is known) and it is dispatched; from there
    // it moves to the queue of its port set (kept in age order) when its
    // time comes. Issuing the oldest head among the queues whose ports have
    // one free is issuing oldest first: within a pass free ports only get
    // fewer, so a queue passed over stays passed over.
    // Buffers kept from the thread's previous run (no allocation once warm).
    let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    scratch.clear(g.port_sets.len());
    let Scratch {
        pending,
        first_edge,
        edges,
        dispatched_uop,
        wheel: ready_heap,
        queues,
        rob,
    } = &mut scratch;
    let mut next_dispatch = 0usize;
    let mut owed = 0u32;
    let mut retired = 0usize;
    let mut cycle: u64 = 0;
    let mut steady = Steady::new(iterations, stop_early);
    let (mut issued_uops, mut retired_uops) = (0u64, 0u64);
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
            let done = g.dyns[front]
                .uops
                .clone()
                .all(|u| g.uops[u as usize].complete <= cycle);
            if !done {
                break;
            }
            if let Some(addr) = shapes[g.dyns[front].stat].store {
                let line = (addr.base, addr.index, addr.disp as i64 >> 6);
                let same_line = last_store_line == Some(line);
                if commits >= m.store_commit && !same_line {
                    break;
                }
                commits += 1;
                last_store_line = Some(line);
            }
            g.dyns[front].retired = Some(cycle);
            retired_uops += g.dyns[front].uops.len() as u64;
            rob.pop_front();
            retired += 1;
            // A fused nop retires with its partner (measured on Zen 4: 4
            // movs and 4 nops per copy 0.66 cycles, above the retire width
            // otherwise). Macro-fused branches still count: not measured.
            let d = &g.dyns[front];
            if d.slots > 0 || !shapes[d.stat].is_nop {
                r += 1;
            }
            if retired.is_multiple_of(n) {
                let in_flight = issued_uops - retired_uops;
                if let Some(range) = steady.push(cycle, rob.len() as u64, in_flight) {
                    measured = range;
                    break 'sim;
                }
            }
        }
        // Head of the ROB this cycle (or the next to dispatch when empty).
        if let Some(&front) = rob.front() {
            head[front] += 1;
        } else if next_dispatch < total {
            if next_dispatch >= head.len() {
                head.resize(next_dispatch + 1, 0);
            }
            head[next_dispatch] += 1;
        }
        // Issue, oldest first (twice: a zero-latency result can wake a µop
        // in the same cycle).
        let mut woke_now = true;
        for _pass in 0..2 {
            // The second pass only matters when the first woke a µop ready
            // this very cycle (a zero-latency producer): otherwise it finds
            // what the first left.
            if !woke_now {
                break;
            }
            woke_now = false;
            ready_heap.take_due(cycle, |u| {
                let q = &mut queues[g.uops[u as usize].ports as usize];
                // Mostly younger than every µop waiting: to the back.
                if q.back().is_none_or(|&x| x < u) {
                    q.push_back(u);
                } else {
                    let at = q.partition_point(|&x| x < u);
                    q.insert(at, u);
                }
            });
            let mut free = (0..nports)
                .filter(|&p| port_free[p] <= cycle)
                .fold(0u64, |m, p| m | 1 << p);
            loop {
                let mut best: Option<(u32, usize)> = None;
                for (k, q) in queues.iter().enumerate() {
                    if let Some(&u) = q.front() {
                        let can = masks[k] == 0 || masks[k] & free != 0;
                        if can && best.is_none_or(|(b, _)| u < b) {
                            best = Some((u, k));
                        }
                    }
                }
                let Some((u, k)) = best else {
                    break;
                };
                queues[k].pop_front();
                let u = u as usize;
                let occupancy = g.uops[u].occupancy as u64;
                let mut candidates = masks[k] & free;
                if candidates != 0 {
                    // The least used free port, the lowest on a tie.
                    let mut port = candidates.trailing_zeros() as usize;
                    while candidates != 0 {
                        let p = candidates.trailing_zeros() as usize;
                        if port_load[p] < port_load[port] {
                            port = p;
                        }
                        candidates &= candidates - 1;
                    }
                    port_free[port] = cycle + occupancy;
                    port_load[port] += occupancy;
                    if occupancy > 0 {
                        free &= !(1 << port);
                    }
                }
                g.uops[u].issued = cycle;
                issued_uops += 1;
                g.uops[u].complete = cycle + g.uops[u].latency as u64;
                let mut e = first_edge[u];
                while e != NONE {
                    let (d, next) = edges[e as usize];
                    let d = d as usize;
                    pending[d] -= 1;
                    if pending[d] == 0 && dispatched_uop[d] {
                        let r = g.ready_time(d, g.dyns[g.uops[d].insn as usize].dispatched);
                        g.uops[d].ready = r;
                        woke_now |= r <= cycle;
                        ready_heap.push(cycle, r, d as u32);
                    }
                    e = next;
                }
            }
        }
        // Dispatch (what a microcoded instruction wider than the machine
        // took beyond its first cycle is paid from the next ones).
        let mut slots = owed.min(width);
        owed -= slots;
        let mut bytes = 0u32;
        while next_dispatch < total {
            if next_dispatch >= g.dyns.len() {
                let before = g.uops.len();
                g.build_iteration();
                head.resize(g.dyns.len(), 0);
                for u in before..g.uops.len() {
                    // Only inputs not issued yet will announce themselves.
                    let mut waiting_on = 0;
                    first_edge.push(NONE);
                    for k in g.uops[u].deps.clone() {
                        let p = g.deps[k as usize].0 as usize;
                        if g.uops[p].issued == NOT_YET {
                            edges.push((u as u32, first_edge[p]));
                            first_edge[p] = (edges.len() - 1) as u32;
                            waiting_on += 1;
                        }
                    }
                    pending.push(waiting_on);
                    dispatched_uop.push(false);
                }
            }
            let d = &g.dyns[next_dispatch];
            let alone = slots == 0 && d.slots > width;
            let stall = if rob.len() >= rob_cap {
                Some(DispatchStall::RobFull)
            } else if slots + d.slots > width && !alone {
                Some(DispatchStall::Width)
            } else if bytes + d.bytes > bytes_pc && bytes > 0 {
                Some(DispatchStall::FrontEnd)
            } else {
                None
            };
            if let Some(why) = stall {
                g.dyns[next_dispatch].dispatch_stall.get_or_insert(why);
                break;
            }
            if alone {
                owed = d.slots - width;
                slots = width;
            } else {
                slots += d.slots;
            }
            bytes += d.bytes;
            g.dyns[next_dispatch].dispatched = cycle;
            for u in g.dyns[next_dispatch].uops.clone() {
                let u = u as usize;
                dispatched_uop[u] = true;
                if pending[u] == 0 {
                    let r = g.ready_time(u, cycle);
                    g.uops[u].ready = r;
                    ready_heap.push(cycle, r, u as u32);
                }
            }
            rob.push_back(next_dispatch);
            next_dispatch += 1;
        }
        cycle += 1;
    }
    let measured = steady.fallback(measured);
    SCRATCH.with(|s| *s.borrow_mut() = scratch);
    SimResult {
        graph: g,
        head,
        measured,
    }
}

/// Cycles per iteration of the dependency chains alone: the same graph
/// with two iterations dispatched per cycle, a ROB of 64 iterations, every
/// port free and retirement unbounded. `None` without a steady state.
pub(crate) fn chain_rate(g: &mut Graph, iterations: usize, stop_early: bool) -> Option<f64> {
    let n = g.shapes.len();
    let width: u32 = 2 * g.costs.iter().map(|c| c.slots + 1).sum::<u32>();
    let rob_cap = 64 * n.max(1);
    let mut complete = vec![0u64; g.uops.len()];
    let mut retire: Vec<u64> = Vec::with_capacity(g.dyns.len());
    let mut steady = Steady::new(iterations, stop_early);
    let (mut cycle, mut slots) = (0u64, 0u32);
    let mut last_retire = 0u64;
    let mut measured = None;
    for it in 0..iterations {
        if it >= g.built {
            g.build_iteration();
        }
        complete.resize(g.uops.len(), 0);
        for i in it * n..(it + 1) * n {
            let d = &g.dyns[i];
            if slots + d.slots > width {
                cycle += 1;
                slots = 0;
            }
            if i >= rob_cap && retire[i - rob_cap] > cycle {
                cycle = retire[i - rob_cap];
                slots = 0;
            }
            slots += d.slots;
            let mut done = cycle + 1;
            for u in d.uops.clone() {
                let u = u as usize;
                let mut t = cycle + 1;
                for k in g.uops[u].deps.clone() {
                    let (p, extra) = g.deps[k as usize];
                    t = t.max(complete[p as usize] + extra as u64);
                }
                complete[u] = t + g.uops[u].latency as u64;
                done = done.max(complete[u]);
            }
            last_retire = last_retire.max(done);
            retire.push(last_retire);
        }
        if let Some(range) = steady.push(last_retire, 0, 0) {
            measured = Some(range);
            break;
        }
    }
    let measured = steady.fallback(measured.unwrap_or(iterations / 2..iterations));
    if measured.is_empty() || measured.start == 0 || measured.end > steady.len() {
        return None;
    }
    let cycles = steady.end(measured.end - 1) - steady.end(measured.start - 1);
    Some(cycles as f64 / measured.len() as f64)
}
