//! The simulation behind [`crate::schedule`]: a block's dynamic µop graph,
//! built one iteration at a time, run on a [`Machine`] (dispatch width and
//! bytes, ROB, ports, latencies, in-order retire, store commit), and the
//! same graph's dependency-chain rate with every resource unbounded.
//!
//! Speed matters here (the analyzer models every block of an image): the
//! graph lives in flat arrays (a µop's inputs are a range of one shared
//! list), reused from block to block on a thread; once the builder's state
//! repeats, iterations are shifted copies of a template. The run is one
//! pass in program order — with oldest-first issue nothing younger changes
//! an older instruction's timing, so each instruction's dispatch, issue and
//! retirement are settled when its turn comes, ports reserved in a
//! calendar — and it stops as soon as the retirement of whole iterations
//! is exactly periodic.
//!
//! Limits: a µop that holds its port several cycles (a divider) cannot
//! delay an older one here, as it can on hardware when it issues just
//! before the older µop's inputs arrive. The steady-state test looks at
//! iteration boundaries only; a transient that repeats exactly for three
//! periods is taken for the steady state (the ROB filling behind a long
//! chain keeps the rate, so it does not matter there).

use crate::chain_cycle::{carried_chains, Carried};
use crate::classify::{class_id, MemAddr, Reg, Shape, FLAGS, NO_REG};
use crate::fetch_clock::{dense_code_cycles, dense_dispatch_width, fetch_clock_cycles, FetchClock};
use crate::machine::{ClassCost, Machine};
use crate::scheduler_window::SchedulerWindow;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

const NONE: u32 = u32::MAX;
/// `NONE - 1`, as a pattern.
const NONE_1: u32 = u32::MAX - 1;

/// Marks a value key that names a value, not the µop producing it (see
/// [`Graph::keys`]); µop ids stay below it.
const KEY_FLAG: u32 = 0x8000_0000;

/// The value key of a register a zero idiom cleared. Value keys: this,
/// memory keys ([`memory_key`]) up to `0x9fff_fff0`, immediates stored
/// from `0xa000_0000`, registers' values on entry from `0xc000_0000`.
const ZERO_KEY: u32 = KEY_FLAG | 0x10;

/// The value key of what register `r` held on entry to the block.
fn initial_key(r: Reg) -> u32 {
    0xc000_0000 | (r as u32) << 4
}

/// Whether a value key is a register's on entry ([`initial_key`]).
fn is_initial_key(k: u32) -> bool {
    k != NONE && k != NONE - 1 && k & 0xc000_0000 == 0xc000_0000
}

/// The value key of the immediate static store `s` writes.
fn immediate_key(s: usize) -> u32 {
    0xa000_0000 | ((s as u32) & 0x01ff_ffff) << 4
}

/// The value key of what a load reads from `addr` (its registers' keys
/// `keys`, all values on entry, [`initial_key`]) when no store in flight
/// wrote it: the same every time memory there is read again without a
/// store to it in between.
fn memory_key(addr: &MemAddr, keys: &[u32; 4]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |x: u64| h = (h ^ x).wrapping_mul(0x0100_0000_01b3);
    mix(addr.base as u64);
    mix(addr.index as u64);
    mix(addr.scale as u64);
    mix(addr.disp);
    mix(addr.size as u64);
    for &k in keys {
        mix(k as u64);
    }
    // Clear of the other keys (see `ZERO_KEY`).
    KEY_FLAG | ((h ^ (h >> 32)) as u32 & 0x1fff_fff0).max(0x20)
}

/// Marks a [`memory_key`] whose address registers all held their values on
/// entry: a pointer loaded from a place the block reaches the same way
/// every time, which a load may be named through in turn (one level).
const ENTRY_LOAD: u32 = 0x8;

/// Whether a value key is a load's named through entry values only
/// ([`ENTRY_LOAD`]).
fn is_entry_load_key(k: u32) -> bool {
    k & 0xe000_000f == KEY_FLAG | ENTRY_LOAD
}

/// A range of graph indices that is `Copy`: iterations are copied in bulk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    fn new(start: u32, end: u32) -> Span {
        Span { start, end }
    }

    pub fn iter(self) -> Range<u32> {
        self.start..self.end
    }

    fn shifted(self, by: u32) -> Span {
        Span::new(self.start + by, self.end + by)
    }
}

/// One µop of the dynamic graph.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uop {
    /// Dynamic instruction id.
    pub insn: u32,
    /// Index into [`Graph::port_sets`].
    pub ports: u16,
    /// A load's L1 banks, one bit per 4-byte word of a 64-byte line (0:
    /// none, or no bank limit; see [`Machine::load_bank_conflicts`]).
    pub banks: u16,
    pub latency: u32,
    pub occupancy: u16,
    /// A one-cycle µop of the ALUs' ports (what the ALU rules of
    /// [`simulate`] look for among a µop's inputs, see
    /// [`Graph::alu_inputs`]), and, once issued (where those rules apply),
    /// whether it was fresh: no such input's result woke it, it was ready
    /// when it was dispatched or when a load's or a multi-cycle µop's
    /// (`imul`) value came (see [`Machine::fresh_alu_forward_slot`]).
    alu1: bool,
    fresh: bool,
    /// Inputs: a range of [`Graph::deps`] (and of [`Graph::why`]).
    pub deps: Span,
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
    TakenBranch,
    FetchLine,
    /// Dense code: the cycle's instructions span too few bytes for
    /// another ([`Machine::dense_dispatch_width`]).
    DenseCode,
    /// A loop fetched the slow way from the op cache
    /// ([`Machine::op_cache_entry_ops`]).
    OpCache,
    /// The ALU scheduler was full ([`Machine::alu_scheduler_entries`]).
    SchedulerFull,
    /// The cycle's vector-register dispatch slots were used up
    /// ([`Machine::fp_dispatch_width`]).
    FpWidth,
}

/// Why retirement held an instruction after it was done (and the older
/// ones had retired).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetireStall {
    /// The cycle's retire width was used up.
    Width,
    /// The cycle's store commits were used up (stores to another line).
    StoreCommit,
    /// A narrow store to a line written moments ago
    /// ([`Machine::narrow_store_stall`]).
    NarrowStore,
    /// A non-temporal store opening a line while two are still being
    /// written to memory ([`Machine::nontemporal_line`]).
    MemoryWrite,
}

/// One dynamic instruction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dyn {
    /// Static index and iteration (u32: the struct is copied for every
    /// iteration of the template, smaller is faster).
    pub stat: u32,
    pub iter: u32,
    /// Its µops, contiguous.
    pub uops: Span,
    pub slots: u32,
    pub bytes: u32,
    pub dispatched: u64,
    /// The cycle it retired (0 until then: nothing retires in cycle 0).
    pub retired: u64,
    pub exec: Option<u32>,
    pub dispatch_stall: Option<DispatchStall>,
    pub retire_stall: Option<RetireStall>,
    /// A load that overlaps a narrower store still in flight (forwarding
    /// fails): how many instructions back that store is (0: none). The
    /// load issues once the store has retired and committed.
    pub blocked_by: u32,
}

/// What each static instruction costs, looked up once.
struct StaticCost<'a> {
    /// Slots of [`Machine::fp_dispatch_width`] it takes (0: none, it
    /// touches no vector register or the machine has no such limit).
    fp_slots: u8,
    /// A legacy SSE write merged into a dirty upper half
    /// ([`Machine::sse_upper_merge`]).
    upper_merge: bool,
    /// Its class's cost, and its load's (`load` or `vec_load`).
    class: &'a ClassCost,
    load_class: &'a ClassCost,
    latency: u32,
    occupancy: u32,
    slots: u32,
    exec_ports: u16,
    load_ports: u16,
    load_latency: u32,
    /// The L1 banks its load reads (see [`Uop::banks`]).
    load_banks: u16,
    /// Fuses with the conditional branch after it.
    fuse_next: bool,
    /// Done at rename: zero idiom, eliminated move, folded immediate.
    eliminated: bool,
    /// Where its memory operand's base register stands in a cache line
    /// (see [`LineShift`]).
    line_shift: LineShift,
    /// Folded at rename, yet its flags are read (by a later instruction,
    /// or the next iteration's) before anything writes them again: a µop
    /// computes them.
    folded_flags: bool,
    /// A legacy SSE instruction that pays an SSE/AVX transition
    /// ([`crate::classify::sse_transitions`]).
    transition: bool,
    /// The ALUs' issue capacity its execution µop takes, in eighths of a
    /// slot ([`ClassCost::issue_slots`]).
    issue_units: u16,
    /// Its part in the stack engine's bookkeeping: [`STACK_SYNC`] and
    /// [`STACK_REWRITE`] (0 on most instructions and machines).
    stack: u8,
}

/// A stack-engine sync µop comes before it ([`StackSyncs`]).
const STACK_SYNC: u8 = 1;
/// It writes rsp other than by adding an immediate to it, where the
/// machine's renamer then no longer pairs pushes with pops
/// ([`Machine::stack_rewrite_breaks_renaming`]): a new stack epoch.
const STACK_REWRITE: u8 = 2;

/// An instruction's part in the stack engine's bookkeeping, on machines
/// with [`Machine::stack_sync_uop`]: push, pop, call and ret move the
/// stack pointer in the engine (the register falls behind); an
/// instruction that reads `rsp` as data then waits for a sync µop that
/// brings the register up to date (an address through `rsp` does not:
/// Zen 5, measured, eight `push %rax; mov 8(%rsp),%ecx` 4.25 cycles a
/// trip, the pushes' stores); one that only writes it starts afresh.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StackRole {
    None,
    Engine,
    Reader,
    Writer,
}

const RSP: Reg = iced_x86::Register::RSP as Reg;

/// A general register as the shapes name them (full width).
/// A vector register, as the tracker names them (zmm0-zmm31).
fn is_vector(r: Reg) -> bool {
    (iced_x86::Register::ZMM0 as Reg..=iced_x86::Register::ZMM31 as Reg).contains(&r)
}

/// Whether an instruction reads or writes a vector register or memory
/// through one ([`Machine::fp_dispatch_width`]).
fn touches_vectors(sh: &Shape) -> bool {
    sh.vector_mem
        || sh
            .reads
            .iter()
            .chain(sh.writes.iter())
            .any(|&r| is_vector(r))
}

fn is_gpr(r: Reg) -> bool {
    (iced_x86::Register::RAX as Reg..=iced_x86::Register::R15 as Reg).contains(&r)
}

/// Walks a block repeated back to back, saying for each instruction
/// whether a sync µop comes before it ([`StackRole`]; every iteration
/// alike: the first one is taken to be entered as the others are, from
/// the block's end). No allocation: the model builds one per block.
struct StackSyncs {
    /// The engine is ahead of the register.
    moved: bool,
}

impl StackSyncs {
    fn new(shapes: &[Shape]) -> Self {
        let mut s = StackSyncs { moved: false };
        for sh in shapes {
            s.next(sh);
        }
        s
    }

    /// Whether `sh`, the next instruction, waits for a sync µop.
    fn next(&mut self, sh: &Shape) -> bool {
        let role = stack_role(sh);
        let sync = role == StackRole::Reader && self.moved;
        self.moved = match role {
            StackRole::Engine => true,
            StackRole::Reader | StackRole::Writer => false,
            StackRole::None => self.moved,
        };
        sync
    }
}

/// `sh`'s [`StackRole`].
fn stack_role(sh: &Shape) -> StackRole {
    if sh.stack_op {
        StackRole::Engine
    } else if sh.reads.contains(&RSP) {
        StackRole::Reader
    } else if sh.writes.contains(&RSP) {
        StackRole::Writer
    } else {
        StackRole::None
    }
}

/// Which bytes of a store to `store` a load from `load` reads, where it
/// reads only the store's (the same registers and scale: the
/// displacements and sizes say).
fn held_part(store: &MemAddr, load: &MemAddr) -> Option<Part> {
    (store.base == load.base && store.index == load.index && store.scale == load.scale)
        .then(|| {
            // Displacements are two's complement (a negative one wraps).
            Part::of(
                load.disp.wrapping_sub(store.disp) as i64,
                load.size,
                store.size,
            )
        })
        .flatten()
}

/// Which of a store's bytes a load forwarded from it reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// The same bytes.
    Whole,
    /// Fewer, from the same first byte.
    Low,
    /// Fewer, from a later one.
    Inside,
}

impl Part {
    /// A load of `load` bytes `at` bytes into a store of `store` bytes:
    /// `None` where it reads bytes the store does not hold.
    fn of(at: i64, load: usize, store: usize) -> Option<Part> {
        (at >= 0 && at as usize + load <= store).then_some(match (at, load == store) {
            (0, true) => Part::Whole,
            (0, false) => Part::Low,
            _ => Part::Inside,
        })
    }
}

/// A store the next loads may read: address, value keys of its address
/// registers and the µops that produced them, store-data µop, the value key
/// of the data, static index.
struct StoreRec {
    /// The stack epoch it was made in ([`Graph::stack_epoch`]).
    epoch: u32,
    addr: MemAddr,
    prod: [u32; 4],
    addr_uops: [u32; 4],
    data: u32,
    data_key: u32,
    stat: usize,
}

/// The dynamic µop graph of a block repeated back to back.
pub(crate) struct Graph<'a> {
    m: &'a Machine,
    shapes: &'a [Shape],
    costs: Vec<StaticCost<'a>>,
    store_addr_class: &'a ClassCost,
    store_addr_ports: u16,
    /// The empty port set (a µop that needs no port).
    no_ports: u16,
    /// The `alu` class's port set.
    alu_ports: u16,
    /// Port sets as masks ([`Machine::port_set_masks`]) and the ALUs' ports.
    set_masks: &'a [u64],
    alu_mask: u64,
    /// Ports of a store in flight giving its value to loads, once per
    /// store (see `load_forwarded`).
    forwarded_load_ports: Option<u16>,
    /// Ports of each load given its value by a store in flight (see
    /// `load_forwarded_each`).
    forwarded_each_ports: Option<u16>,
    /// Store-data µops that have given their value to a load already (the
    /// store's turn at `forwarded_load_ports` is taken).
    forwarding: Vec<u32>,
    /// Ports and latency of a 64-bit `mul`'s second µop, the high half of
    /// the product after the low one (class `mul_wide_high`, where the
    /// description has it).
    mul_high: Option<(u16, u32)>,
    store_data_ports: u16,
    /// Ports a vector store also takes a slot of, beside its store-data
    /// µop's, where the description names them (class `vec_store_data`:
    /// Zen 5's FP store and transfer pipes).
    vec_store_data_ports: Option<u16>,
    /// The store-data µop's latency: from its data to the store being done
    /// (retirement waits for it; forwarding counts from its issue).
    store_data_latency: u32,
    /// Nop fusion applies: the machine does it and the block has something
    /// besides nops (a block of nops only would alternate between
    /// iterations).
    nop_fusion: bool,
    /// The instruction that last wrote the flags (in program order, as the
    /// builder goes) is a logical operation ([`Shape::logical_flags`]).
    flags_logical: bool,
    /// How many times rsp has been rewritten so far (see
    /// [`STACK_REWRITE`]): stores remember it.
    stack_epoch: u32,
    /// Some instruction of the block reaches other classes later than its
    /// own ([`ClassCost::other_class_latency`]).
    slow_to_others: bool,
    /// Pointers made from pointers: (value key, the key it was made from,
    /// the constant added), for `add $imm`, `lea disp(%reg)`, `inc`, `dec`
    /// of 64-bit registers, the newest last (a bounded few), so a load
    /// through the bumped pointer finds a store through the old one
    /// ([`Graph::store_through_bumped_pointer`]).
    key_parents: Vec<(u32, u32, i64)>,
    pub port_sets: &'a [Vec<usize>],
    pub uops: Vec<Uop>,
    pub dyns: Vec<Dyn>,
    /// Per input: how many µops before its consumer the producer is
    /// ([`Graph::producer_of`]). Relative, so iterations copied from the
    /// template share its inputs: a copied µop keeps the template's range.
    pub deps: Vec<u32>,
    pub why: Vec<DepWhy>,
    /// Producer of each register in `written`, same order.
    producer: Vec<u32>,
    /// The value each register in `written` holds, as a key: the µop that
    /// computed it, or (with [`KEY_FLAG`]) a value named by where it was
    /// loaded from — a pointer reloaded from the same place is the same
    /// pointer, so stores and loads through it meet (a loop's `mov
    /// 0x18(%rbp),%rax; addq $1,(%rax)` is a chain through memory).
    /// Addresses are matched by keys, dependencies follow producers.
    keys: Vec<u32>,
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
    /// relative to that iteration's end (once `have_last_state`), and the
    /// buffer the next one is written to.
    last_state: BuilderState,
    next_state: BuilderState,
    have_last_state: bool,
    /// Registers the block writes (the others never get a producer).
    written: Vec<Reg>,
    /// Per dynamic instruction: cycles it was the oldest not retired
    /// (filled by [`simulate`]).
    pub head: Vec<u64>,
    /// Scratch of [`simulate`] and [`chain_rate`], kept for the next graph.
    scratch: [Vec<u64>; 4],
}

