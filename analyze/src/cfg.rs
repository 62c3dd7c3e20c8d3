//! Control-flow graph of one function (DCPI's per-procedure CFG): basic
//! blocks, fall-through / taken / jump-table edges, calls inside blocks,
//! how each block leaves the function (return, tail call, noreturn call,
//! unresolved indirect jump), dominators and post-dominators (petgraph),
//! natural loops, and frequency-equivalence classes: blocks A and B must
//! run equally often when A dominates B, B post-dominates A and both sit in
//! the same loops (DCPI's rule).
//!
//! Limits: jump tables are resolved for gcc/clang's two x86-64 shapes
//! (`jmp *T(,%r,8)` and `lea T(%rip),%rX; movslq (%rX,%rY,4); add; jmp *%r`)
//! with the bound from the `cmp $N; ja` before them, else by reading entries
//! while they point inside the function; other indirect jumps leave the
//! function, and blocks nothing reaches then get a virtual entry. Exceptions
//! and longjmp are not edges.

use crate::disasm::{direct_target, is_bad};
use dcpi_models::block::Decoded;
use iced_x86::{ConditionCode, FlowControl, Mnemonic, OpKind, Register};
use petgraph::algo::dominators::simple_fast;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    FallThrough,
    Taken,
    JumpTable,
}

/// How a block leaves the function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "target", rename_all = "snake_case")]
pub enum Exit {
    Return,
    /// A jump to another function.
    TailCall(u64),
    /// A call to a function that never returns (exit, abort, ...).
    NoReturnCall(u64),
    /// An indirect jump whose targets are unknown.
    IndirectJump,
    /// ud2, int3, hlt or undecodable bytes.
    Trap,
    /// Runs off the end of the function's extent.
    FallsOff,
}

#[derive(Debug, Clone, Serialize)]
pub struct Block {
    /// Indices into [`Cfg::insns`].
    pub insns: Range<usize>,
    pub start: u64,
    /// Exclusive end address.
    pub end: u64,
    /// Call targets inside the block (None = indirect call).
    pub calls: Vec<Option<u64>>,
    pub exit: Option<Exit>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
}

#[derive(Debug, Clone, Serialize)]
pub struct Loop {
    pub header: usize,
    /// Blocks of the natural loop, header included, sorted.
    pub body: Vec<usize>,
    /// How many times the header runs per entry, where the code states it
    /// ([`crate::trip_counts`]).
    pub trips: Option<u64>,
}

impl Loop {
    /// Whether block `b` is in the loop's body.
    pub fn contains(&self, b: usize) -> bool {
        self.body.binary_search(&b).is_ok()
    }
}

/// A jump table found at an indirect jump.
#[derive(Debug, Clone, Serialize)]
pub struct JumpTable {
    pub jump: u64,
    pub table: u64,
    pub targets: Vec<u64>,
    /// Whether a `cmp $N; ja` gave the size (else entries were read while valid).
    pub bounded: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Cfg {
    pub start: u64,
    pub end: u64,
    #[serde(skip)]
    pub insns: Vec<Decoded>,
    pub blocks: Vec<Block>,
    pub edges: Vec<Edge>,
    pub jump_tables: Vec<JumpTable>,
    /// Immediate dominator of each block (None: the entry, or unreachable).
    pub idom: Vec<Option<usize>>,
    /// Immediate post-dominator (None: leaves the function directly, or never does).
    pub ipdom: Vec<Option<usize>>,
    pub loops: Vec<Loop>,
    /// Loops each block is in, innermost last.
    pub loops_of: Vec<Vec<usize>>,
    /// Frequency-equivalence class of each block.
    pub class_of: Vec<usize>,
    pub classes: Vec<Vec<usize>>,
    /// Edge indices leaving / entering each block.
    #[serde(skip)]
    out_edges: Vec<Vec<usize>>,
    #[serde(skip)]
    in_edges: Vec<Vec<usize>>,
}

/// How a block-ending instruction continues: in-function targets, how it
/// leaves the function, whether it also falls through.
type BlockEnd = (Vec<(usize, EdgeKind)>, Option<Exit>, bool);

/// What the CFG builder may ask of the image.
pub struct ImageAccess<'a> {
    /// Bytes at a virtual address (jump tables).
    pub read: &'a dyn Fn(u64, usize) -> Option<Vec<u8>>,
    /// Whether the function at an address never returns.
    pub is_noreturn: &'a dyn Fn(u64) -> bool,
    /// The general registers a call may change
    /// ([`crate::register_values::CallClobbers`]).
    pub clobbers: crate::register_values::CallClobbers<'a>,
}

