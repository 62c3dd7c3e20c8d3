//! Machine descriptions: one TOML file per microarchitecture in
//! `models/machines/` (bundled into the binary), each figure with its source.

use crate::classify::{CLASSES, OPTIONAL_CLASSES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How one instruction class executes.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct ClassCost {
    /// Ports any one of which can execute the class's µop (empty: no
    /// execution µop). Shared: every modeled instruction's report names them.
    pub ports: std::sync::Arc<[String]>,
    /// Cycles from issue to result.
    pub latency: u32,
    /// Cycles the port stays busy (1 = pipelined; dividers more).
    #[serde(default = "one")]
    pub occupancy: u32,
    /// Fused-domain µops (dispatch slots).
    #[serde(default = "one")]
    pub uops: u32,
    /// The flags it reads are combined by a µop of their own first (on the
    /// same ports, one cycle), so flags reach the result a cycle later than
    /// the other inputs: Intel's cmovbe/setbe (CF and ZF live apart),
    /// measured on Golden Cove: flags to result 2 cycles, data 1.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub split_flags: bool,
    /// Renamed first in its cycle (the instructions before it wait for
    /// the next): Golden Cove's `vzeroupper`, measured one a cycle.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub starts_group: bool,
    /// The ALUs' issue capacity its execution µop takes, in slots (a slot:
    /// one ALU for a cycle; 1 where it takes its own ALU alone). Zen 5,
    /// measured (session 63): a 3-cycle integer op (imul, pdep) beside
    /// independent one-cycle ops costs about 1.5 of the six ALUs' slots,
    /// a three-component lea 3.
    #[serde(default = "one_slot", skip_serializing_if = "is_one_slot")]
    pub issue_slots: f64,
    /// Its µop waits for the old value of the register it writes, though
    /// the result does not depend on it (a false dependency): Zen 5's
    /// blsr, blsi and blsmsk, measured (session 64): four
    /// `blsr %rbx,%rax` 3.98 cycles a trip, into four registers 1.86.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reads_destination: bool,
    /// Its general-register inputs reach the result this many cycles
    /// after they are ready, its other inputs after `latency` (a first µop
    /// carries them across the register files; 0: all after `latency`).
    /// Zen 5's vpinsrd, measured (session 64): 2.33 cycles through the
    /// vector; through the general register a round trip with vmovd 9.0
    /// (5 here plus vmovd's modeled 4).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gpr_input_latency: u32,
    /// Its result reaches instructions of other classes this many cycles
    /// after its inputs, its own class's after `latency` (0: all after
    /// `latency`). Zen 5's floating-point adds, measured (session 65):
    /// two `vaddps` chained 2 cycles each, `vaddps; vpaddd`, `vaddps;
    /// vmulps` and `vaddps; vmaxps` 5, 6 and 5 a pair (3 + their own).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub other_class_latency: u32,
    /// Slots of [`Machine::fp_dispatch_width`] it takes where it touches
    /// the vector registers (0: one). Zen 5's compares into the integer
    /// flags take two (measured, session 65: `pxor; pxor; comisd` 0.67
    /// cycles a copy, `pxor; pxor; vpaddd` 0.50).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fp_dispatch_slots: u32,
    /// Besides its ports, it takes a slot of the FP store and transfer
    /// pipes (class `vec_store_data`'s ports, where the description has
    /// it): Zen 5's vptest, comisd, vpextrd and cvttsd2si, measured
    /// (session 65): two of each beside two `vmovd %xmm7,%eax` 2.0 cycles
    /// a copy, beside four vpaddd 1.5 (an FP pipe each too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transfer_slot: bool,
    pub source: String,
}

fn is_one_slot(x: &f64) -> bool {
    *x == 1.0
}

impl ClassCost {
    /// [`ClassCost::issue_slots`] in eighths of a slot.
    pub fn issue_eighths(&self) -> u16 {
        (self.issue_slots * 8.0).round().clamp(1.0, 255.0) as u16
    }
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

fn one() -> u32 {
    1
}

fn one_slot() -> f64 {
    1.0
}

/// A microarchitecture.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Machine {
    pub name: String,
    pub description: String,
    pub vendor: String,
    pub family: u32,
    pub models: Vec<u32>,
    /// CPU features (as [`crate::host::cpu_features`] names them) that
    /// identify this microarchitecture, all of them, among its vendor and
    /// family when the model number is not in [`Machine::models`]: a
    /// hypervisor may report a model number of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    pub dispatch_width: u32,
    pub retire_width: u32,
    pub rob_size: u32,
    pub decode_bytes: u32,
    /// Dense code dispatches fewer: a cycle's dispatch takes more than
    /// this many slots only when its instructions span at least
    /// [`Machine::dense_dispatch_bytes`] bytes (0: no such limit). Zen 5,
    /// measured: four eliminated moves a copy, 8-16 bytes, 0.51-0.66
    /// cycles; 18-32 bytes 0.48-0.50. Straight-line code only: a loop
    /// (a sequence ending in a taken branch) dispatches its dense code at
    /// the full width (measured on Zen 5, session 60; see
    /// [`Machine::op_cache_entry_ops`] for the loops that do not).
    #[serde(default)]
    pub dense_dispatch_width: u32,
    /// See [`Machine::dense_dispatch_width`].
    #[serde(default)]
    pub dense_dispatch_bytes: u32,
    /// [`Machine::decode_bytes`] a cycle on average: an instruction
    /// starting inside a cycle's window dispatches in that cycle, and the
    /// bytes it reaches beyond the window count against the next
    /// (without: a cycle takes whole instructions within its window).
    /// Zen 5, measured: four nops of 9-15 bytes a copy 0.56 / 0.62 / 0.68
    /// / 0.76 / 0.82 / 0.88 / 0.92 cycles (64 bytes a cycle; whole
    /// instructions: 0.67 / 0.67 / 0.80 / 0.80 / 1.00 / 1.00 / 1.00).
    #[serde(default)]
    pub decode_bytes_straddle: bool,
    /// 512-bit operations run as their narrower forms do (same class,
    /// ports and latency: Zen 5's full-width datapath) rather than in the
    /// `vec512_*` classes (see [`crate::classify::Shape::narrow_512`]),
    /// but for a 512-bit class split off later that the description
    /// names itself (Zen 5's `vec512_permute`: one cycle more).
    #[serde(default)]
    pub full_width_512: bool,
    /// The split-off classes ([`SPLIT_CLASSES`]) the description names
    /// itself, rather than costing them as the class they came from.
    #[serde(skip)]
    own_split_classes: Vec<&'static str>,
    pub macro_fusion: bool,
    pub move_elimination: bool,
    /// `movzx` from a low byte register into another one is eliminated
    /// at rename too (see [`crate::classify::Shape::zero_extend_byte`]).
    #[serde(default)]
    pub zero_extension_elimination: bool,
    /// The stack engine inserts a sync µop (one cycle, an ALU) before an
    /// instruction that reads `rsp` itself after a push, pop, call or ret
    /// (see the simulator's `StackRole`).
    #[serde(default)]
    pub stack_sync_uop: bool,
    /// A pop is renamed to the push it reads back (memory renaming) only
    /// if rsp was not rewritten in between other than by adding an
    /// immediate to it (by `mov %rbp,%rsp` or any `lea`, say): then the
    /// value comes through store forwarding.
    #[serde(default)]
    pub stack_rewrite_breaks_renaming: bool,
    /// `xchg` of two 32/64-bit registers (class `xchg_swap`) is done at
    /// rename: the two names swap, no µop executes and nothing waits.
    #[serde(default)]
    pub swap_elimination: bool,
    /// A nop rides in the dispatch slot of the instruction before it,
    /// unless that one already carries a fused partner.
    #[serde(default)]
    pub nop_fusion: bool,
    pub zero_idioms: bool,
    /// An eliminated register move and an add/sub/and/or/xor with a 32-bit
    /// immediate into the same register after it take one rename slot.
    /// Golden Cove, measured: `mov %esi,%edx; and $0xF000,%edx` 0.20
    /// cycles a copy (five ALUs), with `and $0xF,%edx` (8-bit immediate)
    /// 0.34, `add $0x5000` 0.20, `add $5` 0.35.
    #[serde(default)]
    pub move_imm32_fusion: bool,
    /// An eliminated general-register move and the register-only ALU op
    /// after it that reads and writes the move's destination take one
    /// rename slot. Zen 5, measured: `mov %r9d,%eax; add %r10d,%eax`
    /// 0.17 cycles a copy (six ALUs), with `add $0x5000`, `and $0xF` or
    /// 64-bit `add %r10,%rax` the same, three such pairs 0.50, `shl $2`
    /// 0.33, `imul` 0.35 (their pipes); into another register (`add
    /// %r10d,%ecx`) not.
    #[serde(default)]
    pub move_op_fusion: bool,
    /// A sign-extending load (`movsbl`, `movswl`, `movslq`) extends in an
    /// ALU µop of its own after the load. Zen 5, measured: a chain through
    /// `movsbl (%rbx),%eax; and $0,%eax; add %rax,%rbx` 7.00 cycles, with
    /// `mov` or `movzbl` 6.00; `movsbl` beside four `cmp` 0.84 cycles a
    /// copy (five ALU µops).
    #[serde(default)]
    pub sign_extension_uop: bool,
    /// `sbb r,r` (32/64-bit) waits for the carry flag only, not for the
    /// register (measured on Zen 4: `cmp; sbb %ecx,%ecx; and $2,%ecx`
    /// 0.75 cycles a copy, with `adc` or `sbb %cl,%cl` 2.00).
    #[serde(default)]
    pub sbb_idiom: bool,
    /// A µop is bound to one of its class's pipes when it enters the
    /// scheduler (the least used so far) and waits for that pipe even when
    /// another is free; otherwise it takes any free pipe when it issues.
    /// Zen 4, measured: `and $1,%edx; cmp $1,%edx; sbb %ecx,%ecx` 1.49
    /// cycles a copy (bound: 1.50; any free pipe: 1.00).
    #[serde(default)]
    pub ports_bound_at_dispatch: bool,
    /// An ALU µop that takes an input from a fresh one-cycle ALU µop (one
    /// no one-cycle ALU µop's result woke: ready when dispatched, or when
    /// a load's or an `imul`'s value came), and issues within a cycle of
    /// that input's arrival,
    /// costs two ALU slots. Zen 5, measured: `mov $1,%eax; add %r10d,%eax`
    /// 0.49 cycles a copy (three slots of six ALUs), 0.68 beside one
    /// `cmp`, 1.18 beside four; the producers first and their adds after
    /// them (two to twelve pairs) 1.5 to 1.2 slots an instruction; `mov
    /// (%rbx),%eax; and $0xc0,%eax; cmp $0x80,%eax` 0.49 (the cmp two
    /// slots); an add straight after a load or an imul one slot (`mov
    /// (%rbx),%eax; add %r10d,%eax` beside four `cmp` 0.84); the second
    /// of two dependent adds after an `imul` two (`imul $3,%ecx,%edx;
    /// add; add` 0.70, one add 0.43, three 0.94-1.08).
    #[serde(default)]
    pub fresh_alu_forward_slot: bool,
    /// The ALU issue capacity, in slots (a slot: one ALU for a cycle), an
    /// ALU µop takes when an input of it comes from a one-cycle ALU µop
    /// still in flight when it could first issue: 1 where the ALUs take one such
    /// µop each a cycle. Counted in eighths of a slot; a cycle's capacity
    /// is its ALUs, what a µop takes beyond it spills into the next.
    /// Zen 5, measured: twelve `add $1` chains 2.25 cycles a copy (1.125
    /// slots an add on six ALUs), eight 1.49, six chains beside six
    /// independent `cmp` 2.17, four beside eight 2.11.
    #[serde(default = "one_slot")]
    pub dependent_alu_slots: f64,
    /// ALU µops that issue in the cycle their one-cycle ALU input arrives:
    /// at most this many a cycle, the others a cycle later or more (0: no
    /// limit). Zen 5, measured: K loop-carried `add $1` chains, K =
    /// 3/4/5/6/7: 1.00 / 1.05 / 1.17 / 1.29 / 1.36 cycles a copy (four a
    /// cycle: 1.00 / 1.00 / 1.11 / 1.20 / 1.31; three: 1.00 / 1.14 / 1.25
    /// / 1.33 / 1.40).
    #[serde(default)]
    pub alu_wakeups_per_cycle: u8,
    /// µops other than loads and stores are bound to a port when renamed,
    /// by how many µops each port still has waiting (Intel; the rule, uiCA's
    /// for Ice Lake, is in `rename_binding`), and wait for that port even
    /// when another of their class is idle. Golden Cove, measured: four
    /// independent `add $1,%eXX` chains 1.19 cycles a copy, eight 1.71,
    /// `add $1,%eax; add $1,%ebx; cmp $9,%eax; cmp $9,%ebx` 1.26 (a free
    /// choice at issue: 1.00, 1.60, 1.00; bound: 1.10, 1.79, 1.24).
    #[serde(default)]
    pub ports_bound_at_rename: bool,
    /// `add/sub reg, imm` folded at rename (no execution latency).
    pub immediate_folding: bool,
    /// Loads from an address just stored to get the value at rename:
    /// `none`, `stack` (rsp/rbp-based only: AMD's memory file since Zen 2),
    /// `any` (Golden Cove, measured: except read-modify-writes with a
    /// register source), `wide-gpr` (Zen 4, measured: 32- and 64-bit
    /// general-register data at any address, read-modify-writes included;
    /// not 8/16-bit, not xmm, not a sign- or zero-extending load), or `gpr`
    /// (Zen 5, measured: general-register data of any size, sign-extending
    /// loads too, a cycle or two for a narrow or extended load; not xmm,
    /// not a zero-extending load).
    pub memory_renaming: String,
    pub store_forward_latency: u32,
    /// The same through an xmm/ymm register, where it differs (measured on
    /// Zen 4: 9 cycles for `movq %xmm0,8(%rbx); movq 8(%rbx),%xmm0`, 7 for
    /// general registers that are not renamed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_forward_latency_vector: Option<u32>,
    /// Extra cycles of a general-register load whose address has an index
    /// register scaled (×2, ×4, ×8) or with a displacement (measured on Zen
    /// 4: `mov (%rbx,%rax,8),%rax` 5 cycles a load, `mov 8(%rbx,%rax),%rax`
    /// 5, `mov (%rbx,%rax),%rax` and `mov 8(%rax),%rax` 4; an xmm load and
    /// the move back 9.05 or 10.05 plain depending on the program around
    /// it, 10.05 scaled: not modeled).
    #[serde(default)]
    pub complex_address_latency: u32,
    /// Instructions dispatched per cycle in a block that stores through an
    /// index register, where fewer than `dispatch_width` (0: no limit).
    /// Measured on Zen 4: three moves and `mov %rax,(%rsi,%rbx)` 1.00
    /// cycles, with `mov %rax,(%rsi)` 0.75; two moves and the indexed store
    /// 0.75, with the plain one 0.50 — four a cycle, as the decoders give
    /// when the op cache does not (the mechanism is a guess).
    #[serde(default)]
    pub indexed_store_width: u32,
    /// Cycles around a read-modify-write's chain through memory (its load
    /// forwarded from its own store of the iteration before, the
    /// operation, the store) where that is less than the parts in series
    /// (0: the parts). Measured on Zen 3: `addq $1,(%rax)` through a
    /// reloaded pointer 6.04 cycles, `orl $4,8(%rbx)` 6.21, `add
    /// %rax,8(%rbx)` 6.23, where a store and a load round trip alone take
    /// 6.26: the operation's cycle is hidden.
    #[serde(default)]
    pub rmw_round_trip: u32,
    /// Cycles from the retirement of a store to the issue of a later load
    /// that reads some of its bytes and others (a wider load, or one that
    /// starts elsewhere): store-to-load forwarding fails and the load waits
    /// for the store's commit (0: not modeled). Zen 4: 15, fitted to `movb
    /// %al,(%rbx); mov (%rbx),%rcx` at 19 cycles a pair (measured).
    #[serde(default)]
    pub store_forward_fail: u32,
    /// L1 loads conflict in banks: no 4-byte word of a line (a bank) serves
    /// more than two loads in one cycle. Measured on Golden Cove (Sapphire
    /// Rapids): `mov (%rbx),%rax` ×3 1.51 cycles a copy, at 0/64/128 1.51,
    /// at 0/8/16 or 0/64/136 1.00; 4-byte loads at 0/64/132 1.00, with the
    /// first two 8-byte (reading the word at 4 too) 1.51.
    #[serde(default)]
    pub load_bank_conflicts: bool,
    /// Cycles a store that crosses a 64-byte line takes to commit, alone (0:
    /// as any other). Golden Cove, measured: `movups %xmm0,0x38(%rbx)` or
    /// `mov %rax,0x3c(%rbx)` 2.00 cycles a copy, at 0x20 0.51; after a store
    /// to another line 2.99.
    #[serde(default)]
    pub split_store_commit: u32,
    /// Stores of a whole 64-byte line (zmm) commit alone in their cycle,
    /// as a line-splitting store does (for [`Machine::split_store_commit`]
    /// cycles). Zen 5, measured (session 65): four `vmovups %zmm2` to four
    /// lines 4.0 cycles a copy (ymm 2.0), a zmm store and a general one 2.0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub line_store_commits_alone: bool,
    /// Instructions touching the vector registers dispatched a cycle at
    /// most (each [`ClassCost::fp_dispatch_slots`]; zero idioms and
    /// eliminated moves too), beside [`Machine::dispatch_width`] (0: no
    /// limit of their own). Zen 5, measured (session 65): four `pxor`
    /// zero idioms 0.67 cycles a copy, six 1.00.
    #[serde(default)]
    pub fp_dispatch_width: u32,
    /// Stores committed to L1 per cycle when they write different cache lines.
    pub store_commit: u32,
    /// Stores committed per cycle at most, to one line (0: no limit).
    /// Golden Cove, measured: stores at 0, 8, 16 and 64 from one register
    /// 3.00 cycles a copy (two, then one, then the other line's), at 0, 8
    /// and 64 2.00, at 0, 8, 16, 24 and 64 3.00.
    #[serde(default)]
    pub store_commit_max: u32,
    /// Cycles a 1- or 2-byte store holds up store commit when its cache
    /// line was written, by an earlier group of stores to that line, fewer
    /// than [`Machine::narrow_store_window`] cycles before (0: never).
    /// Measured on Zen 3: `mov %cl,(%r8); mov %rdx,64(%r8)` 5.00 cycles a
    /// copy, with `mov %ecx,(%r8)` 2.00; three lines 6.00, four 7.00, five
    /// 5.00; a byte store and a wider one to the same line 1.00; Zen 4 does
    /// not do it (the same BHive blocks 2.5 there, 5.0 on Zen 3).
    #[serde(default)]
    pub narrow_store_stall: u32,
    /// See [`Machine::narrow_store_stall`].
    #[serde(default)]
    pub narrow_store_window: u32,
    /// Cycles the memory takes to write a 64-byte line that non-temporal
    /// stores filled (their write-combining buffer goes out whole), one
    /// line after another: a stream of such stores runs no faster (0: not
    /// modeled). Lines opened while two are still being written wait.
    #[serde(default)]
    pub nontemporal_line: u32,
    /// The same for a line non-temporal stores left partly written (the
    /// stream moved on): a partial write costs more.
    #[serde(default)]
    pub nontemporal_partial_line: u32,
    /// Lines non-temporal stores can be filling at once (write-combining
    /// buffers): one more sends the least recently written out partly
    /// written.
    #[serde(default)]
    pub nontemporal_buffers: u32,
    /// Latency of a `setcc` or `cmovcc` whose flags come from a logical
    /// operation (test/and/or/xor), from each of its inputs (0: its class's).
    /// Measured on Golden Cove (Sapphire Rapids): `test %eax,%eax; sete
    /// %bl` 2.00 cycles a copy (the chain through rbx), `cmp %eax,%edx;
    /// sete %bl` 1.00, `sub`/`add`/`inc` before it 1.00, `and`/`xor`
    /// 2.00, every condition alike, `cmovl %ecx,%ebx` 2.00; `test
    /// %ebx,%ebx; sete %bl` 3.00 (`cmp $0,%ebx` 2.00); the zero idiom
    /// `xor %eax,%eax` before it 2.00, `sub %eax,%eax` 1.00; the last
    /// writer of the flags decides (`and $0xff,%r8; add $1,%r9d; sete
    /// %bl` 1.09); with a `mov` between the two 1.58 (not modeled).
    #[serde(default)]
    pub logical_flags_latency: u32,
    /// Cycles a legacy SSE instruction writing an xmm register costs when
    /// the upper halves are dirty from a 256-bit VEX instruction without a
    /// `vzeroupper` between (0: no penalty). Golden Cove, measured:
    /// `addps %xmm1,%xmm3; vaddps %ymm1,%ymm2,%ymm4` 398.87 cycles a copy,
    /// with `vzeroupper` between 2.00, with two `addps` 391.67.
    #[serde(default)]
    pub sse_avx_transition: u32,
    /// Cycles a legacy SSE instruction writing an xmm register takes to
    /// merge its result into the old register's upper half, which it then
    /// waits for, when the upper halves are dirty (as
    /// [`Machine::sse_avx_transition`] finds them; 0: no merge). Zen 5,
    /// measured (session 65): with a `vinserti128` to ymm4 in the block,
    /// `movdqa (%r11),%xmm5; vpaddd %xmm5,%xmm5,%xmm5` 4.0 cycles a copy
    /// (0.50 without it), `movaps`, `pxor %xmm5,%xmm5`, `movq %rax,%xmm5`
    /// the same.
    #[serde(default)]
    pub sse_upper_merge: u32,
    pub mispredict_penalty: u32,
    /// Cycles of timer samples a mispredict leaves at the branch's target
    /// (the refetch: what the analyzer counts mispredicts by; 0: the
    /// penalty). Less than the penalty where part of the refill shows on
    /// the wrong path, before the branch resolves.
    #[serde(default)]
    pub refetch_cycles: u32,
    /// Cycles of samples a loop's mispredicted exit leaves inside the loop
    /// (the wait for the branch to resolve, and what the analyzer takes
    /// off a loop's cycles per entry) where the refill's refetch is
    /// counted past the exit (0: the penalty).
    #[serde(default)]
    pub loop_exit_cycles: u32,
    /// The same where the refill lands out of the loop's function (its
    /// exits return; 0: the analyzer's share of the penalty).
    #[serde(default)]
    pub unseen_loop_exit_cycles: u32,
    /// A mispredicted jump through a table over a mispredicted branch on a
    /// loaded byte, whole cost against whole cost: the jump resolves only
    /// after its index and its table entry are loaded, so the refetched
    /// path waits longer (`datasets/skid/mispredict_cost.c`). What the
    /// analyzer charges a dispatch loop's mispredicts beyond the penalty
    /// (1: the same as a branch's).
    #[serde(default = "one_slot", skip_serializing_if = "is_one_slot")]
    pub table_mispredict_ratio: f64,
    /// Cycles a trip of the collector's core-share probe loop (eight
    /// `add $1` over four registers, `dec; jne`) takes on an idle core,
    /// measured (0: the model's figure for the loop). The collector divides
    /// what the probe reads during a run by this to tell how much of its
    /// core the command had, so a model a few per cent fast on that one
    /// loop would read every run on the machine as sharing its core. Zen 5,
    /// measured (`dcpi calibrate`): 2.21 cycles a trip, the model 2.00.
    #[serde(default)]
    pub core_probe_cycles: f64,
    /// Taken branches the front end follows a cycle (0: no limit). The
    /// instructions after them are fetched in a later cycle, however wide
    /// dispatch is. Zen 4, measured (`add; cmp; jne` 1.01-1.08 cycles a
    /// trip; with one, two or three `jmp`s to the next line between 2.03,
    /// 3.20, 4.04 cycles; through `jmp *%rdx` the same as direct).
    #[serde(default)]
    pub taken_branches_per_cycle: u32,
    /// Cycles a call and its return add to the trip of a loop that calls
    /// a leaf, beyond the loop's own (0: not measured, no such cost): the
    /// front end's redirects to the callee and back through the return
    /// stack, which the taken-branch limit alone does not account for.
    /// Zen 5, measured (`datasets/models/call_return.c`): `call leaf; dec;
    /// jnz` with the leaf a bare `ret` 4.0 cycles a trip where the loop
    /// alone takes 1.0 (a `jmp` in its place 1.0, two 1.5); with the leaf
    /// msort's `compare` (six instructions, a 4-cycle chain) 4.0 too. A
    /// leaf called from a loop runs no faster than this, whatever its
    /// throughput bound says; the analyzer takes the share of it the
    /// leaf's own samples show ([`Machine::leaf_call_cycles`]). Not in the
    /// pipeline model's fetch: there (a wait after each `call`) the loop
    /// paths that run a leaf inline read slower than their samples say
    /// (session 51, BENCHMARKS.md).
    #[serde(default)]
    pub call_return_cycles: f64,
    /// Cycles of timer samples a call's round trip leaves on the leaf's
    /// own instructions, past its entry and before its return (samples on
    /// the entry go to the caller's call, those on the return address to
    /// the leaf's `ret`), where the round trip bounds the loop (0: all of
    /// `call_return_cycles`). What the analyzer takes for the fastest a
    /// leaf's own samples can say it ran. Zen 5, measured
    /// (`datasets/skid/call-return-zen5.md`): msort's `compare` called back
    /// to back, 4.0 cycles a trip, 57 % of the trip's samples on `cmp`
    /// through `sub`: 2.27-2.29 cycles a call.
    #[serde(default)]
    pub leaf_call_cycles: f64,
    /// Bytes of the aligned line the front end fetches from in a cycle (0:
    /// no such limit). An instruction whose bytes reach into a line other
    /// than the one being fetched waits for that line's cycle, so a loop
    /// whose trip touches two lines takes two cycles at least, however
    /// few its instructions. Zen 4, measured: a 27-byte loop of three
    /// branches 1.50 cycles a trip inside one 64-byte line, 2.00 once its
    /// last byte crosses into the next (rle_encode's inner loop).
    #[serde(default)]
    pub fetch_line_bytes: u32,
    /// Ops an op-cache entry holds (0: no such rule). Entries are filled
    /// in order from a taken branch's target, an entry belonging to the
    /// 64-byte line its first op starts in, and one fetch delivers
    /// [`Machine::op_cache_line_entries`] entries of one line. A loop
    /// whose first line (from its start to the line's end) needs more
    /// than one fetch runs from the op cache the slow way: every line of
    /// its trip costs a cycle, and each further fetch within a line two
    /// more (a line of k entries 2·⌈k/2⌉ − 1 cycles). A loop of one
    /// fetch's ops or fewer whose first line holds more than one entry and
    /// whose bytes reach into the next line takes a line a cycle too. Zen
    /// 5, measured (`datasets/models/loop_front_end.py`,
    /// `op_cache_lines.py`): 6 ops, 2 entries.
    #[serde(default)]
    pub op_cache_entry_ops: u32,
    /// Entries of one line a fetch delivers (see
    /// [`Machine::op_cache_entry_ops`]).
    #[serde(default)]
    pub op_cache_line_entries: u32,
    /// µops on the ALU pipes that can wait in the scheduler at once, from
    /// dispatch to a cycle after their issue (0: no limit); dispatch
    /// stops while it is full, so a long chain that many µops wait on
    /// bounds a loop below its ports. Zen 5, measured (session 60,
    /// `datasets/models/scheduler_capacity.py`): a chain of K dependent
    /// loads (or imuls) then 12-36 adds reading its end, 17 loops, mean
    /// error 25 % -> 5.5 % at 64.
    #[serde(default)]
    pub alu_scheduler_entries: u32,
    /// By class name (see [`Machine::class`]; changed through
    /// [`Machine::class_mut`], which keeps the per-class tables right).
    classes: BTreeMap<String, ClassCost>,
    /// Port names, computed once (the model asks for them on every block).
    #[serde(skip)]
    port_names: PortNames,
    /// Per class of [`CLASSES`], its cost and its ports as indices into
    /// [`Machine::ports`], computed once.
    #[serde(skip)]
    class_table: ClassTable,
}

/// A lazily filled cache of [`Machine::ports`]; equal whatever it holds, so
/// it never makes two descriptions differ. Only the names of ports are
/// cached: a calibrated copy that changes latencies keeps them right.
#[derive(Debug, Clone, Default)]
struct PortNames(std::sync::OnceLock<Vec<String>>);

impl PartialEq for PortNames {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A lazily filled cache of [`Machine::class_at`] and
/// [`Machine::class_ports`], emptied by [`Machine::class_mut`].
#[derive(Debug, Clone, Default)]
struct ClassTable(std::sync::OnceLock<ClassEntries>);

/// Per class of [`CLASSES`]: its cost, its ports (indices into
/// [`Machine::ports`]) and the index of that set among the machine's
/// distinct sets; and those sets, with their bit masks.
#[derive(Debug, Clone, Default)]
struct ClassEntries {
    classes: Vec<(ClassCost, Vec<usize>, u16)>,
    /// Per class: whether the description names it (else it is `alu`'s).
    named: Vec<bool>,
    sets: Vec<Vec<usize>>,
    masks: Vec<u64>,
    /// The ports of loads and stores.
    memory_mask: u64,
    /// The ports of the `alu` class.
    alu_mask: u64,
    /// Some class takes other than one slot of the ALUs' issue capacity
    /// ([`Machine::multi_slot_classes`], kept for
    /// [`Machine::counts_alu_uops`]: asked on every block modeled, where a
    /// description without such a class went through all its classes).
    multi_slot: bool,
}

impl PartialEq for ClassTable {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Classes split off a broader one, and that one: a description without
/// the first costs it as the second (see [`Machine::parse`]).
/// The class of a register swap a machine may do at rename
/// ([`Machine::swap_elimination`]).
pub(crate) const SWAP_CLASS: usize = crate::classify::class_id("xchg_swap");
/// `fxch`, swapped at rename where [`Machine::swap_elimination`] too.
pub(crate) const X87_SWAP_CLASS: usize = crate::classify::class_id("x87_swap");

/// Whether a class is a register swap ([`Machine::swap_elimination`]).
pub(crate) fn is_swap_class(id: u16) -> bool {
    matches!(usize::from(id), SWAP_CLASS | X87_SWAP_CLASS)
}

const SPLIT_CLASSES: &[(&str, &str)] = &[
    ("vec_shift", "vec_alu"),
    ("vec_byte_shuffle", "vec_shuffle"),
    ("vec_blendv", "vec_shuffle"),
    ("cmov_carry_zero", "cmov"),
    ("cmov_signed", "cmov"),
    ("setcc_carry_zero", "setcc"),
    ("high8_read", "alu"),
    ("lea_scaled", "lea"),
    ("lea3_scaled", "lea3"),
    ("sign_extend", "alu"),
    ("bswap", "alu"),
    ("bswap64", "alu"),
    ("shift_double", "shift"),
    ("vec_movmsk", "vec_alu"),
    ("vec_test", "vec_alu"),
    ("vec_p5_long", "vec_alu"),
    ("vec_pack", "vec_byte_shuffle"),
    ("fp_minmax", "fp_add"),
    ("fp_round", "fp_add"),
    ("fp_hadd", "fp_add"),
    ("sign_fill", "alu"),
    ("pause", "nop"),
    ("fence", "nop"),
    ("mask_op", "vec_alu"),
    ("vec_to_mask", "vec_alu"),
    ("fp_rcp", "fp_sqrt"),
    ("cvt_to_gpr", "cvt"),
    ("cvt_from_gpr", "cvt"),
    ("cvt_packed", "cvt"),
    ("rotate_carry", "alu"),
    ("rotate_carry_multi", "alu"),
    ("xchg_reg", "alu"),
    ("vec_blendv_vex", "vec_blendv"),
    ("gpr_to_mask", "mask_op"),
    ("vzeroupper", "nop"),
    ("vzeroall", "nop"),
    ("bit_test", "alu"),
    ("bit_field", "alu"),
    ("bmi_logic", "alu"),
    ("xadd_reg", "alu"),
    ("vec_compare", "vec_alu"),
    ("vec_align", "vec_byte_shuffle"),
    ("fp_compare", "fp_add"),
    ("fp_unpack", "vec_shuffle"),
    ("vec512_compare", "vec512_alu"),
    ("vec512_shuffle", "vec512_alu"),
    ("vec512_lane_cross", "vec512_alu"),
    ("vec512_permute", "vec512_lane_cross"),
    ("vec_permute", "vec_lane_cross"),
    ("vec_lane_insert", "vec_lane_cross"),
    ("vec_broadcast_gpr", "vec_lane_insert"),
    ("vec_aes", "fp_mul"),
    ("vec_clmul", "vec_imul"),
    ("vec_sha", "vec_imul"),
    ("vec_dot", "fma"),
    ("fp_div_single", "fp_div"),
    ("fp_sqrt_single", "fp_sqrt"),
    ("vec_sad", "vec_p5_long"),
    ("bit_scan", "bitcount"),
    ("bit_deposit", "bitcount"),
    ("xchg_swap", "xchg_reg"),
    ("bmi_bit", "bmi_logic"),
    ("fence_store", "fence"),
    ("fence_full", "fence"),
    ("vec_hadd", "vec_alu"),
    ("vec_abs", "vec_compare"),
    ("fp_dot", "fp_mul"),
    ("fp_dot_double", "fp_dot"),
    ("string_op", "alu"),
    ("rep_store", "alu"),
    ("rep_string", "alu"),
    ("x87_arith", "alu"),
    ("x87_div", "alu"),
    ("x87_sqrt", "alu"),
    ("x87_move", "alu"),
    ("x87_swap", "alu"),
    ("x87_load", "alu"),
    ("x87_load80", "alu"),
    ("x87_store", "alu"),
    ("x87_store80", "alu"),
    ("x87_compare", "alu"),
    ("x87_round", "alu"),
    ("x87_status", "alu"),
    ("x87_control", "alu"),
    ("x87_microcode", "alu"),
    ("x87_trig", "alu"),
    ("flags_control", "alu"),
    ("mxcsr", "alu"),
    ("read_tsc", "alu"),
    ("cpuid", "alu"),
    ("bmi_bit_mem", "alu"),
    ("vec_to_gpr", "gpr_vec"),
    ("vec_insert_gpr", "gpr_vec"),
    ("gpr_vec_legacy", "gpr_vec"),
    ("vec_extract_gpr", "vec_to_gpr"),
    ("cvt_widen", "cvt"),
    ("cvt_narrow", "cvt"),
    ("vec_mpsad", "vec_sad"),
];

/// Bundled descriptions: (name, TOML text).
pub const BUNDLED: &[(&str, &str)] = &[
    ("golden-cove", include_str!("../machines/golden-cove.toml")),
    ("zen5", include_str!("../machines/zen5.toml")),
    ("zen4", include_str!("../machines/zen4.toml")),
    ("zen3", include_str!("../machines/zen3.toml")),
    ("skylake", include_str!("../machines/skylake.toml")),
    ("generic", include_str!("../machines/generic.toml")),
];

#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error("no machine description '{0}'; known: golden-cove, zen5, zen4, zen3, skylake, generic (or a path to a .toml file)")]
    Unknown(String),
    #[error("machine description {name}: {detail}")]
    Invalid { name: String, detail: String },
}

impl Machine {
    /// Whether the renamer eliminates this register move (no execution, the
    /// result aliases the source).
    pub fn eliminates_move(&self, sh: &crate::classify::Shape) -> bool {
        (sh.movable && self.move_elimination)
            || (sh.zero_extend_byte && self.zero_extension_elimination)
            || (self.swap_elimination && is_swap_class(sh.class_id))
    }

    /// The class a rarely hot instruction's class (x87, string
    /// operations) is costed as where this description has no figures of
    /// its own for it: the model then says its cost is a guess.
    pub fn guessed_class(&self, class: &str) -> Option<&'static str> {
        let rare = class.starts_with("x87_")
            || matches!(
                class,
                "string_op"
                    | "rep_store"
                    | "rep_string"
                    | "flags_control"
                    | "mxcsr"
                    | "read_tsc"
                    | "cpuid"
            );
        if !rare || self.own_split_classes.contains(&class) {
            return None;
        }
        SPLIT_CLASSES
            .iter()
            .find(|(c, _)| *c == class)
            .map(|(_, like)| *like)
    }

    /// Parses and checks a description.
    pub fn parse(name: &str, text: &str) -> Result<Machine, MachineError> {
        let mut m: Machine = toml::from_str(text).map_err(|e| MachineError::Invalid {
            name: name.into(),
            detail: e.to_string(),
        })?;
        // Classes split off later from a broader one: a description written
        // before (a calibrated copy, or one that never measured the
        // difference) costs them as the class they came from.
        m.own_split_classes = SPLIT_CLASSES
            .iter()
            .map(|(class, _)| *class)
            .filter(|c| m.classes.contains_key(*c))
            .collect();
        for (class, like) in SPLIT_CLASSES {
            if !m.classes.contains_key(*class) {
                if let Some(cost) = m.classes.get(*like).cloned() {
                    m.classes.insert((*class).into(), cost);
                }
            }
        }
        for c in CLASSES {
            if !m.classes.contains_key(*c) && !OPTIONAL_CLASSES.contains(c) {
                return Err(MachineError::Invalid {
                    name: name.into(),
                    detail: format!("class '{c}' is missing"),
                });
            }
        }
        if !matches!(
            m.memory_renaming.as_str(),
            "none" | "stack" | "any" | "wide-gpr" | "gpr"
        ) {
            return Err(MachineError::Invalid {
                name: name.into(),
                detail: "memory_renaming is none, stack, any, wide-gpr or gpr".into(),
            });
        }
        if !(1.0..=4.0).contains(&m.dependent_alu_slots) {
            return Err(MachineError::Invalid {
                name: name.into(),
                detail: "dependent_alu_slots is between 1 and 4".into(),
            });
        }
        if m.ports().len() > 64 {
            return Err(MachineError::Invalid {
                name: name.into(),
                detail: "at most 64 ports (the model keeps port sets as bit masks)".into(),
            });
        }
        if m.dispatch_width == 0 || m.retire_width == 0 || m.rob_size == 0 {
            return Err(MachineError::Invalid {
                name: name.into(),
                detail: "widths and ROB size must be positive".into(),
            });
        }
        Ok(m)
    }

    /// A bundled description by name, or a TOML file by path.
    pub fn by_name(name: &str) -> Result<Machine, MachineError> {
        if let Some((_, text)) = BUNDLED.iter().find(|(n, _)| *n == name) {
            return Machine::parse(name, text);
        }
        if name.ends_with(".toml") {
            let text = std::fs::read_to_string(name).map_err(|e| MachineError::Invalid {
                name: name.into(),
                detail: e.to_string(),
            })?;
            return Machine::parse(name, &text);
        }
        Err(MachineError::Unknown(name.into()))
    }

    /// The description for a CPU identity: the one listing its model
    /// number, else the first of its vendor and family whose identifying
    /// features it has all of, else `generic`.
    pub fn for_cpu(vendor: &str, family: u32, model: u32, features: &[String]) -> Machine {
        let mut members: Vec<Machine> = BUNDLED
            .iter()
            .filter_map(|(name, text)| Machine::parse(name, text).ok())
            .filter(|m| m.vendor == vendor && m.family == family)
            .collect();
        let has_all = |m: &Machine| m.features.iter().all(|f| features.contains(f));
        let pick = members
            .iter()
            .position(|m| m.models.contains(&model))
            .or_else(|| {
                members
                    .iter()
                    .position(|m| !m.features.is_empty() && has_all(m))
            })
            .or_else(|| members.iter().position(|m| m.models.is_empty()));
        match pick {
            Some(k) => members.swap_remove(k),
            None => Machine::by_name("generic").expect("bundled generic description parses"),
        }
    }

    /// The description of the host this runs on.
    #[cfg(target_arch = "x86_64")]
    pub fn host() -> Machine {
        let h = crate::host::read();
        Machine::for_cpu(&h.cpu_vendor, h.cpu_family, h.cpu_model, &h.cpu_features)
    }

    /// `DCPI_MACHINE` (a bundled name or a TOML file) if set, else the
    /// host's: lets the benchmarks and probes rejudge one machine's saved
    /// measurements on another.
    #[cfg(target_arch = "x86_64")]
    pub fn from_env_or_host() -> Result<Machine, MachineError> {
        match std::env::var("DCPI_MACHINE") {
            Ok(name) => Machine::by_name(&name),
            Err(_) => Ok(Machine::host()),
        }
    }

    /// The description as TOML (for a calibrated copy).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// An instruction's load latency beyond its class's, for its address
    /// ([`Machine::complex_address_latency`]: general-register loads only).
    pub fn load_address_latency(&self, sh: &crate::classify::Shape) -> u32 {
        match &sh.load {
            Some(a)
                if !sh.vector_mem
                    && a.index != iced_x86::Register::None
                    && (a.scale > 1 || a.disp != 0) =>
            {
                self.complex_address_latency
            }
            _ => 0,
        }
    }

    /// Cycles of timer samples a call's round trip leaves on a leaf's own
    /// instructions ([`Machine::leaf_call_cycles`], else the whole round
    /// trip's `call_return_cycles`).
    pub fn leaf_call_cycles(&self) -> f64 {
        if self.leaf_call_cycles > 0.0 {
            self.leaf_call_cycles
        } else {
            self.call_return_cycles
        }
    }

    /// Cycles of samples one mispredict leaves at its target
    /// ([`Machine::refetch_cycles`], else the penalty).
    pub fn refetch_cycles(&self) -> u32 {
        match self.refetch_cycles {
            0 => self.mispredict_penalty,
            c => c,
        }
    }

    /// Store-to-load forwarding latency, through a vector register or not.
    pub fn forward_latency(&self, vector: bool) -> u32 {
        match (vector, self.store_forward_latency_vector) {
            (true, Some(v)) => v,
            _ => self.store_forward_latency,
        }
    }

    pub fn class(&self, name: &str) -> &ClassCost {
        self.classes
            .get(name)
            .or_else(|| self.classes.get("alu"))
            .expect("alu is required")
    }

    /// Whether a 512-bit operation of class `wide` runs as its narrower
    /// form (see [`Machine::full_width_512`]).
    pub fn narrows_512(&self, wide: &str) -> bool {
        self.full_width_512 && !self.own_split_classes.contains(&wide)
    }

    /// Whether the description names the class (others fall back to `alu`).
    pub fn has_class(&self, name: &str) -> bool {
        self.classes.contains_key(name)
    }

    /// Whether the description names the class at `class` in [`CLASSES`].
    pub fn names_class(&self, class: usize) -> bool {
        self.class_table()
            .named
            .get(class)
            .copied()
            .unwrap_or(false)
    }

    /// A class's cost, to change it (a calibrated copy's latencies).
    pub fn class_mut(&mut self, name: &str) -> Option<&mut ClassCost> {
        self.class_table = ClassTable::default();
        self.classes.get_mut(name)
    }

    /// Per class of [`CLASSES`]: its cost and its ports as indices into
    /// [`Machine::ports`] (the model asks on every block; a map of strings
    /// was a tenth of its time).
    fn class_table(&self) -> &ClassEntries {
        self.class_table.0.get_or_init(|| {
            let names = self.ports();
            let mut sets: Vec<Vec<usize>> = Vec::new();
            let classes: Vec<(ClassCost, Vec<usize>, u16)> = CLASSES
                .iter()
                .map(|c| {
                    let cost = self.class(c);
                    let ports: Vec<usize> = cost
                        .ports
                        .iter()
                        .map(|p| names.iter().position(|x| x == p).unwrap_or(0))
                        .collect();
                    let set = match sets.iter().position(|s| *s == ports) {
                        Some(k) => k,
                        None => {
                            sets.push(ports.clone());
                            sets.len() - 1
                        }
                    };
                    (cost.clone(), ports, set as u16)
                })
                .collect();
            let masks: Vec<u64> = sets
                .iter()
                .map(|s| s.iter().fold(0u64, |m, &p| m | 1u64 << p))
                .collect();
            let memory_mask = ["load", "vec_load", "store_addr", "store_data"]
                .iter()
                .map(|c| masks[classes[crate::classify::class_index(c)].2 as usize])
                .fold(0, |a, m| a | m);
            let alu_mask = masks[classes[crate::classify::class_index("alu")].2 as usize];
            ClassEntries {
                alu_mask,
                multi_slot: self.classes.values().any(|c| c.issue_slots != 1.0),
                classes,
                named: CLASSES.iter().map(|c| self.has_class(c)).collect(),
                sets,
                masks,
                memory_mask,
            }
        })
    }

    /// The cost of the class at `class` in [`CLASSES`] (`alu`'s past the end).
    pub fn class_at(&self, class: usize) -> &ClassCost {
        let table = &self.class_table().classes;
        &table.get(class).unwrap_or(&table[0]).0
    }

    /// The ports a class's µop may use, as indices into [`Machine::ports`],
    /// in the description's order; `class` is an index into [`CLASSES`].
    pub fn class_ports(&self, class: usize) -> &[usize] {
        self.class_table()
            .classes
            .get(class)
            .map_or(&[], |e| e.1.as_slice())
    }

    /// The index of a class's port set among [`Machine::port_sets`]
    /// (`alu`'s past the end of [`CLASSES`]).
    pub fn class_port_set(&self, class: usize) -> u16 {
        let table = &self.class_table().classes;
        table.get(class).unwrap_or(&table[0]).2
    }

    /// The distinct port sets of the classes, as indices into
    /// [`Machine::ports`]; [`Machine::port_set_masks`] has them as bit masks.
    pub fn port_sets(&self) -> &[Vec<usize>] {
        &self.class_table().sets
    }

    pub fn port_set_masks(&self) -> &[u64] {
        &self.class_table().masks
    }

    /// The ports loads and stores use, as a bit mask over [`Machine::ports`].
    pub fn memory_port_mask(&self) -> u64 {
        self.class_table().memory_mask
    }

    /// Cycles per iteration [`Machine::dense_dispatch_width`] holds a
    /// block of `slots` dispatch slots and `bytes` bytes to, where its
    /// code is dense throughout (its mean bytes a slot too few for a
    /// wider cycle to reach [`Machine::dense_dispatch_bytes`]); 0
    /// elsewhere. Mixed blocks may dispatch wide cycles where their long
    /// instructions gather: an estimate, not a bound.
    pub fn dense_dispatch_cycles(&self, slots: u32, bytes: u32) -> f64 {
        let w = self.dense_dispatch_width;
        if w == 0
            || slots == 0
            || bytes as u64 * (w as u64 + 1) >= self.dense_dispatch_bytes as u64 * slots as u64
        {
            return 0.0;
        }
        slots as f64 / w as f64
    }

    /// [`Machine::dependent_alu_slots`] in eighths of a slot.
    pub fn dependent_alu_eighths(&self) -> u16 {
        (self.dependent_alu_slots * 8.0).round() as u16
    }

    /// Whether a rule counts the µops issued to the ALUs
    /// ([`Machine::fresh_alu_forward_slot`],
    /// [`Machine::dependent_alu_slots`] or
    /// [`Machine::alu_wakeups_per_cycle`]): the model's issue then looks
    /// at each µop's ALU inputs.
    pub fn counts_alu_uops(&self) -> bool {
        self.fresh_alu_forward_slot
            || self.dependent_alu_eighths() != 8
            || self.alu_wakeups_per_cycle > 0
            || self.class_table().multi_slot
    }

    /// Whether a class's µop takes more (or less) than one slot of the
    /// ALUs' issue capacity ([`ClassCost::issue_slots`]).
    pub fn multi_slot_classes(&self) -> bool {
        self.classes.values().any(|c| c.issue_slots != 1.0)
    }

    /// The ports of the `alu` class, as a bit mask over [`Machine::ports`].
    pub fn alu_port_mask(&self) -> u64 {
        self.class_table().alu_mask
    }

    /// Every port name, sorted.
    pub fn ports(&self) -> &[String] {
        self.port_names.0.get_or_init(|| {
            let mut v: Vec<String> = Vec::new();
            for c in self.classes.values() {
                for p in c.ports.iter() {
                    if !v.contains(p) {
                        v.push(p.clone());
                    }
                }
            }
            v.sort();
            v
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_description_is_complete() {
        for (name, text) in BUNDLED {
            let m = Machine::parse(name, text).unwrap();
            assert_eq!(&m.name, name);
            for c in m.classes.values() {
                assert!(!c.source.is_empty());
                assert!(c.occupancy >= 1 && c.uops >= 1);
            }
        }
    }

    #[test]
    fn changing_a_class_refreshes_the_class_table() {
        let mut m = Machine::by_name("golden-cove").unwrap();
        let k = CLASSES.iter().position(|c| *c == "imul").unwrap();
        assert_eq!(m.class_at(k).latency, 3);
        m.class_mut("imul").unwrap().latency = 4;
        assert_eq!(m.class_at(k).latency, 4);
        assert_eq!(m.class("imul").latency, 4);
    }

    #[test]
    fn cpu_identity_picks_the_description() {
        let none: &[String] = &[];
        let pick = |v: &str, f: u32, m: u32| Machine::for_cpu(v, f, m, none).name;
        assert_eq!(pick("GenuineIntel", 6, 0xcf), "golden-cove");
        assert_eq!(pick("AuthenticAMD", 26, 2), "zen5");
        assert_eq!(pick("AuthenticAMD", 25, 0x61), "zen4");
        assert_eq!(pick("AuthenticAMD", 25, 0x01), "zen3");
        assert_eq!(pick("GenuineIntel", 6, 0x55), "skylake");
        assert_eq!(pick("CentaurHauls", 7, 1), "generic");
        assert!(Machine::by_name("nehalem").is_err());
    }

    #[test]
    fn a_model_number_of_the_hypervisors_falls_back_on_features() {
        let features = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // The Sapphire Rapids guest of session 18: model 0xa7, AMX.
        let spr = features(&["avx2", "avx512f", "serialize", "avx512_fp16", "amx_tile"]);
        assert_eq!(
            Machine::for_cpu("GenuineIntel", 6, 0xa7, &spr).name,
            "golden-cove"
        );
        // A listed model number wins over features.
        assert_eq!(
            Machine::for_cpu("GenuineIntel", 6, 0x55, &spr).name,
            "skylake"
        );
        let zen4 = features(&["avx2", "avx512f", "avx512_vbmi2"]);
        assert_eq!(
            Machine::for_cpu("AuthenticAMD", 25, 0x7f, &zen4).name,
            "zen4"
        );
        let zen3 = features(&["avx2"]);
        assert_eq!(
            Machine::for_cpu("AuthenticAMD", 25, 0x7f, &zen3).name,
            "zen3"
        );
        assert_eq!(
            Machine::for_cpu("GenuineIntel", 6, 0x01, &[]).name,
            "generic"
        );
    }
}