/// What decides the next iterations' inputs: each register's producer and
/// the stores loads may forward from (static index, data, address keys and
/// producers), µop ids as distances back from the end of the iteration
/// just built (`-1` none, `-2` matches no load).
#[derive(PartialEq, Default)]
struct BuilderState {
    producer: Vec<i64>,
    keys: Vec<i64>,
    stores: Vec<StoreState>,
}

/// A store in [`BuilderState`]: static index, data, data key, address keys
/// and address producers, µop ids relative as there.
#[derive(PartialEq)]
struct StoreState {
    stat: usize,
    data: i64,
    data_key: i64,
    prod: [i64; 4],
    addr_uops: [i64; 4],
}

/// A graph's big arrays, handed from one graph to the next on a thread
/// (the analyzer models thousands of blocks: no allocation once warm).
#[derive(Default)]
struct GraphArrays {
    uops: Vec<Uop>,
    dyns: Vec<Dyn>,
    deps: Vec<u32>,
    why: Vec<DepWhy>,
    uop_start: Vec<u32>,
    dep_start: Vec<u32>,
    producer: Vec<u32>,
    keys: Vec<u32>,
    written: Vec<Reg>,
    stores: VecDeque<StoreRec>,
    states: [BuilderState; 2],
    head: Vec<u64>,
    scratch: [Vec<u64>; 4],
}

impl GraphArrays {
    fn clear(&mut self) {
        self.uops.clear();
        self.dyns.clear();
        self.deps.clear();
        self.why.clear();
        self.uop_start.clear();
        self.dep_start.clear();
        self.producer.clear();
        self.keys.clear();
        self.written.clear();
        self.stores.clear();
        self.head.clear();
        for v in &mut self.scratch {
            v.clear();
        }
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
            producer: std::mem::take(&mut self.producer),
            keys: std::mem::take(&mut self.keys),
            written: std::mem::take(&mut self.written),
            stores: std::mem::take(&mut self.stores),
            states: [
                std::mem::take(&mut self.last_state),
                std::mem::take(&mut self.next_state),
            ],
            head: std::mem::take(&mut self.head),
            scratch: std::mem::take(&mut self.scratch),
        };
        // During thread teardown the slot may be gone: then just free them.
        let _ = GRAPH_ARRAYS.try_with(|a| *a.borrow_mut() = arrays);
    }
}

/// Iterations the builder compares with their predecessor looking for a
/// template before it gives up and builds every iteration by hand.
const TEMPLATE_SEARCH: usize = 6;

impl<'a> Graph<'a> {
    pub fn new(m: &'a Machine, shapes: &'a [Shape]) -> Self {
        let n = shapes.len();
        // Class costs and port sets (the machine's), by index in CLASSES.
        let class_of = |k: usize| -> (&'a ClassCost, u16) { (m.class_at(k), m.class_port_set(k)) };
        const LOAD: usize = class_id("load");
        const VEC_LOAD: usize = class_id("vec_load");
        const BRANCH: usize = class_id("branch");
        const STORE_ADDR: usize = class_id("store_addr");
        const STORE_DATA: usize = class_id("store_data");
        const NOP: usize = class_id("nop");
        const ALU: usize = class_id("alu");
        let fuse_next = |s: usize| {
            m.macro_fusion && shapes[s].fusible && s + 1 < n && shapes[s + 1].cond_branch
        };
        let shifts = line_shifts(shapes);
        let shift_of = |s: usize| shifts.get(s).copied().unwrap_or_default();
        // An SSE/AVX transition holds the front end: its cycles as slots.
        let transitions = if m.sse_avx_transition > 0 {
            crate::classify::sse_transitions(shapes)
        } else {
            Vec::new()
        };
        let transition = |s: usize| transitions.get(s).copied().unwrap_or(false);
        let merges = if m.sse_upper_merge > 0 {
            crate::classify::sse_upper_merges(shapes)
        } else {
            Vec::new()
        };
        let mut syncs = m.stack_sync_uop.then(|| StackSyncs::new(shapes));
        let costs: Vec<StaticCost> = (0..n)
            .map(|s| {
                let sh = &shapes[s];
                let class = sh.class_id as usize;
                let (cost, _) = class_of(class);
                let (load_cost, load_ports) = class_of(if sh.vector_mem { VEC_LOAD } else { LOAD });
                StaticCost {
                    fp_slots: if m.fp_dispatch_width > 0 && touches_vectors(sh) {
                        cost.fp_dispatch_slots.clamp(1, 255) as u8
                    } else {
                        0
                    },
                    upper_merge: merges.get(s).copied().unwrap_or(false),
                    issue_units: cost.issue_eighths(),
                    class: cost,
                    load_class: load_cost,
                    latency: cost.latency,
                    occupancy: cost.occupancy,
                    slots: cost.uops.max(1)
                        + (sh.load.is_some() && sh.store.is_some()) as u32
                        + transition(s) as u32 * m.sse_avx_transition * m.dispatch_width,
                    exec_ports: class_of(if fuse_next(s) { BRANCH } else { class }).1,
                    load_ports,
                    load_latency: load_cost.latency + m.load_address_latency(sh),
                    // A prefetch (a load that writes nothing) reads no
                    // bank: four `prefetcht0` at one offset of four lines
                    // 1.36 cycles a copy on Golden Cove, three a cycle.
                    load_banks: sh
                        .load
                        .filter(|_| m.load_bank_conflicts && !sh.stack_op && !sh.writes.is_empty())
                        // A load through a pointer that moves reads other
                        // banks each iteration: not limited (Golden Cove,
                        // `movsbl 1(%r14),%r12d; add $1,%r14` 0.34 cycles
                        // a copy, three a cycle from one word modeled 0.50).
                        .and_then(|a| shift_of(s).fixed().map(|k| shifted(a, k)))
                        .map_or(0, |a| load_banks(&a)),
                    fuse_next: fuse_next(s),
                    // An add or inc folded at rename still executes when it
                    // fuses with a branch: the pair is the branch's µop.
                    eliminated: (sh.zero_idiom && m.zero_idioms)
                        || m.eliminates_move(sh)
                        || (sh.imm_add && m.immediate_folding && !fuse_next(s)),
                    line_shift: shift_of(s),
                    folded_flags: sh.imm_add
                        && m.immediate_folding
                        && !fuse_next(s)
                        && sh.writes.contains(&FLAGS)
                        && flags_read(shapes, s),
                    transition: transition(s),
                    stack: if syncs.as_mut().is_some_and(|x| x.next(sh)) {
                        STACK_SYNC
                    } else {
                        0
                    } | if m.stack_rewrite_breaks_renaming
                        && !sh.stack_op
                        && sh.writes.contains(&RSP)
                        && !(sh.imm_add && sh.reads.contains(&RSP) && !sh.class.starts_with("lea"))
                    {
                        STACK_REWRITE
                    } else {
                        0
                    },
                }
            })
            .collect();
        let (store_addr_class, store_addr_ports) = class_of(STORE_ADDR);
        let (store_data_class, store_data_ports) = class_of(STORE_DATA);
        const VEC_STORE_DATA: usize = class_id("vec_store_data");
        let vec_store_data_ports = m
            .names_class(VEC_STORE_DATA)
            .then(|| class_of(VEC_STORE_DATA).1);
        // Where the description says so, a load that gets its value from a
        // store in flight (forwarded or renamed) runs on its own ports.
        const LOAD_FORWARDED: usize = class_id("load_forwarded");
        let forwarded_load_ports = m
            .names_class(LOAD_FORWARDED)
            .then(|| class_of(LOAD_FORWARDED).1);
        const LOAD_FORWARDED_EACH: usize = class_id("load_forwarded_each");
        let forwarded_each_ports = m
            .names_class(LOAD_FORWARDED_EACH)
            .then(|| class_of(LOAD_FORWARDED_EACH).1);
        const MUL_WIDE_HIGH: usize = class_id("mul_wide_high");
        let mul_high = m.names_class(MUL_WIDE_HIGH).then(|| {
            let (cost, set) = class_of(MUL_WIDE_HIGH);
            (set, cost.latency)
        });
        // The arrays of the thread's previous graph, emptied.
        let mut arrays = GRAPH_ARRAYS.with(|a| std::mem::take(&mut *a.borrow_mut()));
        arrays.clear();
        let mut written = arrays.written;
        written.extend(shapes.iter().flat_map(|s| s.writes.iter().copied()));
        if costs.iter().any(|c| c.stack & STACK_SYNC != 0) {
            // A sync µop writes it.
            written.push(RSP);
        }
        written.sort_unstable();
        written.dedup();
        let mut producer = arrays.producer;
        producer.resize(written.len(), NONE);
        let mut keys = arrays.keys;
        keys.extend(written.iter().map(|&r| initial_key(r)));
        let [last_state, next_state] = arrays.states;
        let slow_to_others = costs.iter().any(|c| c.class.other_class_latency > 0);
        Graph {
            no_ports: class_of(NOP).1,
            alu_ports: class_of(ALU).1,
            set_masks: m.port_set_masks(),
            alu_mask: m.alu_port_mask(),
            store_addr_class,
            store_addr_ports,
            store_data_ports,
            vec_store_data_ports,
            store_data_latency: store_data_class.latency,
            forwarded_load_ports,
            forwarded_each_ports,
            forwarding: Vec::new(),
            mul_high,
            nop_fusion: m.nop_fusion && shapes.iter().any(|sh| !sh.is_nop),
            m,
            shapes,
            costs,
            port_sets: m.port_sets(),
            uops: arrays.uops,
            dyns: arrays.dyns,
            deps: arrays.deps,
            why: arrays.why,
            producer,
            keys,
            stores: arrays.stores,
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
            last_state,
            next_state,
            have_last_state: false,
            flags_logical: false,
            stack_epoch: 0,
            slow_to_others,
            key_parents: Vec::new(),
            written,
            head: arrays.head,
            scratch: arrays.scratch,
        }
    }

    /// Whether static instruction `s` pays an SSE/AVX transition.
    pub fn transition(&self, s: usize) -> bool {
        self.costs[s].transition
    }

    /// The vector register static instruction `s` merges into a dirty
    /// upper half ([`Machine::sse_upper_merge`]), if it does: not where it
    /// reads that register too (its operation waits for it already and
    /// merges with no cycle more: Zen 5, measured, `movdqa (%r11),%xmm5;
    /// paddd %xmm6,%xmm5; vpaddd %xmm5,%xmm5,%xmm5` 6.0 cycles a copy with
    /// the upper halves dirty, the `movdqa`'s merge alone), but for a zero
    /// idiom (`pxor %xmm5,%xmm5` merges).
    pub fn upper_merge(&self, s: usize) -> Option<Reg> {
        if !self.costs[s].upper_merge {
            return None;
        }
        let sh = &self.shapes[s];
        let w = sh.writes.iter().copied().find(|&r| is_vector(r))?;
        (sh.zero_idiom || !sh.reads.contains(&w)).then_some(w)
    }

    /// The cost of static instruction `s`'s class.
    pub fn class_cost(&self, s: usize) -> &'a ClassCost {
        self.costs[s].class
    }