/// Functions that never return, by name (glibc, libstdc++, Rust).
pub fn is_noreturn_name(name: &str) -> bool {
    let base = name.split('@').next().unwrap_or(name);
    matches!(
        base,
        "exit"
            | "_exit"
            | "_Exit"
            | "abort"
            | "__assert_fail"
            | "__assert_perror_fail"
            | "__stack_chk_fail"
            | "__fortify_fail"
            | "__chk_fail"
            | "err"
            | "errx"
            | "verr"
            | "verrx"
            | "longjmp"
            | "siglongjmp"
            | "__longjmp_chk"
            | "pthread_exit"
            | "__cxa_throw"
            | "__cxa_rethrow"
            | "_Unwind_Resume"
            | "std::terminate()"
            | "__libc_fatal"
            | "quick_exit"
            | "thrd_exit"
    ) || base.starts_with("std::__throw_")
        || base.starts_with("core::panicking::")
        || base.starts_with("std::process::exit")
        || base.starts_with("std::panicking::begin_panic")
}

fn is_trap(d: &Decoded) -> bool {
    is_bad(d)
        || matches!(
            d.instr.mnemonic(),
            Mnemonic::Ud2 | Mnemonic::Ud0 | Mnemonic::Ud1 | Mnemonic::Int3 | Mnemonic::Hlt
        )
}