    /// The ports a pure load of `s` (`load` or `vec_load`) or a pure store
    /// (`store_addr`) waits on.
    pub fn memory_ports(&self, s: usize) -> &'a Arc<[String]> {
        if self.shapes[s].load.is_some() {
            &self.costs[s].load_class.ports
        } else {
            &self.store_addr_class.ports
        }
    }

    /// The builder's state now, written over `out`.
    fn builder_state(&self, out: &mut BuilderState) {
        let end = self.uops.len() as i64;
        let rel = |x: u32| match x {
            NONE => -1,
            x if x == NONE - 1 => -2,
            // A value key names a value, not a µop: absolute.
            x if x & KEY_FLAG != 0 => x as i64 + (1 << 40),
            x => end - x as i64,
        };
        out.producer.clear();
        out.producer.extend(self.producer.iter().map(|&p| rel(p)));
        out.keys.clear();
        out.keys.extend(self.keys.iter().map(|&p| rel(p)));
        // The stores a load can still find: the newest of each static store
        // and address (an older one is shadowed), not the first
        // iteration's — its registers held their values on entry and its
        // loads found no store, so the next iterations' addresses differ
        // from its addresses and its data from theirs.
        out.stores.clear();
        let first_end = self
            .uop_start
            .get(1)
            .map_or(self.uops.len(), |&u| u as usize);
        for st in self.stores.iter().rev() {
            if (st.data as usize) < first_end {
                break;
            }
            let prod = st.prod.map(rel);
            if !out
                .stores
                .iter()
                .any(|o| o.stat == st.stat && o.prod == prod)
            {
                out.stores.push(StoreState {
                    stat: st.stat,
                    data: rel(st.data),
                    data_key: rel(st.data_key),
                    prod,
                    addr_uops: st.addr_uops.map(rel),
                });
            }
        }
        out.stores.reverse();
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
                let mut state = std::mem::take(&mut self.next_state);
                self.builder_state(&mut state);
                if self.have_last_state {
                    // How far back a producer may point: not into the first iteration.
                    let reach = self.uops.len() as i64 - self.uop_start[1] as i64;
                    let repeats = if k == 1 {
                        self.first_repeats()
                    } else {
                        self.repeats_previous(k)
                    };
                    if repeats && Self::state_repeats(&self.last_state, &state, reach) {
                        self.template = Some(k);
                    }
                }
                self.next_state = std::mem::replace(&mut self.last_state, state);
                self.have_last_state = true;
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
            self.deps[b] == self.deps[a] && self.why[b] == self.why[a]
        };
        let same_dyn = |i: usize| {
            let (a, b) = (&self.dyns[i], &self.dyns[i + n as usize]);
            b.stat == a.stat
                && b.uops.start == a.uops.start + du
                && b.uops.end == a.uops.end + du
                && b.slots == a.slots
                && b.bytes == a.bytes
                && b.exec == a.exec.map(|e| e + du)
                && b.blocked_by == a.blocked_by
        };
        (u0..u1).all(|u| same_uop(&self.uops[u as usize], &self.uops[(u + du) as usize]))
            && (d0..d1).all(same_dep)
            && ((k - 1) * n as usize..k * n as usize).all(same_dyn)
    }

    /// Whether the second iteration (k = 1) is already the template: the
    /// third, built from the state after the second, will be the second
    /// shifted when that state is the one after the first moved on (checked
    /// by [`Graph::state_repeats`]) and nothing else the builder reads
    /// differs — no stores, or no loads (a load may find the first
    /// iteration's stores, whose addresses are keyed apart, where the
    /// second's loads find the second's), and the same slots in both iterations
    /// (an instruction fuses with the one before it, across the iteration's
    /// start too: a lone `nop` alternates). The first iteration's µops
    /// differ only in inputs that had no producer. One iteration fewer
    /// built from the instructions for most blocks without stores.
    fn first_repeats(&self) -> bool {
        let n = self.shapes.len();
        (self.shapes.iter().all(|sh| sh.store.is_none())
            || self.shapes.iter().all(|sh| sh.load.is_none()))
            && self.dyns.len() == 2 * n
            && (0..n).all(|s| {
                let (a, b) = (&self.dyns[s], &self.dyns[s + n]);
                a.slots == b.slots && a.uops.end - a.uops.start == b.uops.end - b.uops.start
            })
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
            && last.keys == now.keys
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
        let (du, dn) = (shift * (u1 - u0), shift * n as u32);
        // Whole ranges copied, then shifted in place (inputs are relative:
        // the copies share the template's).
        let from = self.uops.len();
        self.uops.extend_from_within(u0 as usize..u1 as usize);
        for u in &mut self.uops[from..] {
            u.insn += dn;
            u.issued = NOT_YET;
            u.complete = NOT_YET;
            u.ready = NOT_YET;
        }
        let from = self.dyns.len();
        self.dyns.extend_from_within(t * n..(t + 1) * n);
        for d in &mut self.dyns[from..] {
            d.iter = it as u32;
            d.uops = d.uops.shifted(du);
            d.dispatched = 0;
            d.retired = 0;
            d.exec = d.exec.map(|e| e + du);
            d.dispatch_stall = None;
            d.retire_stall = None;
        }
    }

    /// The template iteration's µops (a range of `uops`), once found.
    pub fn template_uops(&self) -> Option<(usize, usize)> {
        let t = self.template?;
        Some((self.uop_start[t] as usize, self.uop_start[t + 1] as usize))
    }

    /// A register's producer: [`NONE`] for one the block never writes.
    fn producer(&self, r: Reg) -> u32 {
        match self.written.iter().position(|&w| w == r) {
            Some(k) => self.producer[k],
            None => NONE,
        }
    }

    /// A register's value key (see [`Graph::keys`]).
    fn key(&self, r: Reg) -> u32 {
        match self.written.iter().position(|&w| w == r) {
            Some(k) => self.keys[k],
            None => initial_key(r),
        }
    }

    fn set_producer(&mut self, r: Reg, u: u32, key: u32) {
        if let Some(k) = self.written.iter().position(|&w| w == r) {
            self.producer[k] = u;
            self.keys[k] = key;
        }
    }

    /// Adds an input from µop `p` to the µop pushed next.
    /// The stack engine's part in instruction `insn` ([`StaticCost::stack`]):
    /// a sync µop before it (an ALU's, one cycle, after the register's
    /// producer: see [`StackRole`]), a new stack epoch after it.
    #[cold]
    #[inline(never)]
    fn stack_engine(&mut self, what: u8, insn: u32) {
        if what & STACK_SYNC != 0 {
            let from = self.deps.len() as u32;
            self.push_reg_deps(&[RSP]);
            let u = self.push_uop(insn, self.alu_ports, 1, 1, from);
            self.set_producer(RSP, u, u);
        }
        if what & STACK_REWRITE != 0 {
            self.stack_epoch = self.stack_epoch.wrapping_add(1);
        }
    }

    /// A register swap done at rename: each of the two names now holds
    /// what the other did (the same producer, the same value key).
    #[cold]
    fn swap_producers(&mut self, sh: &Shape) {
        let (a, b) = (sh.writes[0], sh.writes[1]);
        let (pa, ka, pb, kb) = (self.producer(a), self.key(a), self.producer(b), self.key(b));
        self.set_producer(a, pb, kb);
        self.set_producer(b, pa, ka);
    }

    /// The first µop of an instruction whose general-register inputs take
    /// longer ([`ClassCost::gpr_input_latency`]): it waits for them and
    /// passes them on `latency` cycles later, on no port.
    #[cold]
    #[inline(never)]
    fn gpr_transfer(&mut self, sh: &Shape, insn: u32, latency: u32) -> u32 {
        let from = self.deps.len() as u32;
        for &r in sh.reads.iter().filter(|&&r| is_gpr(r)) {
            self.push_reg_deps(&[r]);
        }
        self.push_uop(insn, self.no_ports, latency, 0, from)
    }

    /// The main µop's inputs where [`Graph::gpr_transfer`] carries the
    /// general registers: the others, and that µop.
    #[cold]
    #[inline(never)]
    fn push_deps_after_transfer(&mut self, sh: &Shape, transfer: u32) {
        for &r in sh.reads.iter().filter(|&&r| !is_gpr(r)) {
            self.push_reg_deps(&[r]);
        }
        let r = sh
            .reads
            .iter()
            .copied()
            .find(|&r| is_gpr(r))
            .unwrap_or(NO_REG);
        self.push_dep(transfer, DepWhy::Reg(r));
    }

    /// The extra cycles register `r`'s value takes to reach static
    /// instruction `s`: its producer's [`ClassCost::other_class_latency`]
    /// beyond its latency where `s` is of another class (0 elsewhere).
    fn other_class_delay(&self, r: Reg, s: usize) -> u32 {
        let p = self.producer(r);
        if p == NONE {
            return 0;
        }
        // A µop of `s` itself (the stack engine's sync before a `pop` or
        // an `add $n,%rsp`) has no dynamic instruction yet: it is an
        // integer µop of `s`, of no other class.
        let Some(producer) = self.dyns.get(self.uops[p as usize].insn as usize) else {
            return 0;
        };
        let ps = producer.stat as usize;
        let class = self.costs[ps].class;
        if class.other_class_latency == 0 || self.shapes[ps].class_id == self.shapes[s].class_id {
            return 0;
        }
        class
            .other_class_latency
            .saturating_sub(self.uops[p as usize].latency)
    }

    /// A µop, on no port, that passes on the inputs of static instruction
    /// `s` that reach it late ([`Graph::other_class_delay`]), by that
    /// delay: `None` where none does.
    #[cold]
    #[inline(never)]
    fn late_inputs_transfer(&mut self, sh: &Shape, s: usize, insn: u32) -> Option<u32> {
        let delay = sh
            .reads
            .iter()
            .map(|&r| self.other_class_delay(r, s))
            .max()
            .unwrap_or(0);
        if delay == 0 {
            return None;
        }
        let from = self.deps.len() as u32;
        for &r in sh.reads.iter() {
            if self.other_class_delay(r, s) > 0 {
                self.push_reg_deps(&[r]);
            }
        }
        Some(self.push_uop(insn, self.no_ports, delay, 0, from))
    }

    /// The main µop's inputs where [`Graph::late_inputs_transfer`] carries
    /// some: the others, and that µop.
    #[cold]
    #[inline(never)]
    fn push_deps_after_late_inputs(&mut self, sh: &Shape, s: usize, transfer: u32) {
        let mut late = NO_REG;
        for &r in sh.reads.iter() {
            if self.other_class_delay(r, s) > 0 {
                if late == NO_REG {
                    late = r;
                }
            } else {
                self.push_reg_deps(&[r]);
            }
        }
        self.push_dep(transfer, DepWhy::Reg(late));
    }

    /// Register `d` now holds the value keyed `parent` plus `k`
    /// ([`Graph::key_parents`]).
    fn note_key_parent(&mut self, d: Reg, parent: u32, k: i64) {
        let key = self.key(d);
        if key == parent || key == NONE || parent == NONE {
            return;
        }
        if self.key_parents.len() >= 32 {
            self.key_parents.remove(0);
        }
        self.key_parents.push((key, parent, k));
    }

    /// The keys value key `x` was made from, a few steps back
    /// ([`Graph::key_parents`]), each with what was added since: (key,
    /// value(x) − value(key)), `x` itself first.
    fn key_ancestors(&self, mut x: u32) -> smallvec::SmallVec<[(u32, i64); 8]> {
        let mut out = smallvec::SmallVec::new();
        let mut sum = 0i64;
        out.push((x, 0));
        while out.len() < 8 {
            match self.key_parents.iter().rev().find(|e| e.0 == x) {
                Some(&(_, p, k)) => {
                    sum += k;
                    x = p;
                    out.push((x, sum));
                }
                None => break,
            }
        }
        out
    }

    /// The newest store in flight holding all the bytes a load through a
    /// pointer bumped from the store's reads (`mov (%rdi),...; add
    /// $8,%rdi` then `-8(%rdi)`): its data µop, static index, data key and
    /// which of its bytes. Base-only addresses.
    #[cold]
    #[inline(never)]
    fn store_through_bumped_pointer(
        &self,
        addr: &MemAddr,
        base_key: u32,
    ) -> Option<(u32, usize, u32, bool, Part)> {
        let from_load = self.key_ancestors(base_key);
        self.stores.iter().rev().find_map(|st| {
            let sa = &st.addr;
            if sa.index != iced_x86::Register::None
                || st.prod[1..].iter().any(|&k| k != NONE)
                || st.prod[0] == NONE
            {
                return None;
            }
            // value(load base) − value(store base), through a common key.
            let d = self
                .key_ancestors(st.prod[0])
                .iter()
                .find_map(|&(x, cs)| from_load.iter().find(|e| e.0 == x).map(|&(_, cl)| cl - cs))?;
            // The load's first byte from the store's.
            let at = (addr.disp as i64)
                .wrapping_add(d)
                .wrapping_sub(sa.disp as i64);
            let part = Part::of(at, addr.size, sa.size)?;
            Some((st.data, st.stat, st.data_key, false, part))
        })
    }

    /// A slot of the FP store and transfer pipes (`ports`) that
    /// instruction `insn` takes beside its own µops: a µop of no inputs
    /// and no latency ([`ClassCost::transfer_slot`], vector stores).
    #[cold]
    fn take_transfer_slot(&mut self, insn: u32, ports: u16) {
        let from = self.deps.len() as u32;
        self.push_uop(insn, ports, 0, 1, from);
    }

    /// The merge of register `w`'s new low half into its old upper half
    /// ([`Machine::sse_upper_merge`]): a µop on no port after both, the
    /// register's producer from now on.
    #[cold]
    #[inline(never)]
    fn merge_upper(&mut self, insn: u32, w: Reg, old: u32) {
        let new = self.producer(w);
        let from = self.deps.len() as u32;
        for p in [old, new] {
            if p != NONE {
                self.push_dep(p, DepWhy::Reg(w));
            }
        }
        let u = self.push_uop(insn, self.no_ports, self.m.sse_upper_merge, 0, from);
        self.set_producer(w, u, u);
    }

    /// A false dependency: the µop waits for the old value of the
    /// register it writes ([`ClassCost::reads_destination`]).
    #[cold]
    fn push_destination_dep(&mut self, sh: &Shape) {
        if let Some(&w) = sh.writes.iter().find(|&&r| r != FLAGS) {
            self.push_reg_deps(&[w]);
        }
    }

    fn push_dep(&mut self, p: u32, why: DepWhy) {
        self.deps.push(self.uops.len() as u32 - p);
        self.why.push(why);
    }

    /// The producer of µop `u`'s input `k` (an index into `deps`).
    pub fn producer_of(&self, u: usize, k: u32) -> usize {
        u - self.deps[k as usize] as usize
    }

    /// Adds the inputs named by `regs` that have a producer.
    fn push_reg_deps(&mut self, regs: &[Reg]) {
        for &r in regs {
            let p = self.producer(r);
            if p != NONE {
                self.push_dep(p, DepWhy::Reg(r));
            }
        }
    }

    fn push_uop(&mut self, insn: u32, ports: u16, latency: u32, occupancy: u32, from: u32) -> u32 {
        let mask = self.set_masks[ports as usize];
        self.uops.push(Uop {
            insn,
            ports,
            banks: 0,
            latency,
            occupancy: occupancy.min(u16::MAX as u32) as u16,
            alu1: mask != 0 && mask & !self.alu_mask == 0 && latency == 1,
            fresh: false,
            deps: Span::new(from, self.deps.len() as u32),
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
            let (split_flags, reads_destination, gpr_first) = (
                c.class.split_flags,
                c.class.reads_destination,
                c.class.gpr_input_latency,
            );
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
            if self.costs[s].stack != 0 {
                self.stack_engine(self.costs[s].stack, id);
            }
            let (mut addr_prod, mut addr_uops) = ([NONE; 4], [NONE; 4]);
            // More address registers than the table holds (never seen): such
            // an access neither forwards nor is forwarded to.
            let addr_known = sh.addr_reads.len() <= addr_prod.len();
            for (k, r) in sh.addr_reads.iter().take(4).enumerate() {
                (addr_prod[k], addr_uops[k]) = (self.key(*r), self.producer(*r));
            }
            let mut load_uop = None;
            let mut renamed_load = false;
            let mut blocked_by = 0;
            // The value key of what the load reads (see `Graph::keys`).
            let mut load_key = NONE;
            if let Some(addr) = sh.load {
                let from = self.deps.len() as u32;
                self.push_reg_deps(&sh.addr_reads);
                let mut latency = load_latency;
                let mut forwarded = false;
                // The newest store in flight holding all the load's bytes:
                // the same ones, or a wider store around them (forwarded
                // too: Zen 5, measured, session 65: `vmovups %xmm0,(%rbx);
                // vmovq 8(%rbx),%xmm0` 9.0 cycles a round trip as the
                // whole width's, `mov %rax,(%rbx); mov 4(%rbx),%eax` 7.0).
                let found = if addr_known {
                    self.stores
                        .iter()
                        .rev()
                        .find_map(|st| {
                            let part =
                                held_part(&st.addr, &addr).filter(|_| st.prod == addr_prod)?;
                            // A push and the pop that reads it back with
                            // rsp rewritten in between (see
                            // `Machine::stack_rewrite_breaks_renaming`): not
                            // the same registers to the renamer.
                            let same = st.addr_uops == addr_uops
                                && (st.epoch == self.stack_epoch || !sh.stack_op);
                            Some((st.data, st.stat, st.data_key, same, part))
                        })
                        .or_else(|| {
                            (sh.addr_reads.len() == 1
                                && addr.index == iced_x86::Register::None
                                && !self.key_parents.is_empty())
                            .then(|| self.store_through_bumped_pointer(&addr, addr_prod[0]))
                            .flatten()
                        })
                } else {
                    None
                };
                if addr_known {
                    load_key = match found {
                        Some((_, _, key, _, Part::Whole)) if !sh.extending_load => key,
                        Some(_) => NONE - 1, // a new value (set below)
                        // Named by its address when that is the same every
                        // iteration (registers the block never writes): a
                        // name built on names would grow without end.
                        None if addr_prod.iter().all(|&k| k == NONE || is_initial_key(k)) => {
                            memory_key(&addr, &addr_prod) | ENTRY_LOAD
                        }
                        // Through a pointer loaded so: `mov 0x18(%r13),%rax;
                        // mov 8(%rax),%r15; addq $1,(%r15)` is a chain
                        // through memory, 7.0 cycles a copy on Zen 5 (BHive,
                        // session 66). Not deeper (a list walked would
                        // name a new node every iteration).
                        None if addr_prod
                            .iter()
                            .all(|&k| k == NONE || is_initial_key(k) || is_entry_load_key(k)) =>
                        {
                            memory_key(&addr, &addr_prod)
                        }
                        None => NONE - 1,
                    };
                }
                if found.is_none() && addr_known && m.store_forward_fail > 0 {
                    // A store in flight to some of the same bytes, not all
                    // of them: forwarding fails.
                    // (A load inside a wider store is forwarded: `mov
                    // %rax,(%rbx); movl 4(%rbx),%ecx` 1.00 a pair on Zen 4.)
                    let overlap = |a: &MemAddr| {
                        let (s0, s1) = (a.disp as i64, a.disp as i64 + a.size as i64);
                        let (l0, l1) = (addr.disp as i64, addr.disp as i64 + addr.size as i64);
                        a.base == addr.base
                            && a.index == addr.index
                            && a.scale == addr.scale
                            && s0 < l1
                            && l0 < s1
                            && !(s0 <= l0 && l1 <= s1)
                    };
                    if let Some(st) = self
                        .stores
                        .iter()
                        .rev()
                        .find(|st| st.prod == addr_prod && overlap(&st.addr))
                    {
                        blocked_by = id - self.uops[st.data as usize].insn;
                    }
                }
                if let Some((data, st, _, same_registers, part)) = found {
                    forwarded = true;
                    let stack =
                        matches!(addr.base, iced_x86::Register::RSP | iced_x86::Register::RBP)
                            && addr.index == iced_x86::Register::None;
                    let renamed = match m.memory_renaming.as_str() {
                        // Measured on Golden Cove: general-register data only; an
                        // xmm store/load round trip takes ~7 cycles.
                        // Not 16-bit data (`mov %ax,(%rbx); mov (%rbx),%ax`
                        // 8.01 cycles, `movzwl` 5.00; 8-bit 1.03, `movzbl`
                        // in BHive blocks too), not a 32-bit load extended
                        // (`movslq` 6.03): measured on Sapphire Rapids.
                        "any" => {
                            !shapes[st].rmw_reg_source
                                && !shapes[st].vector_mem
                                && addr.size != 2
                                && (!sh.extending_load || addr.size != 4)
                        }
                        "stack" => stack,
                        // Measured on Zen 4: any base, RMW included; 1 cycle
                        // round trips for 32/64-bit data, 6-9 otherwise.
                        // Only through the same address registers: with the
                        // base loaded again in between (the same pointer, a new
                        // register) the round trip is forwarded (`mov
                        // (%r15),%rax; addq $1,(%rax)` 6.04 cycles, measured).
                        "wide-gpr" => {
                            addr.size >= 4
                                && same_registers
                                && !shapes[st].vector_mem
                                && !sh.vector_mem
                                && !sh.extending_load
                        }
                        // Measured on Zen 5: general-register data of any
                        // size, RMW included (`addb $1,8(%rbx)`, `addw`,
                        // `add %al,8(%rbx)` 1.00 cycles a copy), sign-
                        // extending loads too (`movslq` 1.00, `movsbl`,
                        // `movswl` 2.00), not zero-extending ones (`movzbl`,
                        // `movzwl` 7.00); through the same address registers
                        // as on Zen 4.
                        //
                        // The low part of a wider store too (`mov
                        // %rax,(%rbx); mov (%rbx),%eax` 0.50 cycles a copy,
                        // `mov %eax,(%rbx); mov (%rbx),%ax` 1.00), not a
                        // part further in (`mov 4(%rbx),%eax` 7.0).
                        "gpr" => {
                            same_registers
                                && part != Part::Inside
                                && !shapes[st].vector_mem
                                && !sh.vector_mem
                                && !sh.zero_extending_load
                        }
                        _ => false,
                    } && (part == Part::Whole || m.memory_renaming == "gpr");
                    renamed_load = renamed;
                    if renamed {
                        // Renamed: the load's value is the stored register's, no forwarding delay.
                        for k in self.uops[data as usize].deps.iter() {
                            let p = self.producer_of(data as usize, k) as u32;
                            self.push_dep(p, self.why[k as usize]);
                        }
                        // Zen 5 ("gpr"): a cycle for a load of 8 or 16
                        // bits (its partial register's merge is the round
                        // trip's other: `mov %ax,8(%rbx); mov 8(%rbx),%ax`
                        // 2.00 cycles a copy) and one for extending it
                        // (`movslq` 1.00, `movsbl`, `movswl` 2.00); a
                        // read-modify-write's load feeds its operation
                        // whole (`addb $1,8(%rbx)` 1.00).
                        latency = match m.memory_renaming.as_str() {
                            // (The low half of a wider store merges
                            // no partial register: `mov %eax,(%rbx); mov
                            // (%rbx),%ax` 1.00.)
                            "gpr" if sh.store.is_none() => {
                                (addr.size < 4 && part == Part::Whole) as u32
                                    + sh.extending_load as u32
                            }
                            _ => 0,
                        };
                    } else {
                        self.push_dep(data, DepWhy::Forward(st));
                        // From the store data's issue to the load's result.
                        let vector = shapes[st].vector_mem || sh.vector_mem;
                        latency = m.forward_latency(vector).saturating_sub(1).max(1);
                        if m.rmw_round_trip > 0 && shapes[st].load.is_some() && !vector {
                            // A read-modify-write's own chain: the round trip
                            // less the operation and the store data.
                            let parts = self.costs[st].latency + self.store_data_latency;
                            latency = m.rmw_round_trip.saturating_sub(parts).max(1);
                        }
                    }
                }
                let l = self.push_uop(id, load_ports, latency, 1, from);
                if !forwarded {
                    self.uops[l as usize].banks = self.costs[s].load_banks;
                }
                load_uop = Some(l);
                if matches!(load_key, NONE | NONE_1) {
                    load_key = load_uop.unwrap_or(NONE);
                }
                if let (true, Some((data, ..))) = (forwarded, found) {
                    // A store forwards to one cycle's loads at a time (its
                    // first load takes the store's turn), and so many loads
                    // a cycle are served, beside the load ports they still
                    // take: Zen 4, measured, one store and 1-4 loads of its
                    // address 1.00 / 1.04 / 1.50 / 2.12 cycles, two stores
                    // and a load of each 2.00. A read-modify-write's load
                    // takes a turn of its own: `mov 0x90(%r15),%eax; subl
                    // $1,0x90(%r15)` 2.05, the other way round 1.63.
                    if let Some(ports) = self.forwarded_load_ports {
                        if sh.store.is_some() || !self.forwarding.contains(&data) {
                            self.forwarding.push(data);
                            let from = self.deps.len() as u32;
                            self.push_uop(id, ports, 0, 1, from);
                        }
                    }
                    if let Some(ports) = self.forwarded_each_ports {
                        let from = self.deps.len() as u32;
                        self.push_uop(id, ports, 0, 1, from);
                    }
                }
            }
            let fused_branch = s > 0
                && sh.cond_branch
                && self.costs[s - 1].fuse_next
                && self.dyns.last().is_some_and(|p| p.stat as usize == s - 1);
            let nop_fused =
                nop_fusion && sh.is_nop && self.dyns.last().is_some_and(|p| p.slots > 0);
            // An eliminated move into the register this op then changes
            // (with a 32-bit immediate where `move_imm32_fusion`, by any
            // register-only ALU op where `move_op_fusion`): one slot for
            // the pair.
            let move_fused = (m.move_imm32_fusion && sh.alu_imm32
                || m.move_op_fusion && self.changes_moved_register(s))
                && s > 0
                && self.costs[s - 1].eliminated
                && shapes[s - 1].movable
                && shapes[s - 1].writes.first() == sh.writes.first()
                && self
                    .dyns
                    .last()
                    .is_some_and(|p| p.stat as usize == s - 1 && p.slots > 0);
            let mut exec_uop = None;
            let mut high_uop = None;
            if !fused_branch && sh.class != "nop" && !eliminated {
                let split_flags = split_flags && sh.reads.contains(&FLAGS);
                let flags_uop = split_flags.then(|| {
                    // The flags combined first, by a µop of their own.
                    let from = self.deps.len() as u32;
                    self.push_reg_deps(&[FLAGS]);
                    self.push_uop(id, exec_ports, 1, 1, from)
                });
                let gpr_uop = (gpr_first > 0)
                    .then(|| self.gpr_transfer(sh, id, gpr_first.saturating_sub(latency)));
                let late_uop = if self.slow_to_others
                    && flags_uop.is_none()
                    && gpr_uop.is_none()
                    && !(sh.flags_only && m.sbb_idiom)
                {
                    self.late_inputs_transfer(sh, s, id)
                } else {
                    None
                };
                let from = self.deps.len() as u32;
                if sh.flags_only && m.sbb_idiom {
                    self.push_reg_deps(&[FLAGS]);
                } else if let Some(f) = flags_uop {
                    for &r in sh.reads.iter().filter(|&&r| r != FLAGS) {
                        self.push_reg_deps(&[r]);
                    }
                    self.push_dep(f, DepWhy::Reg(FLAGS));
                } else if let Some(g) = gpr_uop {
                    self.push_deps_after_transfer(sh, g);
                } else if let Some(t) = late_uop {
                    self.push_deps_after_late_inputs(sh, s, t);
                } else {
                    self.push_reg_deps(&sh.reads);
                }
                if reads_destination {
                    self.push_destination_dep(sh);
                }
                if let Some(l) = load_uop {
                    self.push_dep(l, DepWhy::Reg(LOAD_RESULT));
                }
                let latency = if m.logical_flags_latency > 0
                    && matches!(sh.class, "setcc" | "cmov")
                    && self.flags_logical
                {
                    latency.max(m.logical_flags_latency)
                } else {
                    latency
                };
                // A wide multiply whose high half the description times
                // apart: the low half and the flags first; other forms
                // (32-bit mul) have both halves at the sum.
                let latency = match self.mul_high {
                    Some((_, high)) if sh.class == "mul_wide" && sh.high_half == NO_REG => {
                        latency + high
                    }
                    _ => latency,
                };
                let e = self.push_uop(id, exec_ports, latency, occupancy, from);
                exec_uop = Some(e);
                if let (Some(ports), true) =
                    (self.vec_store_data_ports, self.costs[s].class.transfer_slot)
                {
                    self.take_transfer_slot(id, ports);
                }
                match (self.mul_high, sh.high_half) {
                    (Some((ports, high)), r) if r != NO_REG => {
                        let from = self.deps.len() as u32;
                        self.push_dep(e, DepWhy::Reg(r));
                        high_uop = Some(self.push_uop(id, ports, high, 1, from));
                    }
                    _ => {}
                }
            }
            if let (None, Some(l), true) = (
                exec_uop,
                load_uop,
                m.sign_extension_uop
                    && sh.extending_load
                    && !sh.zero_extending_load
                    && !renamed_load
                    && sh.class == "nop",
            ) {
                // The sign extension, an ALU µop of its own after the load.
                let from = self.deps.len() as u32;
                self.push_dep(l, DepWhy::Reg(LOAD_RESULT));
                exec_uop = Some(self.push_uop(id, self.alu_ports, 1, 1, from));
            }
            if let Some(addr) = sh.store {
                let from = self.deps.len() as u32;
                self.push_reg_deps(&sh.addr_reads);
                self.push_uop(id, store_addr_ports, 1, 1, from);
                let from = self.deps.len() as u32;
                match exec_uop {
                    Some(e) => {
                        self.push_dep(e, DepWhy::Reg(LOAD_RESULT));
                    }
                    None => self.push_reg_deps(&sh.reads),
                }
                let data = self.push_uop(id, store_data_ports, self.store_data_latency, 1, from);
                if let (Some(ports), true) = (self.vec_store_data_ports, sh.vector_mem) {
                    // The vector data's way out of the FP registers: a
                    // slot of those ports too, beside the store's own.
                    self.take_transfer_slot(id, ports);
                }
                let data_key = match (exec_uop, sh.reads.first()) {
                    (Some(e), _) => e,
                    (None, Some(&r)) => self.key(r),
                    // An immediate: the same value every time.
                    (None, None) => immediate_key(s),
                };
                self.stores.push_back(StoreRec {
                    epoch: self.stack_epoch,
                    addr,
                    addr_uops,
                    // A producer id no µop has: matches no load.
                    prod: if addr_known { addr_prod } else { [NONE - 1; 4] },
                    data,
                    data_key,
                    stat: s,
                });
                if self.stores.len() > 64 {
                    self.stores.pop_front();
                }
            }
            if sh.writes.contains(&FLAGS) {
                // Zero idioms too: `xor %eax,%eax; sete %bl` 2.00 cycles a
                // copy, `sub %eax,%eax; sete %bl` 1.00 (Sapphire Rapids).
                self.flags_logical = sh.logical_flags;
            }
            // A pointer made from a pointer plus a constant: the source's
            // value key before the write (the source may be the
            // destination).
            let made_from = sh
                .offset_of
                .filter(|_| sh.dest_size == 8)
                .map(|(d, src, k)| (d, self.key(src), k));
            // The register a merge into a dirty upper half waits for.
            let merged_into = self.upper_merge(s).map(|w| (w, self.producer(w)));
            // Results: the execution µop, else the load; eliminated moves alias the source.
            let writes: &[Reg] = if eliminated && crate::machine::is_swap_class(sh.class_id) {
                self.swap_producers(sh);
                &[]
            } else {
                &sh.writes
            };
            for &w in writes {
                if sh.zero_idiom && m.zero_idioms {
                    self.set_producer(w, NONE, ZERO_KEY);
                } else if let (Some(h), true) = (high_uop, w == sh.high_half) {
                    self.set_producer(w, h, h);
                } else if let Some(e) = exec_uop {
                    self.set_producer(w, e, e);
                } else if m.eliminates_move(sh) {
                    let (p, key) = sh
                        .reads
                        .first()
                        .map_or((NONE, NONE), |r| (self.producer(*r), self.key(*r)));
                    self.set_producer(w, p, key);
                } else if sh.imm_add && m.immediate_folding {
                    // Folded at rename: the value is ready when its source is.
                    let src = sh
                        .reads
                        .iter()
                        .chain(sh.addr_reads.iter())
                        .find(|r| **r != FLAGS);
                    let p = src.map_or(NONE, |r| self.producer(*r));
                    // A new value, though no µop computes it: named by its
                    // place in the µop stream, the id the next µop gets
                    // (the same distance back from every iteration's end).
                    let key = self.uops.len() as u32;
                    self.set_producer(w, p, key);
                } else if let Some(l) = load_uop {
                    self.set_producer(w, l, load_key);
                }
            }
            if let Some((w, old)) = merged_into {
                self.merge_upper(id, w, old);
            }
            if let Some((d, parent, k)) = made_from {
                self.note_key_parent(d, parent, k);
            }
            if self.costs[s].folded_flags {
                // A folded add's flags, where something reads them, are
                // still computed: a cycle after its source, without a port.
                // Golden Cove, measured: `sbb $-1,%r15; add $1,%r15` 2.00
                // cycles a copy, `adc $0,%r15; add $1,%r15` 2.00; six
                // folded adds a cycle all the same.
                let src = sh.reads.iter().find(|r| **r != FLAGS).copied();
                let from = self.deps.len() as u32;
                if let Some(r) = src {
                    self.push_reg_deps(&[r]);
                }
                let f = self.push_uop(id, self.no_ports, 1, 0, from);
                self.set_producer(FLAGS, f, f);
            }
            self.dyns.push(Dyn {
                stat: s as u32,
                iter: it as u32,
                uops: Span::new(first_uop, self.uops.len() as u32),
                slots: if fused_branch || nop_fused || move_fused {
                    0
                } else {
                    slots
                },
                bytes: sh.len as u32,
                dispatched: 0,
                retired: 0,
                exec: exec_uop,
                dispatch_stall: None,
                retire_stall: None,
                blocked_by,
            });
        }
        debug_assert_eq!(self.dyns.len(), self.built * n);
    }

    /// The one-cycle ALU µops µop `u` takes inputs from (see [`Uop::alu1`]).
    fn alu_inputs(&self, u: usize) -> impl Iterator<Item = &Uop> + '_ {
        self.uops[u]
            .deps
            .iter()
            .map(move |k| &self.uops[self.producer_of(u, k)])
            .filter(|p| p.alu1)
    }

    /// Whether static instruction `s` is a register-only ALU op that reads
    /// and writes, at the same size, the register the instruction before
    /// it moved into (see [`Machine::move_op_fusion`]).
    fn changes_moved_register(&self, s: usize) -> bool {
        let (m, sh) = (self.m, &self.shapes[s]);
        let Some(mov) = s.checked_sub(1).map(|p| &self.shapes[p]) else {
            return false;
        };
        let Some(&moved) = mov.writes.first() else {
            return false;
        };
        let ports = m.port_set_masks()[m.class_port_set(sh.class_id as usize) as usize];
        sh.load.is_none()
            && sh.store.is_none()
            && !sh.cond_branch
            && !sh.zero_idiom
            && ports != 0
            && ports & !m.alu_port_mask() == 0
            && sh.writes.first() == Some(&moved)
            && sh.reads.contains(&moved)
            && sh.dest_size == mov.dest_size
    }

    /// [`Graph::ready_time`] and, in the same look at µop `u`'s inputs,
    /// when its last input from a one-cycle ALU µop arrives (as
    /// [`Graph::alu_inputs`] finds them) and its last from a fresh one
    /// (see [`Uop::fresh`]: marked by issue). For the machines with ALU
    /// rules only: elsewhere [`Graph::ready_time`] alone is cheaper.
    #[inline]
    fn ready_and_alu_arrivals(&self, u: usize, dispatched: u64) -> (u64, Option<u64>, Option<u64>) {
        let mut t = dispatched + 1;
        let (mut alu, mut fresh) = (None, None);
        for k in self.uops[u].deps.iter() {
            let p = &self.uops[self.producer_of(u, k)];
            let complete = p.complete();
            t = t.max(complete.unwrap_or(0));
            if p.alu1 && complete.is_some() {
                alu = alu.max(complete);
                if p.fresh {
                    fresh = fresh.max(complete);
                }
            }
        }
        (t, alu, fresh)
    }

    /// The time a µop's inputs are all available (and it has been dispatched).
    fn ready_time(&self, u: usize, dispatched: u64) -> u64 {
        let mut t = dispatched + 1;
        for k in self.uops[u].deps.iter() {
            let p = self.producer_of(u, k);
            t = t.max(self.uops[p].complete().unwrap_or(0));
        }
        t
    }
}