impl Cfg {
    /// Builds the CFG of the function [start, end) from its instructions.
    pub fn build(insns: Vec<Decoded>, start: u64, end: u64, image: &ImageAccess) -> Cfg {
        let inside = |a: u64| a >= start && a < end;
        let index_of: BTreeMap<u64, usize> =
            insns.iter().enumerate().map(|(i, d)| (d.addr, i)).collect();
        let mut leaders = BTreeSet::new();
        if !insns.is_empty() {
            leaders.insert(0usize);
        }
        let mut jump_tables = Vec::new();
        // Per instruction that ends a block: its in-function targets and exit.
        let mut ends: BTreeMap<usize, BlockEnd> = BTreeMap::new();
        for (i, d) in insns.iter().enumerate() {
            let next_is_leader = |l: &mut BTreeSet<usize>| {
                if i + 1 < insns.len() {
                    l.insert(i + 1);
                }
            };
            let target_idx = |t: u64| index_of.get(&t).copied();
            if is_trap(d) {
                ends.insert(i, (vec![], Some(Exit::Trap), false));
                next_is_leader(&mut leaders);
                continue;
            }
            match d.instr.flow_control() {
                FlowControl::ConditionalBranch => {
                    let mut succ = Vec::new();
                    let mut exit = None;
                    match direct_target(d) {
                        Some(t) if inside(t) => match target_idx(t) {
                            Some(ti) => succ.push((ti, EdgeKind::Taken)),
                            None => exit = Some(Exit::IndirectJump),
                        },
                        Some(t) => exit = Some(Exit::TailCall(t)),
                        None => exit = Some(Exit::IndirectJump),
                    }
                    for (ti, _) in &succ {
                        leaders.insert(*ti);
                    }
                    ends.insert(i, (succ, exit, true));
                    next_is_leader(&mut leaders);
                }
                FlowControl::UnconditionalBranch => {
                    let (succ, exit) = match direct_target(d) {
                        Some(t) if inside(t) => match target_idx(t) {
                            Some(ti) => (vec![(ti, EdgeKind::Taken)], None),
                            None => (vec![], Some(Exit::IndirectJump)),
                        },
                        Some(t) => (vec![], Some(Exit::TailCall(t))),
                        None => (vec![], Some(Exit::IndirectJump)),
                    };
                    for (ti, _) in &succ {
                        leaders.insert(*ti);
                    }
                    ends.insert(i, (succ, exit, false));
                    next_is_leader(&mut leaders);
                }
                FlowControl::IndirectBranch => {
                    match jump_table(&insns, i, start, end, image) {
                        Some(jt) => {
                            let mut succ: Vec<(usize, EdgeKind)> = jt
                                .targets
                                .iter()
                                .filter_map(|t| target_idx(*t))
                                .map(|ti| (ti, EdgeKind::JumpTable))
                                .collect();
                            succ.sort();
                            succ.dedup();
                            for (ti, _) in &succ {
                                leaders.insert(*ti);
                            }
                            jump_tables.push(jt);
                            ends.insert(i, (succ, None, false));
                        }
                        None => {
                            ends.insert(i, (vec![], Some(Exit::IndirectJump), false));
                        }
                    }
                    next_is_leader(&mut leaders);
                }
                FlowControl::Return => {
                    ends.insert(i, (vec![], Some(Exit::Return), false));
                    next_is_leader(&mut leaders);
                }
                FlowControl::Call => {
                    if let Some(t) = direct_target(d) {
                        if (image.is_noreturn)(t) {
                            ends.insert(i, (vec![], Some(Exit::NoReturnCall(t)), false));
                            next_is_leader(&mut leaders);
                        }
                    }
                }
                _ => {}
            }
        }

        // Blocks from leaders.
        let leaders: Vec<usize> = leaders.into_iter().collect();
        let mut block_of_insn = vec![0usize; insns.len()];
        let mut blocks = Vec::with_capacity(leaders.len());
        for (b, &l) in leaders.iter().enumerate() {
            let stop = leaders.get(b + 1).copied().unwrap_or(insns.len());
            for slot in &mut block_of_insn[l..stop] {
                *slot = b;
            }
            let last = &insns[stop - 1];
            let calls = insns[l..stop]
                .iter()
                .filter(|d| crate::disasm::is_call(d))
                .map(direct_target)
                .collect();
            blocks.push(Block {
                insns: l..stop,
                start: insns[l].addr,
                end: last.addr + last.instr.len() as u64,
                calls,
                exit: None,
            });
        }
        let mut edges = Vec::new();
        for b in 0..blocks.len() {
            let last = blocks[b].insns.end - 1;
            let falls = match ends.get(&last) {
                Some((succ, exit, falls)) => {
                    for &(ti, kind) in succ {
                        edges.push(Edge {
                            from: b,
                            to: block_of_insn[ti],
                            kind,
                        });
                    }
                    blocks[b].exit = *exit;
                    *falls
                }
                None => true,
            };
            if falls {
                if b + 1 < blocks.len() {
                    edges.push(Edge {
                        from: b,
                        to: b + 1,
                        kind: EdgeKind::FallThrough,
                    });
                } else if blocks[b].exit.is_none() {
                    blocks[b].exit = Some(Exit::FallsOff);
                }
            }
        }
        edges.dedup();

        let mut cfg = Cfg {
            start,
            end,
            insns,
            blocks,
            edges,
            jump_tables,
            idom: vec![],
            ipdom: vec![],
            loops: vec![],
            loops_of: vec![],
            class_of: vec![],
            classes: vec![],
            out_edges: vec![],
            in_edges: vec![],
        };
        cfg.out_edges = vec![Vec::new(); cfg.blocks.len()];
        cfg.in_edges = vec![Vec::new(); cfg.blocks.len()];
        for (k, e) in cfg.edges.iter().enumerate() {
            cfg.out_edges[e.from].push(k);
            cfg.in_edges[e.to].push(k);
        }
        cfg.analyze_structure();
        let trips = crate::trip_counts::trip_counts(&cfg, image.clobbers);
        for (l, t) in cfg.loops.iter_mut().zip(trips) {
            l.trips = t;
        }
        cfg
    }