/// A steady-state test's arrays: marks and their changes.
type SteadyArrays = (Vec<(u64, u64, u64)>, Vec<[u64; 3]>);

thread_local! {
    /// The arrays of finished tests, for the next ones on the thread.
    static STEADY_BUFFERS: std::cell::RefCell<Vec<SteadyArrays>> = std::cell::RefCell::default();
}

impl Drop for Steady {
    fn drop(&mut self) {
        let (mut marks, mut deltas) = (
            std::mem::take(&mut self.marks),
            std::mem::take(&mut self.deltas),
        );
        marks.clear();
        deltas.clear();
        let _ = STEADY_BUFFERS.try_with(|b| b.borrow_mut().push((marks, deltas)));
    }
}

/// Decides when a simulation has reached its steady state, from each
/// iteration: the cycle its last instruction retires, the cycles its
/// instructions spent in the ROB and its µops from issue to retirement
/// (by Little's law, the ROB's occupancy and the µops in flight).
///
/// Steady: over the last three periods (at least [`Steady::MIN_RUN`]
/// iterations) of some period p ≤ [`Steady::MAX_PERIOD`], the cycles between
/// iteration ends and the cycles between the retirements inside each
/// iteration (hashed) repeat exactly, occupancy and µops in flight are
/// never smaller than a period before (a ROB filling behind a slow chain
/// keeps the rate; a backlog of finished work draining at the retire width
/// does not), and the rate is not below the ports' bound (a backlog drained
/// faster than the ports could have done the work: that work was done
/// before). The simulation is deterministic, so this is the periodic regime
/// of retirement, and results are measured over whole periods: exact, not
/// averaged. A rate at the largest of the ports', dispatch, fetch and
/// taken-branch bounds ([`Steady::bound`]) needs only two periods (at least
/// [`Steady::FAST_RUN`] iterations) and is measured over
/// [`Steady::FAST_MEASURE`]: no later iteration can beat it, and over
/// python3.11's blocks on every description the long runs (300 iterations)
/// agree with it as often as with the full test (BENCHMARKS, session 34).
/// Where dispatch runs ahead of a slow chain or port (the ROB still
/// filling), dispatch times and waits are those of the filling at the stop;
/// cycles and M are the retirement's and do not depend on it.
struct Steady {
    min_run: usize,
    /// Per iteration: (end cycle, ROB cycles, issue-to-retire cycles).
    marks: Vec<(u64, u64, u64)>,
    /// Per iteration from the second: the change of each mark from the
    /// iteration before.
    deltas: Vec<[u64; 3]>,
    /// Periods 1..=`eligible` have had enough iterations to be tested.
    eligible: usize,
    /// Per period p (at p − 1) once eligible: how many of the newest
    /// changes of the end cycle (and retire pattern) equal the one p
    /// iterations before them, and how many of those also have occupancy
    /// and µops in flight no smaller than p iterations before (at least as
    /// many as a test needs).
    /// One comparison per period and iteration keeps the test cheap: it
    /// runs on every iteration of every block.
    run_end: [usize; Self::MAX_PERIOD],
    run_all: [usize; Self::MAX_PERIOD],
    /// Cycles per iteration the ports need at least: a rate below it is a
    /// backlog draining, not the steady state.
    floor: f64,
    /// Cycles per iteration no steady state can beat: the ports', the
    /// dispatch width's, the fetch bytes' and the taken branches' bounds,
    /// the largest (0: not known yet). A repeating rate at it stops sooner.
    bound: f64,
    /// Periods must be multiples of this: the iterations after which the
    /// block's stores are back at the same places in their cache lines
    /// (see [`LineShift`]).
    unit: usize,
}

impl Steady {
    const MAX_PERIOD: usize = 16;
    const MIN_RUN: usize = 8;
    /// Iterations measured: whole periods covering at least this many.
    const MEASURE: usize = 8;
    /// At the largest bound: the run that is enough, and the iterations measured.
    const FAST_RUN: usize = 3;
    const FAST_MEASURE: usize = 3;
    /// Per period p, the iterations measured (tables: a division per
    /// period per iteration was a sixth of this test's time).
    const MEASURE_OF: [usize; Self::MAX_PERIOD + 1] = Self::whole_periods(Self::MEASURE);
    const FAST_MEASURE_OF: [usize; Self::MAX_PERIOD + 1] = Self::whole_periods(Self::FAST_MEASURE);

    /// Per period p, the iterations of whole periods covering at least `least`.
    const fn whole_periods(least: usize) -> [usize; Self::MAX_PERIOD + 1] {
        let mut t = [0; Self::MAX_PERIOD + 1];
        let mut p = 1;
        while p <= Self::MAX_PERIOD {
            t[p] = p * least.div_ceil(p);
            p += 1;
        }
        t
    }

    /// Never steady when not stopping early (every iteration asked for runs).
    fn new(stop_early: bool) -> Self {
        let (marks, deltas) = STEADY_BUFFERS
            .with(|b| b.borrow_mut().pop())
            .unwrap_or_default();
        Steady {
            min_run: if stop_early {
                Self::MIN_RUN
            } else {
                usize::MAX / 4
            },
            marks,
            deltas,
            eligible: 0,
            run_end: [0; Self::MAX_PERIOD],
            run_all: [0; Self::MAX_PERIOD],
            floor: 0.0,
            bound: 0.0,
            unit: 1,
        }
    }

    /// Cycle each iteration's last instruction retired.
    fn end(&self, it: usize) -> u64 {
        self.marks[it].0
    }

    fn len(&self) -> usize {
        self.marks.len()
    }

    /// The iterations three periods span (at least `min_run`).
    fn span(&self, p: usize) -> usize {
        (3 * p).max(self.min_run)
    }

    /// The iterations two periods span (at least [`Steady::FAST_RUN`]):
    /// enough at the largest bound.
    fn fast_span(p: usize) -> usize {
        (2 * p).max(Self::FAST_RUN)
    }

    /// The shortest run any test of period `p` accepts (the full span
    /// where no early stop is wanted).
    fn least_span(&self, p: usize) -> usize {
        match self.min_run {
            Self::MIN_RUN => Self::fast_span(p),
            _ => self.span(p),
        }
    }

    /// Records an iteration's end; the iterations to measure over once steady.
    ///
    /// Steady with period p when, over the last `span` iterations, the
    /// cycles between iteration ends (and `shape`, the retirement inside
    /// the iteration, hashed) repeat with period p and the other two marks
    /// are no smaller than p iterations before, at a rate the ports allow.
    /// A period is tested once `span + p + 1` iterations have run (and the
    /// iterations it measures).
    fn push(
        &mut self,
        end: u64,
        occupancy: u64,
        in_flight: u64,
        shape: u64,
    ) -> Option<Range<usize>> {
        let last = self.marks.last().copied();
        self.marks.push((end, occupancy, in_flight));
        let k = self.marks.len();
        if let Some(last) = last {
            let x = [
                end.wrapping_sub(last.0) ^ shape.rotate_left(17),
                occupancy.wrapping_sub(last.1),
                in_flight.wrapping_sub(last.2),
            ];
            let r = self.deltas.len();
            // Each testable period's runs, tested as they are counted
            // (the smallest period that passes wins; nothing is read
            // after a pass: the simulation stops).
            for p in 1..=self.eligible {
                let then = &self.deltas[r - p];
                let same_end = x[0] == then[0];
                let run_end = if same_end { self.run_end[p - 1] + 1 } else { 0 };
                // Occupancy and µops in flight no smaller than a period before.
                let (now, before) = (self.marks[k - 1], self.marks[k - 1 - p]);
                let run_all = if same_end && now.1 >= before.1 && now.2 >= before.2 {
                    self.run_all[p - 1] + 1
                } else {
                    0
                };
                self.run_end[p - 1] = run_end;
                self.run_all[p - 1] = run_all;
                // (`passes`' first test, here: most periods fail it.)
                if run_end < self.least_span(p) {
                    continue;
                }
                if let Some(w) = self.passes(p, k) {
                    return Some((k - w)..k);
                }
            }
            self.deltas.push(x);
        }
        // Periods that become testable now: their runs counted back once.
        let tested = self.eligible;
        while self.eligible < Self::MAX_PERIOD {
            let p = self.eligible + 1;
            let span = self.span(p);
            if k < self.least_span(p) + p + 1 || k < Self::FAST_MEASURE_OF[p] + 1 {
                break;
            }
            let d = &self.deltas;
            let (mut same_end, mut same_all, mut all_open) = (0, 0, true);
            for r in (p..d.len()).rev() {
                if same_end >= span && !all_open {
                    break;
                }
                let (now, then) = (&d[r], &d[r - p]);
                if now[0] != then[0] {
                    break;
                }
                same_end += 1;
                let (m, b) = (&self.marks[r + 1], &self.marks[r + 1 - p]);
                all_open &= m.1 >= b.1 && m.2 >= b.2;
                same_all += all_open as usize;
            }
            self.run_end[p - 1] = same_end;
            self.run_all[p - 1] = same_all;
            self.eligible = p;
        }
        (tested + 1..=self.eligible)
            .find_map(|p| self.passes(p, k))
            .map(|w| (k - w)..k)
    }