    pub fn successors(&self, b: usize) -> impl Iterator<Item = &Edge> {
        self.out_edges[b].iter().map(|&k| &self.edges[k])
    }

    pub fn predecessors(&self, b: usize) -> impl Iterator<Item = &Edge> {
        self.in_edges[b].iter().map(|&k| &self.edges[k])
    }

    /// Block `b`'s last instruction (its branch, where it ends in one).
    pub fn last_insn(&self, b: usize) -> &Decoded {
        &self.insns[self.blocks[b].insns.end - 1]
    }

    /// Alignment padding: a block nothing jumps or falls into, made of
    /// no-ops only (gcc's `nopw`, `xchg %ax,%ax`, `int3`). It never runs; its
    /// fall-through edge into the next block is an artefact of layout.
    pub fn is_padding(&self, b: usize) -> bool {
        use iced_x86::{Mnemonic, Register};
        b != 0
            && self.in_edges[b].is_empty()
            && self.insns[self.blocks[b].insns.clone()].iter().all(|d| {
                let i = &d.instr;
                match i.mnemonic() {
                    Mnemonic::Nop | Mnemonic::Int3 => true,
                    Mnemonic::Xchg => {
                        i.op_count() == 2
                            && i.op0_kind() == iced_x86::OpKind::Register
                            && i.op1_kind() == iced_x86::OpKind::Register
                            && i.op0_register() == i.op1_register()
                            && i.op0_register() != Register::None
                    }
                    _ => false,
                }
            })
    }

    /// Whether the edge `from` → `to` closes a loop: `to` is the header of
    /// a loop whose body holds `from`.
    pub fn is_back_edge(&self, from: usize, to: usize) -> bool {
        self.loops
            .iter()
            .any(|l| l.header == to && l.contains(from))
    }

    /// Whether the edge `from` → `to` leaves a loop (`from` is in a loop
    /// `to` is not).
    pub fn leaves_loop(&self, from: usize, to: usize) -> bool {
        self.loops_of[from]
            .iter()
            .any(|l| !self.loops_of[to].contains(l))
    }

    /// The blocks outside loop `l` that it leads to (its exits' targets).
    pub fn loop_exits(&self, l: &Loop) -> Vec<usize> {
        (0..self.blocks.len())
            .filter(|&b| !l.contains(b) && self.predecessors(b).any(|e| l.contains(e.from)))
            .collect()
    }

    /// The block holding an address.
    pub fn block_at(&self, addr: u64) -> Option<usize> {
        let i = self.blocks.partition_point(|b| b.start <= addr);
        let b = i.checked_sub(1)?;
        (addr < self.blocks[b].end).then_some(b)
    }

    /// Whether control can reach block `b`: from the entry, or — when an
    /// indirect jump leaves targets unknown — from anywhere.
    pub fn reachable(&self, b: usize) -> bool {
        b == 0
            || self.idom[b].is_some()
            || self
                .blocks
                .iter()
                .any(|x| x.exit == Some(Exit::IndirectJump))
    }

    /// Whether `a` dominates `b`.
    pub fn dominates(&self, a: usize, b: usize) -> bool {
        let mut x = Some(b);
        while let Some(n) = x {
            if n == a {
                return true;
            }
            x = self.idom[n];
        }
        false
    }