    /// The iterations to measure over if period `p` is steady after `k`
    /// iterations: its runs cover its span, the growth of the other marks
    /// over the last period is not negative, and the rate is not below the
    /// ports' bound. At the largest bound ([`Steady::bound`]) a shorter
    /// run ([`Steady::fast_span`]) is enough: nothing the simulation does
    /// later can beat that rate, and what repeats exactly at it is the
    /// regime the long run settles in (checked over every block of
    /// python3.11 on every description, BENCHMARKS session 34).
    fn passes(&self, p: usize, k: usize) -> Option<usize> {
        if self.run_end[p - 1] < self.least_span(p) || !p.is_multiple_of(self.unit) {
            return None;
        }
        let e = &self.marks;
        let growing = e[k - 1].1 >= e[k - 1 - p].1 && e[k - 1].2 >= e[k - 1 - p].2;
        if !growing {
            return None;
        }
        let rate = |w: usize| (e[k - 1].0 - e[k - 1 - w].0) as f64 / w as f64;
        let covered = |span: usize| self.run_end[p - 1] >= span && self.run_all[p - 1] + 1 >= span;
        let span = self.span(p);
        let w = Self::MEASURE_OF[p];
        if covered(span) && k > w && rate(w) >= self.floor - 1e-9 {
            return Some(w);
        }
        let w = Self::FAST_MEASURE_OF[p];
        if self.bound > 0.0
            && covered(Self::fast_span(p))
            && k > w
            && (rate(w) - self.bound).abs() < 1e-9
        {
            return Some(w);
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

/// Ports taken, cycle by cycle, from the cycle instructions dispatch in now
/// on (earlier cycles can no longer be asked for: a µop issues after its
/// dispatch): a ring of port masks, grown when reservations reach further
/// ahead than it holds.
#[derive(Default)]
struct PortCalendar {
    /// Bit mask of the ports busy in cycle `c`, at `c % ring.len()`.
    ring: Vec<u64>,
    /// Beside it, the L1 banks loads read in that cycle (see
    /// [`Machine::load_bank_conflicts`]): banks read once in the low 16
    /// bits, twice in the high 16.
    banks: Vec<u32>,
    /// Beside it, the ALU issue capacity taken in that cycle, in eighths
    /// of a slot, in the low 10 bits (see [`Machine::dependent_alu_slots`]),
    /// and above them the ALU µops issued there the cycle their ALU input
    /// arrived (see [`Machine::alu_wakeups_per_cycle`]). One array, not
    /// two: a second one beside it cost Golden Cove's model 11-15 % of its
    /// speed (fresh pages zeroed by the kernel: mimalloc's, measured with
    /// `perf record`), though never written there.
    units: Vec<u16>,
    /// Whether `units` has been written since the calendar was cleared
    /// (most descriptions never do: its cycles are then left alone).
    counting: bool,
    /// The cycles held: `base..end` (later cycles are all free).
    base: u64,
    end: u64,
}

impl PortCalendar {
    fn clear(&mut self) {
        if self.ring.is_empty() {
            self.ring = vec![0; 64];
            self.banks = vec![0; 64];
            self.units = vec![0; 64];
        }
        self.advance(self.end);
        self.base = 0;
        self.end = 0;
        self.counting = false;
    }

    #[inline]
    fn slot(&self, t: u64) -> usize {
        (t as usize) & (self.ring.len() - 1)
    }

    /// Forgets the cycles before `now`.
    fn advance(&mut self, now: u64) {
        if now <= self.base {
            // Most instructions dispatch in the cycle of the one before.
            return;
        }
        for c in self.base..now.min(self.end) {
            let k = self.slot(c);
            self.ring[k] = 0;
            self.banks[k] = 0;
        }
        if self.counting {
            for c in self.base..now.min(self.end) {
                let k = self.slot(c);
                self.units[k] = 0;
            }
        }
        self.base = self.base.max(now);
        self.end = self.end.max(self.base);
    }

    #[inline]
    fn busy(&self, t: u64) -> u64 {
        if t < self.end {
            self.ring[self.slot(t)]
        } else {
            0
        }
    }

    /// Ports of `mask` free in every cycle of `t..t + len` (at least `t`).
    #[inline]
    fn free(&self, mask: u64, t: u64, len: u64) -> u64 {
        if len <= 1 {
            return mask & !self.busy(t);
        }
        (t..t + len).fold(mask, |f, c| f & !self.busy(c))
    }

    /// The ALU issue capacity taken in cycle `t`, in eighths of a slot.
    #[inline]
    fn units(&self, t: u64) -> u16 {
        if t < self.end {
            self.units[self.slot(t)]
        } else {
            0
        }
    }

    /// The ALU capacity taken in cycle `t` alone (the count of wakeups
    /// shares its word: see [`PortCalendar::take_wakeup`]).
    #[inline]
    fn capacity_taken(&self, t: u64) -> u16 {
        self.units(t) & 0x3ff
    }

    /// Takes `n` eighths of an ALU slot in cycle `t`.
    #[inline]
    fn take_units(&mut self, n: u16, t: u64) {
        let k = self.hold(t);
        self.units[k] += n;
    }

    /// The ALU µops issued in cycle `t` the cycle their ALU input arrived.
    #[inline]
    fn wakeups(&self, t: u64) -> u8 {
        (self.units(t) >> 10) as u8
    }

    /// One more ALU µop issued in cycle `t` as its ALU input arrived.
    fn take_wakeup(&mut self, t: u64) {
        let k = self.hold(t);
        self.units[k] += 1 << 10;
    }

    /// Holds cycle `t` (no port taken) for the counts beside the ports,
    /// and gives its place in the ring.
    fn hold(&mut self, t: u64) -> usize {
        if t >= self.end {
            self.grow_to(t + 1);
            self.end = t + 1;
        }
        self.counting = true;
        self.slot(t)
    }

    /// Takes `n` eighths of an ALU slot from cycle `t` on, `cap` a cycle
    /// at most: what does not fit in `t` spills into the cycles after it.
    #[inline]
    fn spill_units(&mut self, mut n: u16, mut t: u64, cap: u16) {
        while n > 0 {
            let room = cap.saturating_sub(self.capacity_taken(t)).min(n);
            if room > 0 {
                self.take_units(room, t);
                n -= room;
            }
            t += 1;
        }
    }

    /// Whether a load reading `banks` fits in cycle `t`: no bank read
    /// twice there already.
    #[inline]
    fn banks_free(&self, banks: u16, t: u64) -> bool {
        t >= self.end || (self.banks[self.slot(t)] >> 16) as u16 & banks == 0
    }

    /// Reserves `banks` in cycle `t` (held already by a [`take`] there).
    ///
    /// [`take`]: PortCalendar::take
    fn take_banks(&mut self, banks: u16, t: u64) {
        let k = self.slot(t);
        let (once, twice) = (self.banks[k] as u16, (self.banks[k] >> 16) as u16);
        self.banks[k] = (once | banks) as u32 | ((twice | (once & banks)) as u32) << 16;
    }

    #[inline]
    fn take(&mut self, port: usize, t: u64, len: u64) {
        let last = t + len;
        if len == 1 && ((t - self.base) as usize) < self.ring.len() {
            // One pipelined µop within the ring: the common case.
            let k = self.slot(t);
            self.ring[k] |= 1 << port;
            self.end = self.end.max(last);
            return;
        }
        self.grow_to(last);
        for c in t..last {
            let k = self.slot(c);
            self.ring[k] |= 1 << port;
        }
        self.end = self.end.max(last);
    }

    /// Makes the ring hold the cycles up to `last` (excluded).
    fn grow_to(&mut self, last: u64) {
        if (last - self.base) as usize > self.ring.len() {
            // Grow (a power of two) and move the held cycles over.
            let mut size = self.ring.len() * 2;
            while ((last - self.base) as usize) > size {
                size *= 2;
            }
            let (mut ring, mut banks, mut units) = (vec![0; size], vec![0; size], vec![0; size]);
            for c in self.base..self.end {
                let (from, to) = (self.slot(c), (c as usize) & (size - 1));
                ring[to] = self.ring[from];
                banks[to] = self.banks[from];
                units[to] = self.units[from];
            }
            self.ring = ring;
            self.banks = banks;
            self.units = units;
        }
    }
}

/// A set of port indices as a bit mask (a machine has at most 64 ports).
pub(crate) fn port_mask(ports: &[usize]) -> u64 {
    ports.iter().fold(0u64, |m, &p| m | 1u64 << p)
}

/// The ports' bound on cycles per iteration: the most, over groups of
/// ports, of the occupancy of the µops that can only run in the group over
/// the group's size (a µop of `(port mask, occupancy)` counts in every
/// group holding its whole set). The most is reached at a union of the
/// µops' sets, so only those are tried (a block has a few distinct sets;
/// over 10, each set and all of them). Returns the group's mask and the bound.
///
/// An iteration's µops assigned greedily to their least-loaded port said
/// one `cmp`+`jb` needed a whole cycle on `alu0`, while four ALUs share it.
pub(crate) fn port_bound(uops: impl IntoIterator<Item = (u64, f64)>) -> (u64, f64) {
    // Occupancy per distinct set.
    let mut sets: smallvec::SmallVec<[(u64, f64); 8]> = smallvec::SmallVec::new();
    for (set, occ) in uops {
        match sets.iter_mut().find(|s| s.0 == set) {
            Some(s) => s.1 += occ,
            None => sets.push((set, occ)),
        }
    }
    let load_of = |group: u64| -> f64 {
        sets.iter()
            .filter(|(set, _)| set & !group == 0)
            .map(|s| s.1)
            .sum()
    };
    let mut best = (0u64, 0.0f64);
    let mut consider = |group: u64| {
        let bound = load_of(group) / group.count_ones() as f64;
        if bound > best.1 || (bound == best.1 && group.count_ones() < best.0.count_ones()) {
            best = (group, bound);
        }
    };
    if sets.len() > 10 {
        sets.iter().for_each(|s| consider(s.0));
        consider(sets.iter().fold(0, |g, s| g | s.0));
    } else {
        for pick in 1u32..(1 << sets.len()) {
            let group = (0..sets.len())
                .filter(|k| pick >> k & 1 == 1)
                .fold(0u64, |g, k| g | sets[k].0);
            consider(group);
        }
    }
    best
}

thread_local! {
    static CALENDAR: std::cell::RefCell<PortCalendar> = std::cell::RefCell::default();
    static BINDER: std::cell::RefCell<crate::rename_binding::RenameBinder> = std::cell::RefCell::default();
}

/// A simulation's outcome.
pub(crate) struct SimResult<'a> {
    pub graph: Graph<'a>,
    /// Iterations of the steady state the results are measured over.
    pub measured: Range<usize>,
    /// Iterations simulated, and whether `measured` is whole periods of
    /// a steady state (not the second half of a run that never settled,
    /// or of a fixed number of iterations).
    pub iterations: usize,
    pub steady: bool,
    /// The ports' bound on cycles per iteration and its group of ports
    /// ([`port_bound`]) of the template every iteration from the second or
    /// third on is a copy of; None without one.
    pub ports: Option<(u64, f64)>,
    /// Per iteration, the cycles the memory has taken so far to write the
    /// lines non-temporal stores filled ([`Machine::nontemporal_line`]);
    /// empty where the block has none or the machine does not model them.
    pub memory_writes: Vec<u64>,
}

/// Where dispatch stands: the cycle, what it has used of it, and the slots a
/// microcoded instruction wider than the machine still owes.
struct DispatchState {
    cycle: u64,
    slots: u32,
    /// Of them, [`Machine::fp_dispatch_width`]'s (beyond the width: the
    /// next cycle's, as a compare's second slot spills over).
    fp: u32,
    bytes: u32,
    /// Bytes of the last cycle's instructions beyond its window, fetched
    /// in this cycle's.
    carry: u32,
    owed: u32,
}

impl DispatchState {
    fn next_cycle(&mut self, width: u32, window: u32, fp_width: u32) {
        self.cycle += 1;
        self.fp = self.fp.saturating_sub(fp_width);
        self.slots = self.owed.min(width);
        self.owed -= self.slots;
        self.carry = match window {
            0 => 0,
            w => (self.carry + self.bytes).saturating_sub(w),
        };
        self.bytes = 0;
    }
}

/// Where retirement stands: the cycle, instructions and stores retired in
/// it, and the cache line the last store wrote.
struct RetireState {
    cycle: u64,
    count: u32,
    commits: u32,
    /// No store commits before this cycle (a line-splitting store's two
    /// lines are still being written).
    commit_free_at: u64,
    last_store_line: Option<StoreLine>,
    /// The last lines stores were committed to, each with the cycle its
    /// last group of stores committed in, for the narrow-store stall.
    recent_lines: [RecentLine; RECENT_LINES],
    next_recent: usize,
    /// The line of the current group of stores, if that group was held up
    /// already (once per group).
    held: Option<StoreLine>,
    /// The lines non-temporal stores are filling and the bytes they wrote,
    /// the least recently written first, at most
    /// [`Machine::nontemporal_buffers`] (see [`Machine::nontemporal_line`]).
    wc_open: Vec<(NtLine, u64)>,
    /// When the memory is done writing the last two lines they filled.
    wc_ends: [u64; 2],
    /// The cycles the memory has taken for all those lines.
    wc_cycles: u64,
}

/// A line stores were committed to lately: the cycle of its last commit
/// and of the last commit of its group before the current one.
#[derive(Clone, Copy, Default)]
struct RecentLine {
    line: Option<StoreLine>,
    last: Option<u64>,
    before: Option<u64>,
}

/// A cache line as the model knows it: the address's registers and its
/// displacement's 64-byte line.
type StoreLine = (iced_x86::Register, iced_x86::Register, i64);

/// Lines [`RetireState`] remembers (the stall's window is a few cycles, in
/// which at most `store_commit` lines a cycle are written).
const RECENT_LINES: usize = 8;

/// Where an access starts in its 64-byte line, its base taken as
/// line-aligned (as the harness's registers are; relative to other
/// accesses through the same base it is exact); unknown with an index
/// register or RIP.
fn line_offset(a: &crate::classify::MemAddr) -> Option<usize> {
    (a.index == iced_x86::Register::None && a.base != iced_x86::Register::RIP)
        .then_some((a.disp & 63) as usize)
}

/// Per instruction of a block, where the base register of its memory
/// operand stands in a 64-byte line relative to the line-aligned start
/// [`line_offset`] takes every register at the block's entry to have:
/// followed through `lea disp(%base)`, `add`/`sub $imm`, `inc`/`dec` and
/// register moves (a load or any other write leaves a register aligned,
/// as the harness's loaded pointers are). Measured on Golden Cove: four
/// stores at 8, 0x10, 0 and 0x20 from a register that `lea 0x30(%r15),%rax`
/// set run 4.02 cycles a copy (two lines, alternating), from one at a
/// line's start 2.00; with `add $8,%rax` instead 2.99 (the stores cross
/// into the next line in some iterations).
#[derive(Clone, Copy, Default)]
struct LineShift {
    /// The offset in the first iteration.
    first: i64,
    /// The offset in the second.
    second: i64,
    /// The change from one iteration to the next from the second on (a
    /// pointer bumped by 8: 8), modulo 64.
    drift: i64,
    /// The base moves by less than a line each iteration but comes back
    /// only after more iterations than the steady-state test looks at:
    /// `drift` is 0 (the aligned start), yet its loads' banks are not fixed.
    moves: bool,
}

impl LineShift {
    /// In iteration `it`.
    fn at(self, it: usize) -> i64 {
        match it {
            0 => self.first,
            _ => (self.second + (it as i64 - 1) * self.drift).rem_euclid(64),
        }
    }

    /// One shift for every iteration where there is one (for the L1 banks
    /// a load reads, fixed for a block's iterations): the second
    /// iteration's if nothing drifts, else none.
    fn fixed(self) -> Option<i64> {
        (self.drift == 0 && !self.moves).then_some(self.second)
    }
}

/// Where the base register of each instruction's access (`access`)
/// stands relative to the block's entry, in each of four passes over the
/// block (a pass an iteration): moved by the constants `offset_of` follows,
/// a register written otherwise back at its start (`in_line`: offsets
/// within a 64-byte line, as [`line_shifts`] takes them). Beside it (not
/// `in_line`), per instruction, whether its base or index was ever
/// written otherwise before it, in any pass (its offsets then say
/// nothing).
#[inline(never)]
fn base_offsets(
    shapes: &[Shape],
    access: impl Fn(&Shape) -> Option<MemAddr>,
    in_line: bool,
) -> ([Vec<i64>; 4], Vec<bool>) {
    let n = shapes.len();
    // Registers away from where they started, by how far (the rest are
    // not), and those written by something else than a constant move.
    let mut off: smallvec::SmallVec<[(Reg, i64); 8]> = smallvec::SmallVec::new();
    let mut unknown: smallvec::SmallVec<[Reg; 8]> = smallvec::SmallVec::new();
    let get = |off: &smallvec::SmallVec<[(Reg, i64); 8]>, r: Reg| {
        off.iter().find(|e| e.0 == r).map_or(0, |e| e.1)
    };
    let mut seen = [vec![0i64; n], vec![0i64; n], vec![0i64; n], vec![0i64; n]];
    let mut moved = vec![false; n];
    for pass in seen.iter_mut() {
        for (s, sh) in shapes.iter().enumerate() {
            if let Some(a) = access(sh) {
                pass[s] = get(&off, a.base as Reg);
                moved[s] |= [a.base, a.index]
                    .iter()
                    .any(|&r| r != iced_x86::Register::None && unknown.contains(&(r as Reg)));
            }
            match sh.offset_of {
                Some((d, src, k)) => {
                    let v = get(&off, src) + k;
                    let v = if in_line { v.rem_euclid(64) } else { v };
                    off.retain(|e| e.0 != d);
                    if v != 0 {
                        off.push((d, v));
                    }
                    if !in_line {
                        let from_unknown = unknown.contains(&src);
                        unknown.retain(|&mut r| r != d);
                        if from_unknown {
                            unknown.push(d);
                        }
                    }
                }
                None => {
                    off.retain(|e| !sh.writes.contains(&e.0));
                    // (Within a line, [`line_shifts`] does not ask.)
                    if !in_line {
                        for &w in &sh.writes {
                            if !unknown.contains(&w) {
                                unknown.push(w);
                            }
                        }
                    }
                }
            }
        }
    }
    (seen, moved)
}

/// Empty where every shift is the aligned start (most blocks move no
/// register by a constant, or address no memory).
fn line_shifts(shapes: &[Shape]) -> Vec<LineShift> {
    let n = shapes.len();
    if !shapes.iter().any(|sh| sh.offset_of.is_some())
        || !shapes
            .iter()
            .any(|sh| sh.load.is_some() || sh.store.is_some())
    {
        return Vec::new();
    }
    let mut shifts = vec![LineShift::default(); n];
    let (seen, _) = base_offsets(shapes, |sh| sh.load.or(sh.store), true);
    for (s, shift) in shifts.iter_mut().enumerate() {
        let p = [seen[0][s], seen[1][s], seen[2][s], seen[3][s]];
        let drift = (p[2] - p[1]).rem_euclid(64);
        // Offsets that do not move by the same step each iteration (a
        // rotation between registers), or come back only after more
        // iterations than the steady-state test looks at: the aligned
        // start, as before.
        let period = 64 / gcd(drift as usize, 64);
        if (p[3] - p[2]).rem_euclid(64) == drift {
            *shift = if period <= Steady::MAX_PERIOD {
                LineShift {
                    first: p[0],
                    second: p[1],
                    drift,
                    moves: false,
                }
            } else {
                LineShift {
                    moves: true,
                    ..LineShift::default()
                }
            };
        }
    }
    shifts
}

/// A line non-temporal stores write: their address registers, the line's
/// number (the base taken as line-aligned at the block's entry, moved as
/// [`NtMotion`] says), and the iteration where the motion is not known
/// (`u32::MAX` where it is: the same line again is the same line).
type NtLine = (iced_x86::Register, iced_x86::Register, i64, u32);

/// How a non-temporal store's base register moves from one iteration to
/// the next: its offset from the block's entry in the first iteration,
/// the second, and the step after (not reduced to a line, as
/// [`LineShift`] is: a stream through memory writes new lines). `known`
/// false where something other than a constant moves its base or index.
#[derive(Clone, Copy)]
struct NtMotion {
    first: i64,
    second: i64,
    step: i64,
    known: bool,
}

impl NtMotion {
    /// The line store `a` writes in iteration `it` and its bytes there
    /// (a store across lines: its first line's part).
    fn line(self, a: &MemAddr, it: usize) -> (NtLine, u64) {
        let off = match it {
            0 => self.first,
            _ => self.second + (it as i64 - 1) * self.step,
        };
        let at = (a.disp as i64).wrapping_add(off);
        let (start, end) = (
            at.rem_euclid(64),
            (at.rem_euclid(64) + a.size as i64).min(64),
        );
        let bytes = match end - start {
            64 => u64::MAX,
            w => ((1u64 << w) - 1) << start,
        };
        let tag = if self.known { u32::MAX } else { it as u32 };
        ((a.base, a.index, at.div_euclid(64), tag), bytes)
    }
}

/// Per instruction of a block: for a non-temporal store, how its base
/// moves (see [`NtMotion`]); `None` for the others ([`base_offsets`], not
/// reduced to a line).
fn nontemporal_motions(shapes: &[Shape]) -> Vec<Option<NtMotion>> {
    let n = shapes.len();
    let (seen, moved) = base_offsets(shapes, |sh| sh.store.filter(|_| sh.nontemporal), false);
    (0..n)
        .map(|s| {
            let sh = &shapes[s];
            sh.store.filter(|_| sh.nontemporal)?;
            let p = [seen[0][s], seen[1][s], seen[2][s], seen[3][s]];
            let step = p[2] - p[1];
            Some(NtMotion {
                first: p[0],
                second: p[1],
                step,
                known: !moved[s] && p[3] - p[2] == step,
            })
        })
        .collect()
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Whether the flags instruction `s` of a block writes are read before
/// they are written again, the block repeating.
fn flags_read(shapes: &[Shape], s: usize) -> bool {
    let n = shapes.len();
    (1..=n)
        .map(|k| &shapes[(s + k) % n])
        .find(|sh| sh.reads.contains(&FLAGS) || sh.writes.contains(&FLAGS))
        .is_some_and(|sh| sh.reads.contains(&FLAGS))
}

/// `a` with its displacement moved by a base register's `shift`.
fn shifted(a: MemAddr, shift: i64) -> MemAddr {
    MemAddr {
        disp: a.disp.wrapping_add(shift as u64),
        ..a
    }
}

/// Whether a store crosses a 64-byte line (see [`line_offset`]).
fn splits_line(a: &crate::classify::MemAddr) -> bool {
    line_offset(a).is_some_and(|o| o + a.size > 64)
}

impl RetireState {
    /// The memory starts writing a line non-temporal stores filled with
    /// `bytes` (whole: `full` cycles, else `partial`) once it is done with
    /// the line before.
    fn write_line(&mut self, bytes: u64, full: u32, partial: u32) {
        let cost = if bytes == u64::MAX { full } else { partial };
        let start = self.cycle.max(self.wc_ends[1]);
        self.wc_ends = [self.wc_ends[1], start + cost as u64];
        self.wc_cycles += cost as u64;
    }

    fn move_to(&mut self, cycle: u64) {
        if cycle > self.cycle {
            self.cycle = cycle;
            self.count = 0;
            self.commits = 0;
        }
    }
}

/// [`Machine::narrow_store_stall`]: whether the store to `line` (of `size`
/// bytes, starting a new group of stores to one line or not) is held up
/// now; otherwise records its commit in the current cycle.
fn narrow_store_held(
    m: &Machine,
    retire: &mut RetireState,
    line: StoreLine,
    size: usize,
    new_group: bool,
) -> bool {
    let k = match retire
        .recent_lines
        .iter()
        .position(|l| l.line == Some(line))
    {
        Some(k) => k,
        None => {
            let k = retire.next_recent;
            retire.next_recent = (k + 1) % RECENT_LINES;
            retire.recent_lines[k] = RecentLine {
                line: Some(line),
                last: None,
                before: None,
            };
            k
        }
    };
    let recent = &mut retire.recent_lines[k];
    // (A store that was held comes back as the start of its group still.)
    if new_group && retire.held != Some(line) {
        // The line's previous group ended at its last commit.
        recent.before = recent.last;
        retire.held = None;
    }
    if size <= 2 && retire.held != Some(line) {
        let before = recent.before;
        if before.is_some_and(|c| retire.cycle < c + m.narrow_store_window as u64) {
            // Held up: its line was written moments ago.
            retire.held = Some(line);
            return true;
        }
    }
    retire.recent_lines[k].last = Some(retire.cycle);
    false
}

/// Runs `shapes` back to back on `m` until the steady state (at most
/// `iterations` times or 10 M cycles).
///
/// One pass in program order: every instruction's dispatch, each µop's
/// issue and the instruction's retirement depend only on older
/// instructions, so each is decided when its turn comes. Issue is oldest
/// first: a µop takes the first cycle, from the one its inputs are ready
/// in, that has a port of its set free of every older µop's reservation
/// (the least used such port); a µop that occupies its port several
/// cycles (a divider) needs them all free. A younger µop never delays an
/// older one — on a real scheduler it can, when it takes an unpipelined
/// unit just before the older µop's inputs arrive.
pub(crate) fn simulate<'a>(
    m: &'a Machine,
    shapes: &'a [Shape],
    iterations: usize,
    stop_early: bool,
) -> SimResult<'a> {
    // Copies of the loop: without the binding's bookkeeping where the
    // description has none (its checks cost ~3 % on every µop), without
    // the ALU rules' where it has none of them (~3 %, session 56), and
    // without the non-temporal stores' lines where the block has none
    // (1.5-3 % in the loop, session 66).
    if m.nontemporal_line > 0 && shapes.iter().any(|sh| sh.nontemporal) {
        return match (m.ports_bound_at_rename, m.counts_alu_uops()) {
            (true, true) => simulate_with::<true, true, true>(m, shapes, iterations, stop_early),
            (true, false) => simulate_with::<true, false, true>(m, shapes, iterations, stop_early),
            (false, true) => simulate_with::<false, true, true>(m, shapes, iterations, stop_early),
            (false, false) => {
                simulate_with::<false, false, true>(m, shapes, iterations, stop_early)
            }
        };
    }
    match (m.ports_bound_at_rename, m.counts_alu_uops()) {
        (true, true) => simulate_with::<true, true, false>(m, shapes, iterations, stop_early),
        (true, false) => simulate_with::<true, false, false>(m, shapes, iterations, stop_early),
        (false, true) => simulate_with::<false, true, false>(m, shapes, iterations, stop_early),
        (false, false) => simulate_with::<false, false, false>(m, shapes, iterations, stop_early),
    }
}

fn simulate_with<'a, const BIND: bool, const ALU: bool, const NT: bool>(
    m: &'a Machine,
    shapes: &'a [Shape],
    iterations: usize,
    stop_early: bool,
) -> SimResult<'a> {
    let n = shapes.len();
    let mut g = Graph::new(m, shapes);
    let indexed_store = shapes.iter().any(|sh| {
        sh.store
            .is_some_and(|a| a.index != iced_x86::Register::None)
    });
    let (width, rob_cap, retire_w, bytes_pc) = (
        match m.indexed_store_width {
            w if w > 0 && indexed_store => w.min(m.dispatch_width),
            _ => m.dispatch_width,
        },
        m.rob_size as usize,
        m.retire_width,
        m.decode_bytes.max(16),
    );
    let (dense_width, dense_bytes) = (dense_dispatch_width(m, shapes), m.dense_dispatch_bytes);
    let fp_width = m.fp_dispatch_width;
    let straddle = m.decode_bytes_straddle;
    // The window whose overflow a cycle carries into the next (0: none).
    let carried_window = if straddle { bytes_pc } else { 0 };
    // The cycle's fetch window has no room for an instruction of `bytes`.
    let window_used = |d: &DispatchState, bytes: u32| {
        if straddle {
            d.carry + d.bytes >= bytes_pc
        } else {
            d.bytes + bytes > bytes_pc && d.bytes > 0
        }
    };
    let total = iterations * n;
    let [mut masks, spare, chain_complete, chain_retire] = std::mem::take(&mut g.scratch);
    // Port sets as bit masks (a machine has at most 64 ports, checked when
    // its description is read); an empty set (0) needs no port.
    masks.extend_from_slice(m.port_set_masks());
    // The ALUs' capacity a cycle, in eighths of a slot, and what a µop fed
    // by one in flight takes of it (see `Machine::dependent_alu_slots`):
    // not counted (no µop an ALU's) where every ALU µop takes one slot.
    let dependent_units = m.dependent_alu_eighths();
    let wakeups_cap = m.alu_wakeups_per_cycle;
    let alu_mask = if ALU { m.alu_port_mask() } else { 0 };
    let alu_units = 8 * alu_mask.count_ones() as u16;
    let multi_slot = ALU && m.multi_slot_classes();
    let mut issuer = Issuer {
        calendar: CALENDAR.with(|c| std::mem::take(&mut *c.borrow_mut())),
        binder: BINDER.with(|c| std::mem::take(&mut *c.borrow_mut())),
        port_load: [0; 64],
    };
    issuer.calendar.clear();
    // Loads and stores are not bound: a load port takes any load that is
    // ready (uiCA: ports 2 and 3 take from each other's queue).
    let mut bind = BIND;
    let memory_ports = if bind {
        issuer.binder.reset(m.ports(), !m.memory_port_mask());
        m.memory_port_mask()
    } else {
        0
    };
    let rules = IssueRules {
        alu_mask,
        alu_units,
        dependent_units,
        wakeups_cap,
        fresh_alu_forward_slot: m.fresh_alu_forward_slot,
        bound_at_dispatch: m.ports_bound_at_dispatch,
        memory_ports,
    };
    let mut dispatch = DispatchState {
        cycle: 0,
        slots: 0,
        fp: 0,
        bytes: 0,
        carry: 0,
        owed: 0,
    };
    // The front end's clock: the cycle each instruction is fetched in at
    // the earliest, by the taken branches and lines before it.
    // Built with the first iteration (the op cache counts its ops).
    let taken_limit = m.taken_branches_per_cycle;
    let mut fetch = FetchClock::new(m, &[], &[]);
    // Each static instruction's slots, from the first iteration.
    let mut static_slots: Vec<u32> = Vec::new();
    let mut retire = RetireState {
        cycle: 0,
        count: 0,
        commits: 0,
        commit_free_at: 0,
        last_store_line: None,
        recent_lines: [RecentLine::default(); RECENT_LINES],
        next_recent: 0,
        held: None,
        wc_open: Vec::new(),
        wc_ends: [0; 2],
        wc_cycles: 0,
    };
    let mut memory_writes = Vec::new();
    // Non-temporal stores and how their base moves (empty: none, or the
    // machine does not model their writes).
    let nt_motions = if NT {
        nontemporal_motions(shapes)
    } else {
        Vec::new()
    };
    // Stores through a pointer that moves by less than a line each
    // iteration come back to the same places after 64 / gcd(step, 64)
    // iterations (a power of two, at most `Steady::MAX_PERIOD`: see
    // `line_shifts`): the steady state's period is a multiple of that.
    // Instructions renamed first in their cycle (`vzeroupper`): rare.
    let any_group_start = g.costs.iter().any(|c| c.class.starts_group);
    let mut steady = Steady::new(stop_early);
    steady.unit = (0..n)
        .filter(|&s| shapes[s].store.is_some() && g.costs[s].line_shift.drift != 0)
        .map(|s| 64 / gcd(g.costs[s].line_shift.drift as usize, 64))
        .max()
        .unwrap_or(1);
    let mut measured = (iterations / 2)..iterations;
    let mut steady_found = false;
    // Over the current iteration: cycles its instructions spent in the ROB
    // and its µops from issue to retirement (by Little's law, the ROB's
    // occupancy and the µops in flight, times the iteration's cycles).
    let (mut rob_cycles, mut flight_cycles) = (0u64, 0u64);
    // The iteration's retirement, instruction by instruction, hashed: the
    // same cycles between iteration ends can hide a changing pattern inside.
    let mut retire_shape = 0u64;
    let mut last_retired = 0u64;
    let mut ports = None;
    // The ALU scheduler's entries: µops on the ALU pipes alone hold one
    // from dispatch to a cycle after their issue.
    let mut scheduler = SchedulerWindow::new(m.alu_scheduler_entries);
    let scheduler_mask = m.alu_port_mask();
    let in_scheduler = |u: &Uop| {
        let mask = masks[u.ports as usize];
        u.occupancy > 0 && mask != 0 && mask & !scheduler_mask == 0
    };
    // Per static instruction, its µops that take an entry.
    let mut scheduler_uops: Vec<u32> = Vec::new();
    for i in 0..total {
        if i >= g.dyns.len() {
            g.build_iteration();
            g.head.resize(g.dyns.len(), 0);
            if g.built == 1 {
                static_slots = g.dyns[..n].iter().map(|d| d.slots).collect();
                fetch = FetchClock::new(m, shapes, &static_slots);
                if scheduler.limited() {
                    scheduler_uops = g.dyns[..n]
                        .iter()
                        .map(|d| {
                            d.uops
                                .iter()
                                .filter(|&u| in_scheduler(&g.uops[u as usize]))
                                .count() as u32
                        })
                        .collect();
                }
            }
            if bind && g.built == 1 {
                // One bound µop an iteration meets no other at its port
                // that a free choice would not: the binding changes
                // nothing there (most short blocks) and is skipped.
                let bound = g.uops[..g.uop_start[1] as usize]
                    .iter()
                    .filter(|u| {
                        let mask = masks[u.ports as usize];
                        u.occupancy > 0 && mask != 0 && mask & memory_ports == 0
                    })
                    .count();
                bind = bound > 1;
            }
            if ports.is_none() && (g.template.is_some() || g.built > TEMPLATE_SEARCH) {
                // The ports' bound of an iteration as all later ones are.
                let (u0, u1) = (g.uop_start[g.built - 1], g.uop_start[g.built]);
                let bound = port_bound(
                    g.uops[u0 as usize..u1 as usize]
                        .iter()
                        .map(|u| (masks[u.ports as usize], u.occupancy as f64))
                        .filter(|u| u.0 != 0),
                );
                steady.floor = bound.1;
                if g.template.is_some() {
                    // What every iteration dispatches, fetches and follows.
                    let it = &g.dyns[(g.built - 1) * n..g.built * n];
                    let slots: u32 = it.iter().map(|d| d.slots).sum();
                    let bytes: u32 = it.iter().map(|d| d.bytes).sum();
                    let taken = shapes.iter().filter(|s| s.taken).count() as f64;
                    steady.bound = [
                        bound.1,
                        slots as f64 / width as f64,
                        bytes as f64 / bytes_pc as f64,
                        if taken_limit > 0 {
                            taken / taken_limit as f64
                        } else {
                            0.0
                        },
                        fetch_clock_cycles(m, shapes, &static_slots).0,
                        dense_code_cycles(m, shapes, slots, bytes),
                    ]
                    .into_iter()
                    .fold(0.0, f64::max);
                    if dependent_units != 8 || multi_slot {
                        // The ALUs' capacity bounds it too, every µop fed
                        // by a one-cycle ALU µop taken at its dependent
                        // cost (not a bound: the early stop's check, met
                        // only where it holds), a multi-cycle op at its
                        // own.
                        let (units, base_units) = (u0 as usize..u1 as usize)
                            .filter(|&u| {
                                let mask = masks[g.uops[u].ports as usize];
                                g.uops[u].occupancy > 0 && mask != 0 && mask & !alu_mask == 0
                            })
                            .map(|u| {
                                let d = &g.dyns[g.uops[u].insn as usize];
                                let base = if d.exec == Some(u as u32) {
                                    g.costs[d.stat as usize].issue_units as u64
                                } else {
                                    8
                                };
                                match g.alu_inputs(u).next() {
                                    Some(_) => (base + dependent_units as u64 - 8, base),
                                    None => (base, base),
                                }
                            })
                            .fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
                        steady.bound = steady.bound.max(units as f64 / alu_units as f64);
                        // Each µop's own slots at least are taken whenever
                        // it issues (what does not fit in a cycle spills
                        // into the next): a faster rate is a debt of slots
                        // growing, not the steady state (`lea
                        // (%r13,%r12),%rsi; cmpb $0,(%rsi)` stopped at 0.50
                        // cycles a copy, the long run and the host 0.67).
                        steady.floor = steady.floor.max(base_units as f64 / alu_units as f64);
                    }
                }
                ports = Some(bound);
            }
        }
        // Dispatch: a free ROB entry, slots and bytes left in the cycle.
        let (d_slots, d_bytes) = (g.dyns[i].slots, g.dyns[i].bytes);
        let first_in_cycle = any_group_start && g.costs[g.dyns[i].stat as usize].class.starts_group;
        let stat = g.dyns[i].stat as usize;
        let d_fp = if fp_width > 0 {
            g.costs[stat].fp_slots as u32
        } else {
            0
        };
        let fetched = fetch.fetch(stat, &shapes[stat]);
        while dispatch.cycle < fetched {
            // Fetched after a taken branch or from a later line, in a
            // later cycle.
            g.dyns[i].dispatch_stall.get_or_insert(fetch.why);
            dispatch.next_cycle(width, carried_window, fp_width);
        }
        let slot;
        loop {
            let alone = dispatch.slots == 0 && d_slots > width;
            let rob_free_at = if i >= rob_cap {
                g.dyns[i - rob_cap].retired
            } else {
                0
            };
            let scheduler_free_at = match scheduler_uops.get(stat) {
                Some(&need) if need > 0 => scheduler.room_at(dispatch.cycle, need),
                _ => 0,
            };
            let stall = if rob_free_at > dispatch.cycle {
                DispatchStall::RobFull
            } else if scheduler_free_at > dispatch.cycle {
                DispatchStall::SchedulerFull
            } else if (dispatch.slots + d_slots > width && !alone)
                || (first_in_cycle && dispatch.slots > 0)
            {
                DispatchStall::Width
            } else if d_fp > 0 && dispatch.fp >= fp_width {
                // (Its slots beyond the width spill into the next cycle.)
                DispatchStall::FpWidth
            } else if window_used(&dispatch, d_bytes) {
                DispatchStall::FrontEnd
            } else if dense_width > 0
                && dispatch.slots + d_slots > dense_width
                && dispatch.bytes + d_bytes < dense_bytes
                // An instruction of more slots than the dense width
                // starts a cycle anyway (waiting for room it can never
                // have hung the model: Zen 5's lfence, 88 slots).
                && dispatch.slots > 0
            {
                DispatchStall::DenseCode
            } else {
                slot = dispatch.slots;
                dispatch.fp += d_fp;
                if alone {
                    dispatch.owed = d_slots - width;
                    dispatch.slots = width;
                } else {
                    dispatch.slots += d_slots;
                }
                dispatch.bytes += d_bytes;
                break;
            };
            g.dyns[i].dispatch_stall.get_or_insert(stall);
            if stall == DispatchStall::SchedulerFull && dispatch.owed == 0 {
                dispatch.cycle = scheduler_free_at;
                dispatch.slots = 0;
                dispatch.fp = 0;
                dispatch.bytes = 0;
                dispatch.carry = 0;
            } else if stall == DispatchStall::RobFull && dispatch.owed == 0 {
                dispatch.cycle = rob_free_at;
                dispatch.slots = 0;
                dispatch.fp = 0;
                dispatch.bytes = 0;
                dispatch.carry = 0;
            } else {
                dispatch.next_cycle(width, carried_window, fp_width);
            }
        }
        let dc = dispatch.cycle;
        g.dyns[i].dispatched = dc;
        fetch.passed(stat, &shapes[stat]);
        issuer.calendar.advance(dc);
        if bind {
            issuer.binder.start(dc);
        }
        // A load whose forwarding fails (its first µop) waits for the
        // store's commit.
        let blocked_until = match g.dyns[i].blocked_by as usize {
            0 => 0,
            back => g.dyns[i - back].retired + m.store_forward_fail as u64,
        };
        let at = IssueStart {
            dispatched: dc,
            slot,
            last_slot: slot + d_slots.max(1) - 1,
            blocked_until,
            bind,
            exec: g.dyns[i].exec.unwrap_or(NONE),
            exec_units: g.costs[g.dyns[i].stat as usize].issue_units,
        };
        let uops = g.dyns[i].uops;
        let Issued {
            done,
            issued_sum,
            uop_count,
        } = issue::<BIND, ALU>(&mut g, uops, at, &rules, &masks, &mut issuer);
        if scheduler_uops.get(stat).is_some_and(|&k| k > 0) {
            for u in uops.iter() {
                let u = &g.uops[u as usize];
                if let Some(t) = u.issued().filter(|_| in_scheduler(u)) {
                    scheduler.enter(t + 1);
                }
            }
        }
        // Retire, in order: `retire_width` per cycle, stores commit
        // `store_commit` per cycle unless they write the line of the store
        // before. An instruction fused into its neighbour's slot retires
        // with it: a fused nop (measured on Zen 4: 4 movs and 4 nops per
        // copy 0.66 cycles, above the retire width otherwise), a move fused
        // with the op after it (Golden Cove: `mov %esi,%edx; and
        // $0xF000,%edx` 0.20 cycles, ten instructions a cycle), a
        // macro-fused branch (not measured).
        retire.move_to(done.max(last_retired));
        let stat = g.dyns[i].stat as usize;
        let sh = &shapes[stat];
        let mut held = None;
        loop {
            if retire.count >= retire_w {
                held.get_or_insert(RetireStall::Width);
                retire.move_to(retire.cycle + 1);
                continue;
            }
            // A non-temporal store opening a line waits while the memory
            // is still writing two lines; with every buffer taken, the
            // least recently written line goes to memory partly written.
            let nt_line = match (NT, nt_motions.get(stat), sh.store) {
                (true, Some(Some(motion)), Some(a)) => Some(motion.line(&a, i / n)),
                _ => None,
            };
            if let Some((line, _)) = nt_line {
                if !retire.wc_open.iter().any(|&(l, _)| l == line) {
                    if retire.cycle < retire.wc_ends[0] {
                        held.get_or_insert(RetireStall::MemoryWrite);
                        let at = retire.wc_ends[0];
                        retire.move_to(at);
                        continue;
                    }
                    if retire.wc_open.len() >= m.nontemporal_buffers.max(1) as usize {
                        let (_, bytes) = retire.wc_open.remove(0);
                        retire.write_line(bytes, m.nontemporal_line, m.nontemporal_partial_line);
                    }
                    retire.wc_open.push((line, 0));
                }
            }
            if let Some(addr) = sh
                .store
                .map(|a| shifted(a, g.costs[stat].line_shift.at(i / n)))
            {
                let line = (addr.base, addr.index, addr.disp as i64 >> 6);
                let new_group = retire.last_store_line != Some(line);
                let split = m.split_store_commit > 0
                    && (splits_line(&addr) || m.line_store_commits_alone && addr.size >= 64)
                    && !sh.stack_op;
                if retire.cycle < retire.commit_free_at
                    || (retire.commits >= m.store_commit && new_group)
                    || (m.store_commit_max > 0 && retire.commits >= m.store_commit_max)
                    || (split && retire.commits > 0)
                {
                    held.get_or_insert(RetireStall::StoreCommit);
                    retire.move_to(retire.cycle + 1);
                    continue;
                }
                if split {
                    // Both lines' commits, alone.
                    retire.commit_free_at = retire.cycle + m.split_store_commit as u64;
                }
                if m.narrow_store_stall > 0
                    && narrow_store_held(m, &mut retire, line, addr.size, new_group)
                {
                    held = Some(RetireStall::NarrowStore);
                    retire.move_to(retire.cycle + m.narrow_store_stall as u64);
                    continue;
                }
                retire.commits += 1;
                retire.last_store_line = Some(line);
            }
            if let Some((line, bytes)) = nt_line {
                // The line becomes the most recently written; a full one
                // goes to memory at once.
                if let Some(k) = retire.wc_open.iter().position(|&(l, _)| l == line) {
                    let (_, written) = retire.wc_open.remove(k);
                    if written | bytes == u64::MAX {
                        retire.write_line(u64::MAX, m.nontemporal_line, m.nontemporal_partial_line);
                    } else {
                        retire.wc_open.push((line, written | bytes));
                    }
                }
            }
            break;
        }
        let d = &mut g.dyns[i];
        d.retire_stall = held;
        if d.slots > 0 {
            retire.count += 1;
        }
        let r = retire.cycle;
        g.dyns[i].retired = r;
        g.head[i] = r - last_retired;
        retire_shape = (retire_shape ^ (r - last_retired)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        last_retired = r;
        rob_cycles += r - dc;
        // Each µop's cycles from issue to this retirement.
        flight_cycles += uop_count * r - issued_sum;
        if r >= 10_000_000 {
            break;
        }
        if (i + 1).is_multiple_of(n) {
            if NT {
                // Not steady while write-combining buffers fill (a stream
                // of partly written lines evicts none until they are full).
                retire_shape = retire_shape.wrapping_add(retire.wc_open.len() as u64);
                memory_writes.push(retire.wc_cycles);
            }
            // Not steady while retirement outruns dispatch or issue (a
            // backlog draining): both may only grow.
            let steady_now = steady.push(r, rob_cycles, flight_cycles, retire_shape);
            (rob_cycles, flight_cycles, retire_shape) = (0, 0, 0);
            if let Some(range) = steady_now {
                measured = range;
                steady_found = true;
                break;
            }
        }
    }
    let measured = steady.fallback(measured);
    CALENDAR.with(|c| *c.borrow_mut() = issuer.calendar);
    BINDER.with(|c| *c.borrow_mut() = issuer.binder);
    g.scratch = [masks, spare, chain_complete, chain_retire];
    SimResult {
        ports: ports.filter(|_| g.template.is_some()),
        graph: g,
        measured,
        iterations: steady.len(),
        steady: steady_found,
        memory_writes,
    }
}