    fn analyze_structure(&mut self) {
        let n = self.blocks.len();
        let mut g = DiGraph::<(), ()>::with_capacity(n + 1, self.edges.len() + n);
        let nodes: Vec<NodeIndex> = (0..n).map(|_| g.add_node(())).collect();
        for e in &self.edges {
            g.add_edge(nodes[e.from], nodes[e.to], ());
        }
        self.idom = vec![None; n];
        if n > 0 {
            let dom = simple_fast(&g, nodes[0]);
            for (b, node) in nodes.iter().enumerate() {
                self.idom[b] = dom.immediate_dominator(*node).map(|x| x.index());
            }
        }
        // Post-dominators: the reversed graph from a virtual exit that every
        // leaving block reaches.
        let mut rg = DiGraph::<(), ()>::with_capacity(n + 1, self.edges.len() + n);
        let rnodes: Vec<NodeIndex> = (0..n).map(|_| rg.add_node(())).collect();
        let exit = rg.add_node(());
        for e in &self.edges {
            rg.add_edge(rnodes[e.to], rnodes[e.from], ());
        }
        for (b, blk) in self.blocks.iter().enumerate() {
            if blk.exit.is_some() {
                rg.add_edge(exit, rnodes[b], ());
            }
        }
        let pdom = simple_fast(&rg, exit);
        self.ipdom = (0..n)
            .map(|b| {
                pdom.immediate_dominator(rnodes[b])
                    .filter(|x| *x != exit)
                    .map(|x| x.index())
            })
            .collect();
        let reaches_exit: Vec<bool> = (0..n)
            .map(|b| pdom.immediate_dominator(rnodes[b]).is_some())
            .collect();

        // Natural loops, one per header.
        let mut bodies: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for e in &self.edges {
            if (self.idom[e.from].is_some() || e.from == 0) && self.dominates(e.to, e.from) {
                {
                    let body = bodies.entry(e.to).or_default();
                    body.insert(e.to);
                    let mut stack = vec![e.from];
                    while let Some(x) = stack.pop() {
                        if body.insert(x) {
                            stack.extend(self.predecessors(x).map(|p| p.from));
                        }
                    }
                }
            }
        }
        self.loops = bodies
            .into_iter()
            .map(|(header, body)| Loop {
                header,
                body: body.into_iter().collect(),
                trips: None,
            })
            .collect();
        // Outer loops first, so each block's list ends with its innermost.
        self.loops.sort_by_key(|l| std::cmp::Reverse(l.body.len()));
        self.loops_of = vec![Vec::new(); n];
        for (li, l) in self.loops.iter().enumerate() {
            for &b in &l.body {
                self.loops_of[b].push(li);
            }
        }

        // Post-dominator tree intervals for O(1) ancestor tests.
        let mut children = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for b in 0..n {
            match self.ipdom[b] {
                Some(p) => children[p].push(b),
                None => roots.push(b),
            }
        }
        let (mut pre, mut post) = (vec![0usize; n], vec![0usize; n]);
        let mut clock = 0;
        for r in roots {
            let mut stack = vec![(r, false)];
            while let Some((x, done)) = stack.pop() {
                if done {
                    post[x] = clock;
                    clock += 1;
                    continue;
                }
                pre[x] = clock;
                clock += 1;
                stack.push((x, true));
                stack.extend(children[x].iter().map(|c| (*c, false)));
            }
        }
        let pdominates = |a: usize, b: usize| {
            reaches_exit[a] && reaches_exit[b] && pre[a] <= pre[b] && post[b] <= post[a]
        };

        // Equivalence classes (union-find over dominator-chain candidates).
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], x: usize) -> usize {
            let mut r = x;
            while p[r] != r {
                r = p[r];
            }
            let mut y = x;
            while p[y] != r {
                let next = p[y];
                p[y] = r;
                y = next;
            }
            r
        }
        for b in 0..n {
            let mut a = self.idom[b];
            while let Some(d) = a {
                if pdominates(b, d) && self.loops_of[b] == self.loops_of[d] {
                    let (rb, rd) = (find(&mut parent, b), find(&mut parent, d));
                    parent[rb.max(rd)] = rb.min(rd);
                }
                a = self.idom[d];
            }
        }
        let mut class_ids: BTreeMap<usize, usize> = BTreeMap::new();
        self.class_of = vec![0; n];
        self.classes.clear();
        for b in 0..n {
            let r = find(&mut parent, b);
            let next = class_ids.len();
            let c = *class_ids.entry(r).or_insert(next);
            if c == self.classes.len() {
                self.classes.push(Vec::new());
            }
            self.classes[c].push(b);
            self.class_of[b] = c;
        }
    }
}

fn mem_table(d: &Decoded) -> Option<(u64, u32)> {
    let i = &d.instr;
    (i.op0_kind() == OpKind::Memory && i.memory_base() == Register::None)
        .then(|| (i.memory_displacement64(), i.memory_index_scale()))
}

/// Size of the table from `cmp $N,%reg; ja|jae` shortly before the jump.
fn table_bound(insns: &[Decoded], jump: usize) -> Option<u64> {
    let from = jump.saturating_sub(24);
    for k in (from..jump).rev() {
        let i = &insns[k].instr;
        if i.flow_control() == FlowControl::ConditionalBranch {
            let cc = i.condition_code();
            if !matches!(cc, ConditionCode::a | ConditionCode::ae) {
                continue;
            }
            // The compare feeding it.
            for c in (from..k).rev().take(3) {
                let ci = &insns[c].instr;
                if ci.mnemonic() == Mnemonic::Cmp && ci.op_count() == 2 {
                    let imm = match ci.op1_kind() {
                        OpKind::Immediate8
                        | OpKind::Immediate8to32
                        | OpKind::Immediate8to64
                        | OpKind::Immediate32
                        | OpKind::Immediate32to64 => ci.immediate(1),
                        _ => continue,
                    };
                    return Some(if cc == ConditionCode::a { imm + 1 } else { imm });
                }
            }
            return None;
        }
    }
    None
}

/// Instructions before a table dispatch searched for the `lea` that
/// loads the table's address.
const TABLE_LEA_REACH: usize = 32;

fn jump_table(
    insns: &[Decoded],
    k: usize,
    start: u64,
    end: u64,
    image: &ImageAccess,
) -> Option<JumpTable> {
    let jmp = &insns[k];
    let bound = table_bound(insns, k);
    let limit = bound.unwrap_or(1024).min(4096);
    let boundary = |t: u64| t >= start && t < end && insns.iter().any(|d| d.addr == t);
    let mut targets = Vec::new();
    let table;
    if let Some((t, 8)) = mem_table(jmp) {
        // jmp *T(,%r,8): absolute 8-byte entries.
        table = t;
        for e in 0..limit {
            let bytes = (image.read)(table + 8 * e, 8)?;
            let target = u64::from_le_bytes(bytes.try_into().ok()?);
            if !boundary(target) {
                if bound.is_some() {
                    return None;
                }
                break;
            }
            targets.push(target);
        }
    } else if jmp.instr.op0_kind() == OpKind::Register {
        // lea T(%rip),%rX ... movslq (%rX,%rY,4),%rZ; add %rX,%rZ; jmp *%rZ
        // The lea may sit before the loop around the dispatch, beside
        // other rip-relative leas (bytecode's stack_vm: the table's and a
        // global array's): the one that sets the movslq's base.
        let movsxd = (k.saturating_sub(8)..k).rev().find(|&j| {
            let i = &insns[j].instr;
            i.mnemonic() == Mnemonic::Movsxd && i.memory_index_scale() == 4
        })?;
        let base = insns[movsxd].instr.memory_base();
        let lea = (k.saturating_sub(TABLE_LEA_REACH)..movsxd)
            .rev()
            .find(|&j| {
                let i = &insns[j].instr;
                i.op0_kind() == OpKind::Register
                    && i.op0_register().full_register() == base.full_register()
            })?;
        let i = &insns[lea].instr;
        if i.mnemonic() != Mnemonic::Lea || !i.is_ip_rel_memory_operand() {
            return None;
        }
        table = i.ip_rel_memory_address();
        for e in 0..limit {
            let bytes = (image.read)(table + 4 * e, 4)?;
            let rel = i32::from_le_bytes(bytes.try_into().ok()?);
            let target = table.wrapping_add(rel as i64 as u64);
            if !boundary(target) {
                if bound.is_some() {
                    return None;
                }
                break;
            }
            targets.push(target);
        }
    } else {
        return None;
    }
    (!targets.is_empty()).then(|| JumpTable {
        jump: jmp.addr,
        table,
        targets,
        bounded: bound.is_some(),
    })
}