/// The machine's rules for issuing µops, fixed for a run (see
/// [`simulate`]).
struct IssueRules {
    /// The ALUs' ports where a rule counts ALU µops (0: none does), their
    /// capacity a cycle in eighths of a slot, and what a µop fed by one in
    /// flight takes of it (see [`Machine::dependent_alu_slots`]).
    alu_mask: u64,
    alu_units: u16,
    dependent_units: u16,
    /// See [`Machine::alu_wakeups_per_cycle`] (0: no limit).
    wakeups_cap: u8,
    fresh_alu_forward_slot: bool,
    bound_at_dispatch: bool,
    /// Ports never bound at rename (where binding is on).
    memory_ports: u64,
}

/// What issue changes from one µop to the next: the ports' calendar, the
/// rename binding and the work each port has taken.
struct Issuer {
    calendar: PortCalendar,
    binder: crate::rename_binding::RenameBinder,
    /// Work issued to each port so far (a machine has at most 64 ports:
    /// a fixed array, indexed without bounds checks by a port's bit).
    port_load: [u64; 64],
}

/// Where an instruction's issue starts: its dispatch cycle, its first and
/// last dispatch slots, the cycle its first µop waits for at least (a
/// load whose forwarding fails: the store's commit), and whether its µops
/// are bound to ports at rename.
#[derive(Clone, Copy)]
struct IssueStart {
    dispatched: u64,
    slot: u32,
    last_slot: u32,
    blocked_until: u64,
    bind: bool,
    /// Its execution µop ([`NONE`]: none) and the ALUs' issue capacity
    /// that µop takes, in eighths of a slot.
    exec: u32,
    exec_units: u16,
}

/// An instruction's issue: the cycle all its results are ready (at least
/// its dispatch plus one), the sum of its µops' issue cycles and their
/// count.
struct Issued {
    done: u64,
    issued_sum: u64,
    uop_count: u64,
}

/// Issues one instruction's µops `uops` (oldest first), see [`simulate`];
/// `ALU`: whether a rule counts ALU µops ([`Machine::counts_alu_uops`]).
/// Inlined: out of line its loop cost Zen 5's model 5-7 % more
/// instructions (session 56).
#[inline(always)]
fn issue<const BIND: bool, const ALU: bool>(
    g: &mut Graph,
    uops: Span,
    at: IssueStart,
    rules: &IssueRules,
    masks: &[u64],
    issuer: &mut Issuer,
) -> Issued {
    let IssueStart {
        dispatched: dc,
        mut slot,
        last_slot,
        mut blocked_until,
        bind,
        exec,
        exec_units,
    } = at;
    let Issuer {
        calendar,
        binder,
        port_load,
    } = issuer;
    let (alu_mask, alu_units, dependent_units, wakeups_cap) = (
        rules.alu_mask,
        rules.alu_units,
        rules.dependent_units,
        rules.wakeups_cap,
    );
    let mut done = dc + 1;
    let (mut issued_sum, mut uop_count) = (0u64, 0u64);
    for u in uops.iter() {
        let u = u as usize;
        let (ready, alu_input, fresh_input) = if ALU {
            g.ready_and_alu_arrivals(u, dc)
        } else {
            (g.ready_time(u, dc), None, None)
        };
        let ready = ready.max(blocked_until);
        blocked_until = 0;
        let uop = &g.uops[u];
        let (mask, occupancy, latency) = (
            masks[uop.ports as usize],
            uop.occupancy as u64,
            uop.latency as u64,
        );
        let mut t = ready;
        let mut mask = mask;
        let bind = BIND && bind && occupancy > 0 && mask != 0 && mask & rules.memory_ports == 0;
        if bind {
            mask = 1 << binder.choose(mask, slot);
        } else if rules.bound_at_dispatch && occupancy > 0 && mask.count_ones() > 1 {
            // Bound to one pipe on entering the scheduler, free or not.
            mask = 1 << least_used(mask, port_load);
        }
        let banks = uop.banks;
        let alu_op = ALU && occupancy > 0 && mask != 0 && mask & !alu_mask == 0;
        // When its last input from a one-cycle ALU µop arrives (read
        // with its ready time, for both rules below): after the cycle it
        // could first issue in, it takes the dependent cost; where the
        // µops issued as theirs arrive are counted, it is one of them
        // if it issues then.
        let alu_arrival = if alu_op && (wakeups_cap > 0 || dependent_units != 8) {
            alu_input
        } else {
            None
        };
        // A multi-cycle op takes more of the ALUs' capacity than its own
        // slot ([`ClassCost::issue_slots`]), a dependent one its extra too.
        let base = if exec == u as u32 { exec_units } else { 8 };
        let units = match alu_arrival {
            Some(a) if dependent_units != 8 && a > dc + 1 => base + dependent_units - 8,
            _ => base,
        };
        let woken_at = alu_arrival.filter(|_| wakeups_cap > 0);
        let mut stretched = 0u64;
        if mask != 0 && occupancy > 1 && !alu_op && banks == 0 {
            // A unit that is not pipelined (a divider) works whenever it
            // is free from the first cycle the µop can start in, around
            // the cycles older µops already hold, and the µop completes
            // that much later. The hardware gives the unit to whichever
            // ready µop is oldest, so an older one not ready yet waits
            // instead: the same work, the unit never idle while a µop is
            // ready. Holding one window of `occupancy` free cycles instead
            // left gaps no µop fitted in: nbody's `sqrtsd` beside a
            // `divsd` fed by it, 7 + 5 cycles of the divider a trip, came
            // out 19.5 cycles a trip on Zen 5 against 12.2 measured here
            // (13.0 now).
            loop {
                let free = calendar.free(mask, t, 1);
                if free != 0 {
                    let port = least_used(free, port_load);
                    let (mut c, mut got) = (t, 0);
                    while got < occupancy {
                        if calendar.free(1 << port, c, 1) != 0 {
                            calendar.take(port, c, 1);
                            got += 1;
                        }
                        c += 1;
                    }
                    stretched = c - t - occupancy;
                    port_load[port] += occupancy;
                    break;
                }
                t += 1;
            }
        } else if mask != 0 {
            loop {
                let mut free = calendar.free(mask, t, occupancy);
                if alu_op && free != 0 && calendar.capacity_taken(t) >= alu_units {
                    free = 0;
                }
                if woken_at == Some(t) && free != 0 && calendar.wakeups(t) >= wakeups_cap {
                    // Too many woken this cycle: a cycle later.
                    free = 0;
                }
                if banks != 0 && free != 0 && !calendar.banks_free(banks, t) {
                    free = 0;
                }
                if free != 0 {
                    if occupancy > 0 {
                        let port = least_used(free, port_load);
                        calendar.take(port, t, occupancy);
                        port_load[port] += occupancy;
                    }
                    if banks != 0 {
                        // After `take`: the cycle is held (the ring may
                        // have grown to reach it).
                        calendar.take_banks(banks, t);
                    }
                    break;
                }
                t += 1;
            }
        }
        if alu_op {
            calendar.spill_units(units, t, alu_units);
            if woken_at == Some(t) {
                calendar.take_wakeup(t);
            }
        }
        if alu_op && rules.fresh_alu_forward_slot && fresh_input.is_some_and(|a| t <= a + 1) {
            // Two slots in all, the second on the first of its own pipes
            // free from `t` on: a shift's on the three shift pipes (Zen 5
            // measured: `imul; shl; shl` 1.03 cycles a copy, `mov (%rbx);
            // shl; shl` 0.91; the second slot on any ALU said 0.75 and
            // 0.67, on the shift pipes 1.00 for both).
            let mut at = t;
            loop {
                let free = calendar.free(mask, at, 1);
                if free != 0 && calendar.capacity_taken(at) < alu_units {
                    let port = least_used(free, port_load);
                    calendar.take(port, at, 1);
                    calendar.spill_units(16u16.saturating_sub(units).max(1), at, alu_units);
                    port_load[port] += 1;
                    break;
                }
                at += 1;
            }
        }
        if bind {
            binder.bound(mask.trailing_zeros() as usize, t);
            // The instruction's next µop in its next slot, if it has one.
            slot = (slot + 1).min(last_slot);
        }
        let uop = &mut g.uops[u];
        uop.ready = ready;
        if ALU {
            // Fresh: no one-cycle ALU input arrived as its last input did.
            uop.fresh = alu_input != Some(ready);
        }
        uop.issued = t;
        uop.complete = t + latency + stretched;
        done = done.max(t + latency + stretched);
        issued_sum += t;
        uop_count += 1;
    }
    Issued {
        done,
        issued_sum,
        uop_count,
    }
}

/// The L1 banks a load reads: a bit per 4-byte word of a 64-byte line it
/// touches (see [`line_offset`]), none where the offset is unknown.
fn load_banks(a: &crate::classify::MemAddr) -> u16 {
    let Some(offset) = line_offset(a) else {
        return 0;
    };
    let first = offset >> 2;
    let words = ((offset & 3) + a.size.max(1)).div_ceil(4).min(16);
    (0..words).fold(0u16, |m, w| m | 1 << ((first + w) & 15))
}

/// The port of `mask` (not empty) with the least work issued to it so far,
/// the lowest on a tie.
fn least_used(mask: u64, load: &[u64; 64]) -> usize {
    let mut port = mask.trailing_zeros() as usize & 63;
    let mut least = load[port];
    let mut candidates = mask & (mask - 1);
    // Without branches on the loads (which port wins is data, and a
    // mispredicted compare cost more than the loop).
    while candidates != 0 {
        let p = candidates.trailing_zeros() as usize & 63;
        let l = load[p];
        let better = l < least;
        port = if better { p } else { port };
        least = if better { l } else { least };
        candidates &= candidates - 1;
    }
    port
}

/// [`chain_rate`] without running it. A block whose values carried from
/// one iteration to the next feed themselves runs at its heaviest cycle's
/// rate ([`carried_chains`]: at least a cycle an iteration, the ROB never
/// in the way). Otherwise (no input from an earlier iteration once the
/// iterations repeat, as in most blocks that are not loops, or inputs that
/// feed no cycle) the chains only add latency, so the rate is the chain
/// pass's dispatch alone — two iterations' slots and more per cycle,
/// packed the same way, from the same first iterations — as long as its
/// ROB of 64 iterations never fills. The packing repeats once a cycle's
/// used slots at an iteration boundary do: the rate is exact. `None` where
/// neither holds (then run [`chain_rate`]). Over python3.11's blocks on
/// every description the carried rates agree with the 300-iteration runs
/// better than the chain pass's early stop did (BENCHMARKS, session 35).
///
/// The ROB check: an instruction retires by its dispatch plus one plus the
/// longest latency path through the iterations built, or through any
/// number of them along carried inputs (`reach`), so the ROB
/// entry an instruction waits for (64 iterations back) is free if any 64
/// iterations dispatch over more than `reach + 2` cycles (a stall would
/// restart the packing at another phase, and the rate of some blocks
/// depends on it).
pub(crate) fn chain_rate_unsimulated(g: &mut Graph) -> Option<f64> {
    const ROB_ITERATIONS: usize = 64;
    let t = g.template?;
    let n = g.shapes.len();
    let u1 = g.uop_start[t + 1] as usize;
    let carried_reach = match carried_chains(g)? {
        Carried::Nothing => 0,
        Carried::Acyclic { longest } => longest,
        Carried::Rate(rate) => return Some(rate),
        Carried::Unknown => return None,
    };
    let width: u32 = 2 * g.costs.iter().map(|c| c.slots + 1).sum::<u32>();
    // The iterations built so far as they are (the first can differ), then
    // the template's.
    let first = |k: usize| if k < g.built { k } else { t } * n;
    if g.dyns[first(t)..first(t) + n].iter().all(|d| d.slots == 0) {
        return None;
    }
    let [masks, mut seen, mut path, mut cycles] = std::mem::take(&mut g.scratch);
    // Longest latency path through every µop up to the template's.
    path.clear();
    let mut reach = 0;
    for (i, u) in g.uops[..u1].iter().enumerate() {
        let from = u.deps.iter().map(|k| path[g.producer_of(i, k)]);
        let p = from.max().unwrap_or(0) + u.latency as u64;
        reach = reach.max(p);
        path.push(p);
    }
    reach = reach.max(carried_reach);
    // Cycle at each iteration boundary, and per used-slot count at a
    // boundary the iteration it was first seen at (+ 1; 0 not yet).
    cycles.clear();
    seen.clear();
    seen.resize(width as usize + 1, 0);
    let (mut cycle, mut used) = (0u64, 0u32);
    let mut rate = None;
    for k in 0usize.. {
        // The packing repeats from where its input does.
        let repeating = k > t.max(g.built);
        cycles.push(cycle);
        if repeating && seen[used as usize] > 0 {
            let k0 = seen[used as usize] as usize - 1;
            let (period, gain) = (k - k0, cycle - cycles[k0]);
            // Least dispatch over 64 iterations within the periodic part.
            let (laps, rest) = (ROB_ITERATIONS / period, ROB_ITERATIONS % period);
            let least = (k0..k)
                .map(|j| {
                    let (j2, wrap) = match j + rest {
                        j2 if j2 < k => (j2, 0),
                        j2 => (j2 - period, 1),
                    };
                    cycles[j2] + (laps + wrap) as u64 * gain - cycles[j]
                })
                .min()
                .unwrap_or(0);
            rate = (least >= reach + 3).then_some(gain as f64 / period as f64);
            break;
        }
        if repeating {
            seen[used as usize] = k as u64 + 1;
        }
        let f = first(k);
        for d in &g.dyns[f..f + n] {
            if used + d.slots > width {
                cycle += 1;
                used = 0;
            }
            used += d.slots;
        }
    }
    g.scratch = [masks, seen, path, cycles];
    rate
}

/// Cycles per iteration of the dependency chains alone: the same graph
/// with two iterations dispatched per cycle, a ROB of 64 iterations, every
/// port free and retirement unbounded. `None` without a steady state.
pub(crate) fn chain_rate(g: &mut Graph, iterations: usize, stop_early: bool) -> Option<f64> {
    let n = g.shapes.len();
    let width: u32 = 2 * g.costs.iter().map(|c| c.slots + 1).sum::<u32>();
    let rob_cap = 64 * n.max(1);
    let mut complete = std::mem::take(&mut g.scratch[2]);
    complete.clear();
    complete.resize(g.uops.len(), 0);
    let mut retire = std::mem::take(&mut g.scratch[3]);
    retire.clear();
    let mut steady = Steady::new(stop_early);
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
            for u in d.uops.iter() {
                let u = u as usize;
                let mut t = cycle + 1;
                for k in g.uops[u].deps.iter() {
                    t = t.max(complete[g.producer_of(u, k)]);
                }
                complete[u] = t + g.uops[u].latency as u64;
                done = done.max(complete[u]);
            }
            last_retire = last_retire.max(done);
            retire.push(last_retire);
        }
        if let Some(range) = steady.push(last_retire, 0, 0, 0) {
            measured = Some(range);
            break;
        }
    }
    let measured = steady.fallback(measured.unwrap_or(iterations / 2..iterations));
    g.scratch[2] = complete;
    g.scratch[3] = retire;
    if measured.is_empty() || measured.start == 0 || measured.end > steady.len() {
        return None;
    }
    let cycles = steady.end(measured.end - 1) - steady.end(measured.start - 1);
    Some(cycles as f64 / measured.len() as f64)
}
