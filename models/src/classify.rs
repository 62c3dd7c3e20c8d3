//! From a decoded instruction (iced-x86) to what the pipeline model needs:
//! its execution class, the registers it reads and writes, its load and
//! store, and the idioms that change how it executes (zero idioms, movable
//! moves, macro-fusible compares, stack-engine operations).

use iced_x86::{
    FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register,
};

/// Every class a machine description must define.
pub const CLASSES: &[&str] = &[
    "alu",
    "mov",
    "lea",
    "lea3",
    "lea_scaled",
    "lea3_scaled",
    "sign_extend",
    "shift",
    "rotate_cl",
    "cmov",
    "setcc",
    "cmov_carry_zero",
    "cmov_signed",
    "setcc_carry_zero",
    "high8_read",
    "bitcount",
    "imul",
    "mul_wide",
    "div32",
    "div64",
    "branch",
    "call",
    "ret",
    "nop",
    "locked",
    "load",
    "store_addr",
    "store_data",
    "vec_load",
    "vec_alu",
    "vec_mov",
    "vec_shuffle",
    "vec_byte_shuffle",
    "vec_blendv",
    "vec_shift",
    "vec_lane_cross",
    "vec_permute",
    "vec_lane_insert",
    "vec_imul",
    "vec_imul_narrow",
    "fp_add",
    "fp_mul",
    "fma",
    "fp_div",
    "fp_sqrt",
    "cvt",
    "gpr_vec",
    "vec512_alu",
    "vec512_fp",
    "load_forwarded",
    "vec_store_data",
    "mul_wide_high",
    "bswap",
    "bswap64",
    "shift_double",
    "vec_movmsk",
    "vec_test",
    "vec_p5_long",
    "vec_pack",
    "fp_minmax",
    "fp_round",
    "fp_hadd",
    "sign_fill",
    "pause",
    "fence",
    "mask_op",
    "vec_to_mask",
    "fp_rcp",
    "cvt_to_gpr",
    "cvt_from_gpr",
    "cvt_packed",
    "rotate_carry",
    "rotate_carry_multi",
    "xchg_reg",
    "xchg_swap",
    "vec_blendv_vex",
    "gpr_to_mask",
    "vzeroupper",
    "vzeroall",
    "bit_test",
    "bit_field",
    "bmi_logic",
    "xadd_reg",
    "vec_compare",
    "vec_align",
    "fp_compare",
    "fp_unpack",
    "vec512_compare",
    "vec512_shuffle",
    "vec512_lane_cross",
    "load_forwarded_each",
    "vec_aes",
    "vec_clmul",
    "vec_sha",
    "vec_dot",
    "fp_div_single",
    "fp_sqrt_single",
    "vec_sad",
    "vec512_permute",
    "bit_scan",
    "bit_deposit",
    "bmi_bit",
    "bmi_bit_mem",
    "fence_store",
    "fence_full",
    "vec_hadd",
    "vec_abs",
    "fp_dot",
    "fp_dot_double",
    "string_op",
    "rep_store",
    "rep_string",
    "x87_arith",
    "x87_div",
    "x87_sqrt",
    "x87_move",
    "x87_swap",
    "x87_load",
    "x87_load80",
    "x87_store",
    "x87_store80",
    "x87_compare",
    "x87_round",
    "x87_status",
    "x87_control",
    "x87_microcode",
    "x87_trig",
    "flags_control",
    "mxcsr",
    "read_tsc",
    "cpuid",
    "vec_to_gpr",
    "vec_insert_gpr",
    "gpr_vec_legacy",
    "vec_extract_gpr",
    "cvt_widen",
    "cvt_narrow",
    "vec_mpsad",
    "vec_broadcast_gpr",
];

/// Classes a description may leave out (the model then does without).
pub const OPTIONAL_CLASSES: &[&str] = &[
    "load_forwarded",
    "load_forwarded_each",
    "mul_wide_high",
    "vec_store_data",
];

/// A register as the dependency tracker sees it (full width; FLAGS = 1000).
pub type Reg = u16;
pub const FLAGS: Reg = 1000;
/// The overflow flag on its own, as adox reads and writes it: adcx
/// (carry) and adox (overflow) chains interleave without waiting for each
/// other (measured on Zen 5: two chains of two, 2.0 cycles a trip, not
/// 4.0). Only adox names it; [`split_overflow_flag`] makes the block's
/// other instructions that touch OF name it too.
pub const FLAGS_OF: Reg = 1001;
/// The flags iced reports that live in the integer flags register: not
/// the x87 status word's condition codes (C0-C3), which every x87
/// arithmetic instruction writes and no branch reads.
const CPU_FLAGS: u32 = !(iced_x86::RflagsBits::C0
    | iced_x86::RflagsBits::C1
    | iced_x86::RflagsBits::C2
    | iced_x86::RflagsBits::C3);

/// No register (iced's `Register::None`).
pub const NO_REG: Reg = Register::None as Reg;

/// A memory operand's address expression (for store-to-load forwarding).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemAddr {
    pub base: Register,
    pub index: Register,
    pub scale: u32,
    pub disp: u64,
    pub size: usize,
}

/// What an instruction does to the upper halves of the vector registers:
/// a VEX or EVEX instruction writing a ymm or zmm register leaves them
/// dirty, `vzeroupper`/`vzeroall` clears them, a legacy-encoded SSE
/// instruction writing an xmm register needs them saved (on Golden Cove a
/// state transition of ~400 cycles when they are dirty, measured).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UpperState {
    #[default]
    Untouched,
    Dirties,
    Clears,
    LegacySse,
}

/// An instruction's registers: a few, kept inline (the model shapes every
/// instruction of every block it is asked about).
pub type Regs = smallvec::SmallVec<[Reg; 6]>;

/// What the model needs of one instruction.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// Execution class (`nop` = no execution µop: pure loads, stores, eliminated moves).
    pub class: &'static str,
    /// `class`'s index in [`CLASSES`] (looked up once: the model asks for
    /// its cost on every block).
    pub class_id: u16,
    /// Registers read by the execution µop.
    pub reads: Regs,
    /// Registers read to form the address.
    pub addr_reads: Regs,
    /// Registers written.
    pub writes: Regs,
    pub load: Option<MemAddr>,
    pub store: Option<MemAddr>,
    /// push, pop, call or ret: its memory operand's displacement is not
    /// where it reads (the stack engine's offset is left out).
    pub stack_op: bool,
    pub vector_mem: bool,
    /// A non-temporal store ([`is_nontemporal_store`]).
    pub nontemporal: bool,
    /// xor r,r and friends: no execution, no input dependency.
    pub zero_idiom: bool,
    /// `sbb r,r` (32 or 64 bits): all ones or zero by the carry flag alone
    /// (machines with [`crate::machine::Machine::sbb_idiom`] do not wait
    /// for the register).
    pub flags_only: bool,
    /// A register-to-register move the renamer can eliminate.
    pub movable: bool,
    /// `movzx` of a low byte register into another register (Intel cores
    /// eliminate these at rename: measured on Golden Cove, 6 per cycle,
    /// zero latency; the same register or a 16-bit source is not).
    pub zero_extend_byte: bool,
    /// `add/sub reg, imm` (some cores fold these at rename).
    pub imm_add: bool,
    /// add/sub/and/or/xor of a register with a 32-bit immediate (the form
    /// that fuses with a move before it, see `Machine::move_imm32_fusion`).
    pub alu_imm32: bool,
    /// The size in bytes of the register operand written first (0: the
    /// first operand is not a register).
    pub dest_size: u8,
    /// A read-modify-write of memory whose other source is a register
    /// (Golden Cove does not rename these through memory: measured).
    pub rmw_reg_source: bool,
    /// A `nop` of any length (not a load or prefetch, which the model also
    /// gives the class "nop").
    pub is_nop: bool,
    /// A load that sign- or zero-extends (movsx, movsxd, movzx from
    /// memory): Zen 4 does not rename these through memory (measured).
    pub extending_load: bool,
    /// A load that zero-extends (movzx from memory).
    pub zero_extending_load: bool,
    /// cmp/test/add/sub/and/inc/dec that can fuse with a following jcc.
    pub fusible: bool,
    /// A branch the block's sequence takes (set by [`crate::schedule`]
    /// from the addresses around it, not by [`shape`]): what follows it
    /// is fetched from elsewhere (see
    /// [`crate::machine::Machine::taken_branches_per_cycle`]).
    pub taken: bool,
    /// A multiply whose product's high half (this register) comes after
    /// the low one where the description has the class `mul_wide_high`:
    /// one-operand 64-bit `mul`/`imul` (rdx) and `mulx` of either size
    /// (its first destination; Zen 5 measured, session 63: the low half 3
    /// cycles, the high 4, 1.5 a cycle, as `mul %rsi`). [`NO_REG`] for
    /// any other instruction (a plain register keeps `Shape` at 256 bytes:
    /// an `Option` made it 264 and the model 3-5 % slower).
    pub high_half: Reg,
    /// test/and/or/xor on general registers: flags from a logical
    /// operation (see [`crate::machine::Machine::logical_flags_latency`]).
    pub logical_flags: bool,
    pub cond_branch: bool,
    /// The class was guessed (mnemonic not in the tables).
    pub unknown: bool,
    /// For a 512-bit operation put in a `vec512_*` class: the class its
    /// narrower form has (a machine with
    /// [`crate::machine::Machine::full_width_512`] runs it so).
    pub narrow_512: Option<&'static str>,
    /// Where it is in memory, and its length in bytes (the front end
    /// fetches by lines: [`crate::machine::Machine::fetch_line_bytes`]).
    pub addr: u64,
    pub len: usize,
    /// What it does to the upper halves of the vector registers (for the
    /// SSE/AVX transitions of Intel cores).
    pub upper: UpperState,
    /// A general register set to another's value plus a constant: (the
    /// register, the source, the constant) for `lea disp(%base)`,
    /// `add`/`sub $imm`, `inc`/`dec` and register moves, so the model can
    /// tell where in a cache line an address through it falls.
    pub offset_of: Option<(Reg, Reg, i64)>,
}

fn is_vec(r: Register) -> bool {
    r.is_xmm() || r.is_ymm() || r.is_zmm()
}

fn full(r: Register) -> Reg {
    if r.is_gpr() || is_vec(r) {
        r.full_register() as Reg
    } else {
        r as Reg
    }
}

fn any_zmm(i: &Instruction) -> bool {
    (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Register && i.op_register(k).is_zmm())
}

fn any_vec(i: &Instruction) -> bool {
    (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Register && is_vec(i.op_register(k)))
}

fn any_gpr(i: &Instruction) -> bool {
    (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Register && i.op_register(k).is_gpr())
}

fn starts(m: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| m.starts_with(p))
}

/// The execution class of a vector/FP mnemonic (lower case, without the AVX `v`).
fn vector_class(m: &str, zmm: bool, ymm_dest: bool) -> Option<&'static str> {
    let fp = |c: &'static str| Some(if zmm { "vec512_fp" } else { c });
    // 512-bit forms: Golden Cove runs them on port 0 (with 1 fused) and 5,
    // and splits the classes by port there too (measured: four independent
    // `vpminub %zmm` 4.00 cycles a copy, p0 alone; `vpshufb`/`vpunpcklbw
    // %zmm` one a cycle, `vpermb`/`vpermd %zmm` one a cycle and 3 cycles,
    // p5 alone; `vpaddd %zmm` two a cycle).
    let int = |c: &'static str| {
        Some(match (zmm, c) {
            (false, c) => c,
            (true, "vec_compare") => "vec512_compare",
            (true, "vec_shuffle" | "vec_byte_shuffle" | "vec_align") => "vec512_shuffle",
            (true, "vec_permute") => "vec512_permute",
            (true, "vec_lane_cross" | "vec_lane_insert") => "vec512_lane_cross",
            (true, _) => "vec512_alu",
        })
    };
    // Packing, and widening into a ymm register (across its lanes): three
    // cycles on port 5 on Golden Cove (`packuswb` 3.00, `vpmovzxbw
    // %xmm0,%ymm0` 3.07, four independent 4.09; into an xmm 0.99),
    // measured; a byte shuffle where the description has no such class.
    if starts(m, &["packs", "packu"]) || (ymm_dest && starts(m, &["pmovzx", "pmovsx"])) {
        return int("vec_pack");
    }
    if starts(m, &["fmadd", "fmsub", "fnmadd", "fnmsub"]) {
        return fp("fma");
    }
    // Crypto and dot-product units: their own classes (Zen 5, measured),
    // at every width (vaesenc %zmm and vpdpbusd %zmm run as their xmm and
    // ymm forms there). A description without them costs them as the
    // multiplies whose pipes they share (machine.rs SPLIT_CLASSES).
    if starts(m, &["aesenc", "aesdec", "aesimc", "aeskeygenassist"]) {
        return Some("vec_aes");
    }
    if starts(m, &["pclmul"]) {
        return Some("vec_clmul");
    }
    if starts(m, &["sha1", "sha256"]) {
        return Some("vec_sha");
    }
    if starts(m, &["pdpbusd", "pdpwssd"]) {
        return Some("vec_dot");
    }
    let fp_suffix =
        m.ends_with("ps") || m.ends_with("pd") || m.ends_with("ss") || m.ends_with("sd");
    // Golden Cove adds in 2 cycles but compares, takes the larger or
    // smaller in 4, rounds in 8 and adds horizontally in 5, one every
    // two cycles (measured): their own classes, costed as `fp_add` where a
    // description has none.
    if starts(m, &["hadd", "hsub"]) && fp_suffix {
        return fp("fp_hadd");
    }
    if starts(m, &["round"]) && fp_suffix {
        return fp("fp_round");
    }
    if starts(m, &["max", "min", "cmp"]) && fp_suffix {
        return fp("fp_minmax");
    }
    if starts(m, &["add", "sub"]) && fp_suffix {
        return fp("fp_add");
    }
    if starts(m, &["mul"])
        && (m.ends_with("ps") || m.ends_with("pd") || m.ends_with("ss") || m.ends_with("sd"))
    {
        return fp("fp_mul");
    }
    // Single precision divides and square roots are quicker than double
    // (Zen 5, measured: divss/divps at any width 10 cycles, one every 2.5;
    // sqrtss/sqrtps 14, one every 4.5; the doubles 13 / 4 and 20 / 7.5).
    let single = m.ends_with("ps") || m.ends_with("ss");
    if starts(m, &["div"]) && (single || m.ends_with("pd") || m.ends_with("sd")) {
        return Some(if single { "fp_div_single" } else { "fp_div" });
    }
    // Reciprocal estimates are quick (Golden Cove: 4 cycles, one a cycle,
    // measured), square roots are not.
    if starts(m, &["rsqrt", "rcp"]) {
        return Some("fp_rcp");
    }
    // Dot products: several µops (Zen 5: vdpps 13 cycles, one every 4,
    // measured, session 63); `fp_mul` where a description has no class.
    if starts(m, &["dpps"]) {
        return Some("fp_dot");
    }
    if starts(m, &["dppd"]) {
        return Some("fp_dot_double");
    }
    if starts(m, &["sqrt"]) {
        return Some(if single { "fp_sqrt_single" } else { "fp_sqrt" });
    }
    // Compares into the flags: one a cycle on port 0 on Golden Cove
    // (measured), where fp_add has two ports.
    if starts(m, &["comis", "ucomis"]) {
        return Some("fp_compare");
    }
    // Floating-point unpacks: one a cycle on port 5 on Golden Cove (xmm
    // and ymm, measured), where the integer ones and shufps have two.
    if starts(m, &["unpck", "movhl", "movlh"]) {
        return int("fp_unpack");
    }
    // Conversions (Golden Cove, measured): to a general register 8 cycles
    // one a cycle, from one 4, packed between integers and floats 4 two a
    // cycle, scalar between precisions 5.
    if starts(m, &["cvt"]) {
        let si = |s: &str| m.contains(s);
        return Some(if si("2si") || si("2usi") {
            "cvt_to_gpr"
        } else if si("si2") || si("usi2") {
            "cvt_from_gpr"
        } else if m.ends_with("dq2ps") || m.ends_with("ps2dq") || m.ends_with("dq2pd") {
            "cvt_packed"
        } else {
            "cvt"
        });
    }
    if starts(m, &["pmulld", "pmullq"]) {
        return int("vec_imul");
    }
    if starts(m, &["pmul", "pmadd"]) {
        return int("vec_imul_narrow");
    }
    // Permutes within each 128-bit lane are shuffles (Zen 5 measured:
    // `vpermilps`/`vpermilpd` chains 2.00, as `vpshufb`).
    if starts(m, &["permil"]) {
        return int("vec_shuffle");
    }
    // Across lanes (Zen 5 measured, chains: `vpermq`/`vpermd`/`vpermps`/
    // `vpermpd` 4.00, `vperm2i128` and `vextract*128` 3.00, `vinsert*128`
    // and broadcasts 2.00): the full permutes and the inserts and
    // broadcasts are classes of their own, costed as the rest where a
    // description does not tell them apart.
    if starts(
        m,
        &[
            "perm2", "extractf", "extracti", "gather", "compress", "expand",
        ],
    ) {
        return int("vec_lane_cross");
    }
    if starts(m, &["broadcast", "pbroadcast", "insertf", "inserti"]) {
        return int("vec_lane_insert");
    }
    // valignd/valignq shift across lanes, vshufi64x2 and friends move
    // whole 128-bit lanes (Zen 5, measured: ymm chains 3.0 cycles as
    // vperm2i128, zmm 5.0 as vpermt2d; one every 0.50).
    if starts(m, &["alignd", "alignq", "shufi", "shuff"]) {
        return if zmm {
            Some("vec512_permute")
        } else {
            Some("vec_lane_cross")
        };
    }
    if starts(m, &["perm"]) {
        return int("vec_permute");
    }
    // Variable blends: the byte shuffles' two pipes on Zen 4, one cycle.
    if starts(m, &["pblendv", "blendv"]) {
        return int("vec_blendv");
    }
    // Byte alignment: one a cycle on Golden Cove (port 5: four
    // independent `palignr` 4.06, `vpalignr` ymm 4.02), where the other
    // byte shuffles have two ports.
    if starts(m, &["palignr"]) {
        return int("vec_align");
    }
    // Shuffles that move bytes (a byte table, a byte alignment or shift,
    // packing and extending): two pipes and two cycles on Zen 4 where the
    // dword, word and qword shuffles below have three pipes and one cycle
    // (measured).
    if starts(
        m,
        &[
            "pshufb", "palignr", "packs", "packu", "pmovzx", "pmovsx", "psrldq", "pslldq",
        ],
    ) {
        return int("vec_byte_shuffle");
    }
    if starts(
        m,
        &[
            "pshuf",
            "shuf",
            "unpck",
            "punpck",
            "insertps",
            "movhl",
            "movlh",
            "movddup",
            "movshdup",
            "movsldup",
            "pextr",
            "pinsr",
            "extractps",
        ],
    ) {
        return int("vec_shuffle");
    }
    // Vector to general register masks, tests and sums of differences:
    // one pipe on Golden Cove where `vec_alu` has three (measured).
    if starts(m, &["movmsk", "pmovmsk"]) {
        return int("vec_movmsk");
    }
    // Integer horizontal adds and subtracts: 4 cycles, one every two on
    // Zen 5 (measured, session 63); `vec_alu` where a description has
    // no class for them.
    if starts(m, &["phadd", "phsub"]) {
        return int("vec_hadd");
    }
    if starts(m, &["ptest", "testp"]) {
        return int("vec_test");
    }
    // Sums of differences and 64-bit compares: three cycles on port 5
    // (`psadbw` 3.05, `pcmpgtq` 3.04, four independent `vpcmpgtq` 4.04).
    // Zen 5 splits them (measured): the sums on the multiply pipes, 3
    // cycles; `pcmpgtq` two a cycle, 2 cycles, where the byte shuffles go.
    if starts(m, &["psadbw", "dbpsadbw"]) {
        return int("vec_sad");
    }
    // Eight sums of differences at once: 5 cycles, one every 2 on Zen 5
    // (measured, session 65); `vec_sad` where a description has no class.
    if starts(m, &["mpsadbw"]) {
        return int("vec_mpsad");
    }
    if starts(m, &["pcmpgtq"]) {
        return int("vec_p5_long");
    }
    // Integer compares, minimum/maximum, averages, absolute values, signs
    // and saturating sums: two a cycle on Golden Cove (port 0 or 1; four
    // independent `vpcmpeqb`/`vpminub`/`vpavgb`/`vpabsb`/`vpaddusb` ymm or
    // xmm 2.00 cycles a copy, `vpaddb`/`vpor` 1.33), measured.
    // Absolute values and signs: two a cycle on Zen 5 where compares take
    // four (measured, session 63): a class of its own there.
    if starts(m, &["pabs", "psign"]) {
        return int("vec_abs");
    }
    if starts(
        m,
        &[
            "pcmpeq", "pcmpgtb", "pcmpgtw", "pcmpgtd", "pmin", "pmax", "pavg", "padds", "paddus",
            "psubs", "psubus",
        ],
    ) {
        return int("vec_compare");
    }
    // Element shifts (the byte shifts are shuffles, above): two pipes on
    // Zen 3, measured, where `vec_alu` has four.
    // Rotates (AVX-512, any width) shift on the same pipes (Zen 5,
    // measured: twelve independent vprold %zmm 6.0 cycles a copy, as
    // vpslld).
    if starts(m, &["psll", "psrl", "psra", "prol", "pror"]) {
        return int("vec_shift");
    }
    if starts(
        m,
        &["mova", "movu", "movdq", "movs", "movnt", "movhp", "movlp"],
    ) && !starts(m, &["movsb", "movsw", "movsd_", "movsq"])
    {
        return int("vec_mov");
    }
    if starts(
        m,
        &[
            "padd", "psub", "pand", "por", "pxor", "pcmp", "pmax", "pmin", "pavg", "psll", "psrl",
            "psra", "pabs", "psign", "and", "or", "xor", "blend", "pblend", "pternlog", "kmov",
            "kand", "kor", "kxor", "knot",
        ],
    ) {
        return int("vec_alu");
    }
    None
}

fn mem_addr(i: &Instruction) -> MemAddr {
    MemAddr {
        base: i.memory_base(),
        index: i.memory_index(),
        scale: i.memory_index_scale(),
        disp: i.memory_displacement64(),
        size: i.memory_size().size(),
    }
}

/// A class name's index in [`CLASSES`], for the classes the model names
/// itself (`load`, `store_data`, ...): call it in a `const` (a name not
/// there then does not compile; at run time it is a linear search).
pub const fn class_id(name: &str) -> usize {
    const fn same(a: &[u8], b: &[u8]) -> bool {
        if a.len() != b.len() {
            return false;
        }
        let mut k = 0;
        while k < a.len() {
            if a[k] != b[k] {
                return false;
            }
            k += 1;
        }
        true
    }
    let mut k = 0;
    while k < CLASSES.len() {
        if same(CLASSES[k].as_bytes(), name.as_bytes()) {
            return k;
        }
        k += 1;
    }
    panic!("not a class of CLASSES")
}

/// A class name's index in [`CLASSES`]; an unknown name is `alu`'s, as
/// [`crate::machine::Machine::class`] takes it.
pub fn class_index(name: &str) -> usize {
    // An open-addressed table of the names by an FNV-1a hash: a block's
    // model asks for its classes every time (a sorted search of strings
    // cost 300 instructions a name).
    const SLOTS: usize = 256;
    fn hash(name: &str) -> usize {
        let h = name.bytes().fold(0x811c_9dc5u32, |h, b| {
            (h ^ b as u32).wrapping_mul(0x0100_0193)
        });
        h as usize % SLOTS
    }
    static TABLE: std::sync::OnceLock<Vec<Option<usize>>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = vec![None; SLOTS];
        for (k, c) in CLASSES.iter().enumerate() {
            let mut h = hash(c);
            while t[h].is_some() {
                h = (h + 1) % SLOTS;
            }
            t[h] = Some(k);
        }
        t
    });
    let mut h = hash(name);
    while let Some(k) = table[h] {
        if CLASSES[k] == name {
            return k;
        }
        h = (h + 1) % SLOTS;
    }
    0 // alu
}

/// A mnemonic's name in lower case (iced's names, formatted once: the
/// model shapes every instruction of every block it is asked about).
fn mnemonic_name(m: Mnemonic) -> &'static str {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        Mnemonic::values()
            .map(|m| format!("{m:?}").to_ascii_lowercase())
            .collect()
    });
    names.get(m as usize).map_or("", String::as_str)
}

/// adox reads and writes the overflow flag alone: [`FLAGS_OF`] in place
/// of [`FLAGS`].
#[cold]
#[inline(never)]
fn overflow_only(reads: &mut Regs, writes: &mut Regs) {
    for r in reads.iter_mut().chain(writes.iter_mut()) {
        if *r == FLAGS {
            *r = FLAGS_OF;
        }
    }
}

/// Makes an instruction that reads or writes the overflow flag (all but
/// adox, which names nothing else) name [`FLAGS_OF`] as well as
/// [`FLAGS`], so an adox after it waits for it and a `jo` after an adox
/// waits for the adox.
pub fn name_overflow_flag(i: &Instruction, sh: &mut Shape) {
    use iced_x86::RflagsBits;
    if i.mnemonic() == Mnemonic::Adox {
        return;
    }
    if i.rflags_read() & RflagsBits::OF != 0 && !sh.reads.contains(&FLAGS_OF) {
        sh.reads.push(FLAGS_OF);
    }
    let written = i.rflags_written() | i.rflags_cleared() | i.rflags_set();
    if written & RflagsBits::OF != 0 && !sh.writes.contains(&FLAGS_OF) {
        sh.writes.push(FLAGS_OF);
    }
}

/// [`name_overflow_flag`] over a block that holds an adox (others keep
/// one flags register: nothing in them waits on OF alone).
#[inline]
pub fn split_overflow_flag(block: &[crate::block::Decoded], shapes: &mut [Shape]) {
    if block.iter().any(|d| d.instr.mnemonic() == Mnemonic::Adox) {
        name_overflow_flags(block, shapes);
    }
}

#[cold]
#[inline(never)]
fn name_overflow_flags(block: &[crate::block::Decoded], shapes: &mut [Shape]) {
    for (d, sh) in block.iter().zip(shapes) {
        name_overflow_flag(&d.instr, sh);
    }
}

/// The class of an instruction the main tables leave out, or `None`:
/// string operations (`rep` or not) and the x87 floating point unit.
/// Rarely hot, so looked up only where the tables found nothing.
#[cold]
#[inline(never)]
fn rare_class(i: &Instruction, m: &str) -> Option<&'static str> {
    if (0..i.op_count()).any(|k| is_string_operand(i.op_kind(k))) {
        let rep = i.has_rep_prefix() || i.has_repe_prefix() || i.has_repne_prefix();
        return Some(match i.mnemonic() {
            _ if !rep => "string_op",
            Mnemonic::Stosb | Mnemonic::Stosw | Mnemonic::Stosd | Mnemonic::Stosq => "rep_store",
            _ => "rep_string",
        });
    }
    match i.mnemonic() {
        // mov %rbp,%rsp; pop %rbp: Zen 5 loops of `push %rbp; mov
        // %rsp,%rbp; leave` 2.00 cycles a trip, as modeled (session 64).
        // sahf four a cycle, lahf one a cycle into the same ah (measured
        // on Zen 5 too: a merge chain the model sees through rax).
        Mnemonic::Leave | Mnemonic::Sahf | Mnemonic::Lahf => return Some("alu"),
        Mnemonic::Wait => return Some("nop"),
        Mnemonic::Cld
        | Mnemonic::Std
        | Mnemonic::Pushf
        | Mnemonic::Pushfq
        | Mnemonic::Popf
        | Mnemonic::Popfq => return Some("flags_control"),
        Mnemonic::Stmxcsr | Mnemonic::Ldmxcsr | Mnemonic::Vstmxcsr | Mnemonic::Vldmxcsr => {
            return Some("mxcsr")
        }
        Mnemonic::Rdtsc | Mnemonic::Rdtscp => return Some("read_tsc"),
        Mnemonic::Cpuid => return Some("cpuid"),
        _ => {}
    }
    if !m.starts_with('f')
        || matches!(
            i.mnemonic(),
            Mnemonic::Fxsave
                | Mnemonic::Fxsave64
                | Mnemonic::Fxrstor
                | Mnemonic::Fxrstor64
                | Mnemonic::Femms
        )
    {
        return None;
    }
    let mem = (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Memory);
    let wide_mem = mem && i.memory_size().size() == 10;
    Some(match m {
        "fxch" => "x87_swap",
        "fsqrt" => "x87_sqrt",
        "fdiv" | "fdivp" | "fdivr" | "fdivrp" | "fidiv" | "fidivr" => "x87_div",
        "fadd" | "faddp" | "fsub" | "fsubp" | "fsubr" | "fsubrp" | "fmul" | "fmulp" | "fiadd"
        | "fisub" | "fisubr" | "fimul" => "x87_arith",
        "fcom" | "fcomp" | "fcompp" | "fucom" | "fucomp" | "fucompp" | "fcomi" | "fcomip"
        | "fucomi" | "fucomip" | "ficom" | "ficomp" | "ftst" | "fxam" => "x87_compare",
        "fld" | "fild" | "fbld" if wide_mem => "x87_load80",
        "fld" | "fild" | "fbld" if mem => "x87_load",
        "fst" | "fstp" | "fist" | "fistp" | "fisttp" | "fbstp" if wide_mem => "x87_store80",
        "fst" | "fstp" | "fist" | "fistp" | "fisttp" | "fbstp" if mem => "x87_store",
        "frndint" => "x87_round",
        "fnstsw" | "fstsw" => "x87_status",
        "fsin" | "fcos" | "fsincos" | "fptan" | "fpatan" => "x87_trig",
        "f2xm1" | "fyl2x" | "fyl2xp1" | "fscale" | "fxtract" | "fprem" | "fprem1" => {
            "x87_microcode"
        }
        "fnstcw" | "fstcw" | "fldcw" | "fnclex" | "fclex" | "fninit" | "finit" | "fnstenv"
        | "fstenv" | "fldenv" | "fnsave" | "fsave" | "frstor" => "x87_control",
        _ if m.starts_with("fcmov") => "x87_move",
        "fld" | "fst" | "fstp" | "fld1" | "fldz" | "fldpi" | "fldl2e" | "fldl2t" | "fldlg2"
        | "fldln2" | "fabs" | "fchs" | "ffree" | "ffreep" | "fnop" | "fdecstp" | "fincstp" => {
            "x87_move"
        }
        _ => return None,
    })
}

/// An implicit string-instruction memory operand (`movs`, `stos`, ...).
fn is_string_operand(k: OpKind) -> bool {
    matches!(
        k,
        OpKind::MemorySegSI
            | OpKind::MemorySegESI
            | OpKind::MemorySegRSI
            | OpKind::MemorySegDI
            | OpKind::MemorySegEDI
            | OpKind::MemorySegRDI
            | OpKind::MemoryESDI
            | OpKind::MemoryESEDI
            | OpKind::MemoryESRDI
    )
}

/// A move between general and vector registers: `vec_to_gpr` into a
/// general register (Zen 5: two a cycle, measured, session 63: vmovd,
/// vmovq, vpextrd, vpextrq 0.50 cycles each), `gpr_vec` the other way
/// (one a cycle), `gpr_vec_legacy` for its SSE encoding (Zen 5: two
/// cycles slower than the VEX one, measured, session 65: a `movd` round
/// trip 9.0 cycles, `vmovd` 7.0).
fn gpr_vec_direction(i: &Instruction) -> &'static str {
    if i.op_count() > 0 && i.op0_kind() == OpKind::Register && i.op0_register().is_gpr() {
        "vec_to_gpr"
    } else if i.encoding() == iced_x86::EncodingKind::Legacy {
        "gpr_vec_legacy"
    } else {
        "gpr_vec"
    }
}

/// Bytes of operand `k`: a register's, or the memory operand's.
fn operand_bytes(i: &Instruction, k: u32) -> usize {
    match i.op_kind(k) {
        OpKind::Register => i.op_register(k).size(),
        OpKind::Memory => i.memory_size().size(),
        _ => 0,
    }
}

/// A conversion whose result and source differ in width with one of them
/// 256 bits or more (`vcvtps2pd %xmm0,%ymm0`, `vcvtpd2ps %ymm0,%xmm0`): its
/// elements cross the 128-bit lanes (Zen 5, measured, session 65: 5 and 6
/// cycles where the xmm forms take 3).
fn cvt_across_lanes(i: &Instruction) -> bool {
    if i.op0_kind() != OpKind::Register {
        return false;
    }
    let (dest, src) = (operand_bytes(i, 0), cvt_source_bytes(i));
    dest != src && dest.max(src) >= 32 && dest.min(src) > 0
}

/// Bytes of a conversion's source: its last register or memory operand
/// after the destination (`vcvtps2ph $0,%ymm0,%xmm1` ends with its
/// immediate in iced's order).
fn cvt_source_bytes(i: &Instruction) -> usize {
    (1..i.op_count())
        .rev()
        .map(|k| operand_bytes(i, k))
        .find(|&b| b > 0)
        .unwrap_or(0)
}

/// Of [`cvt_across_lanes`] conversions, whether the result is the wider.
fn cvt_widens(i: &Instruction) -> bool {
    operand_bytes(i, 0) > cvt_source_bytes(i)
}

/// Analyzes one instruction.
pub fn shape(i: &Instruction, info: &mut InstructionInfoFactory) -> Shape {
    let m = mnemonic_name(i.mnemonic());
    let ii = info.info(i);
    let stack_op = matches!(
        i.mnemonic(),
        Mnemonic::Push | Mnemonic::Pop | Mnemonic::Call | Mnemonic::Ret
    );
    let base = i.memory_base();
    let index = i.memory_index();
    let has_mem = (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Memory);
    let mut reads = Regs::new();
    let mut addr_reads = Regs::new();
    let mut writes = Regs::new();
    // Vector registers written, by width: for the SSE/AVX transitions.
    let (mut writes_xmm, mut writes_wide) = (false, false);
    for u in ii.used_registers() {
        let r = u.register();
        if matches!(
            u.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        ) {
            writes_xmm |= r.is_xmm();
            writes_wide |= r.is_ymm() || r.is_zmm();
        }
        if stack_op && r.full_register() == Register::RSP {
            continue; // the stack engine tracks rsp outside the out-of-order core
        }
        if r == Register::RIP || r == Register::None {
            continue;
        }
        let reg = full(r);
        let is_addr =
            has_mem && (r == base || r == index) && !matches!(i.mnemonic(), Mnemonic::Lea);
        match u.access() {
            OpAccess::Read | OpAccess::CondRead => {
                if is_addr {
                    addr_reads.push(reg)
                } else {
                    reads.push(reg)
                }
            }
            OpAccess::Write => writes.push(reg),
            // A register written or not (cmov's destination) keeps its
            // old value otherwise: the result depends on it.
            OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                if !reads.contains(&reg) {
                    reads.push(reg);
                }
                writes.push(reg);
            }
            _ => {}
        }
    }
    if i.rflags_read() & CPU_FLAGS != 0 {
        reads.push(FLAGS);
    }
    if (i.rflags_written() | i.rflags_cleared() | i.rflags_set()) & CPU_FLAGS != 0 {
        writes.push(FLAGS);
    }
    if i.mnemonic() == Mnemonic::Adox {
        overflow_only(&mut reads, &mut writes);
    }
    // Partial writes of 8/16-bit registers merge with the old value.
    for k in 0..i.op_count() {
        if i.op_kind(k) == OpKind::Register {
            let r = i.op_register(k);
            if r.is_gpr8() || r.is_gpr16() {
                let f = full(r);
                if writes.contains(&f) && !reads.contains(&f) {
                    reads.push(f);
                }
            }
        }
    }
    let mut load = None;
    let mut store = None;
    for u in ii.used_memory() {
        match u.access() {
            OpAccess::Read | OpAccess::CondRead => load = Some(mem_addr(i)),
            OpAccess::Write | OpAccess::CondWrite => store = Some(mem_addr(i)),
            OpAccess::ReadWrite | OpAccess::ReadCondWrite => {
                load = Some(mem_addr(i));
                store = Some(mem_addr(i));
            }
            _ => {}
        }
    }
    if matches!(i.mnemonic(), Mnemonic::Lea | Mnemonic::Nop) {
        load = None;
        store = None;
    }
    // A prefetch reads its line through a load port (Golden Cove: three a
    // cycle, `prefetcht0` 0.33 cycles a copy, four 1.36), though it
    // returns nothing.
    if matches!(
        i.mnemonic(),
        Mnemonic::Prefetcht0
            | Mnemonic::Prefetcht1
            | Mnemonic::Prefetcht2
            | Mnemonic::Prefetchnta
            | Mnemonic::Prefetchw
    ) {
        load = Some(mem_addr(i));
    }
    let vector_mem = has_mem && (i.memory_size().size() >= 16 || any_vec(i));
    let same_regs = i.op_count() >= 2
        && i.op0_kind() == OpKind::Register
        && i.op1_kind() == OpKind::Register
        && i.op0_register() == i.op1_register()
        && (i.op_count() == 2
            || (i.op_count() == 3
                && i.op2_kind() == OpKind::Register
                && i.op2_register() == i.op1_register()));
    let zero_idiom = same_regs
        && matches!(
            i.mnemonic(),
            Mnemonic::Xor
                | Mnemonic::Sub
                | Mnemonic::Pxor
                | Mnemonic::Vpxor
                | Mnemonic::Xorps
                | Mnemonic::Vxorps
                | Mnemonic::Xorpd
                | Mnemonic::Vxorpd
                | Mnemonic::Psubd
                | Mnemonic::Vpsubd
                | Mnemonic::Psubq
                | Mnemonic::Vpsubq
                | Mnemonic::Vpxord
                | Mnemonic::Vpxorq
        );
    let flags_only = same_regs
        && i.mnemonic() == Mnemonic::Sbb
        && i.op_count() == 2
        && i.op0_register().size() >= 4;
    let reg_reg =
        i.op_count() == 2 && i.op0_kind() == OpKind::Register && i.op1_kind() == OpKind::Register;
    let movable = reg_reg
        && match i.mnemonic() {
            Mnemonic::Mov => i.op0_register().size() >= 4 && i.op1_register().size() >= 4,
            Mnemonic::Movaps
            | Mnemonic::Movapd
            | Mnemonic::Movups
            | Mnemonic::Movdqa
            | Mnemonic::Movdqu
            | Mnemonic::Vmovaps
            | Mnemonic::Vmovapd
            | Mnemonic::Vmovups
            | Mnemonic::Vmovdqa
            | Mnemonic::Vmovdqu => true,
            _ => false,
        };
    let is_nop = i.mnemonic() == Mnemonic::Nop;
    let extending_load = load.is_some()
        && matches!(
            i.mnemonic(),
            Mnemonic::Movsx | Mnemonic::Movsxd | Mnemonic::Movzx
        );
    let zero_extending_load = load.is_some() && i.mnemonic() == Mnemonic::Movzx;
    let zero_extend_byte = reg_reg
        && i.mnemonic() == Mnemonic::Movzx
        && i.op1_register().size() == 1
        && !matches!(
            i.op1_register(),
            Register::AH | Register::BH | Register::CH | Register::DH
        )
        && i.op0_register().full_register() != i.op1_register().full_register();
    // Measured on Golden Cove: 64-bit add/sub reg, imm, inc/dec reg and lea
    // disp(base) are folded at rename (`inc %rax` chain 0.18 cycles, `dec
    // %rax` 0.18); 32-bit forms are not (`inc %eax` 1.04).
    // Only constants of 11 bits fold (measured: six `add $0x3ff,%rax` 3.15
    // cycles a copy, `add $0x400` 6.01; `sub $0x3ff` 3.14, `sub $0x400`
    // 6.01; `lea -0x400(%rax),%rax` 3.15, `lea -0x401` 6.01).
    let foldable = |v: i64| (-1024..1024).contains(&v);
    let lea_base_disp = i.mnemonic() == Mnemonic::Lea
        && i.op0_register().size() == 8
        && i.memory_index() == Register::None
        && i.memory_base().is_gpr64()
        && foldable(i.memory_displacement64() as i64);
    let imm_add = lea_base_disp
        || (matches!(i.mnemonic(), Mnemonic::Inc | Mnemonic::Dec)
            && i.op0_kind() == OpKind::Register
            && i.op0_register().size() == 8)
        || matches!(i.mnemonic(), Mnemonic::Add | Mnemonic::Sub)
            && i.op0_kind() == OpKind::Register
            && i.op0_register().size() == 8
            && is_immediate(i.op1_kind())
            && foldable(i.immediate(1) as i64);
    let alu_imm32 = matches!(
        i.mnemonic(),
        Mnemonic::Add | Mnemonic::Sub | Mnemonic::And | Mnemonic::Or | Mnemonic::Xor
    ) && i.op0_kind() == OpKind::Register
        && matches!(i.op1_kind(), OpKind::Immediate32 | OpKind::Immediate32to64);
    let wide_mul64 = matches!(i.mnemonic(), Mnemonic::Mul | Mnemonic::Imul)
        && i.op_count() == 1
        && (if has_mem {
            i.memory_size().size() == 8
        } else {
            i.op0_register().size() == 8
        });
    let high_half = if wide_mul64 {
        Register::RDX as Reg
    } else if i.mnemonic() == Mnemonic::Mulx {
        full(i.op0_register())
    } else {
        NO_REG
    };
    let logical_flags = matches!(
        i.mnemonic(),
        Mnemonic::Test | Mnemonic::And | Mnemonic::Or | Mnemonic::Xor
    );
    let fusible = matches!(
        i.mnemonic(),
        Mnemonic::Cmp
            | Mnemonic::Test
            | Mnemonic::Add
            | Mnemonic::Sub
            | Mnemonic::And
            | Mnemonic::Inc
            | Mnemonic::Dec
    ) && !(has_mem
        && (is_immediate(i.op1_kind()) || i.op1_kind() == OpKind::Immediate16));
    let cond_branch = i.flow_control() == FlowControl::ConditionalBranch;
    let rmw_reg_source = load.is_some()
        && store.is_some()
        && (0..i.op_count()).any(|k| i.op_kind(k) == OpKind::Register);

    let mut unknown = false;
    let mut narrow_512 = None;
    let class: &'static str = if i.has_lock_prefix() || (i.mnemonic() == Mnemonic::Xchg && has_mem)
    {
        "locked"
    } else {
        match i.flow_control() {
            FlowControl::ConditionalBranch
            | FlowControl::UnconditionalBranch
            | FlowControl::IndirectBranch => "branch",
            FlowControl::Call | FlowControl::IndirectCall => "call",
            FlowControl::Return => "ret",
            _ => match i.mnemonic() {
                Mnemonic::Nop
                | Mnemonic::Endbr64
                | Mnemonic::Endbr32
                | Mnemonic::Push
                | Mnemonic::Pop
                | Mnemonic::Prefetcht0
                | Mnemonic::Prefetcht1
                | Mnemonic::Prefetcht2
                | Mnemonic::Prefetchnta
                | Mnemonic::Prefetchw => "nop",
                // Held in the front end for tens of cycles (Golden Cove,
                // measured: `pause` 35 cycles a copy, `lfence` 12.5,
                // `sfence` 6.1, `mfence` 43): dispatch slots stand for it.
                Mnemonic::Pause => "pause",
                // Clearing the vector registers' upper halves (or all of
                // them): no data in, nothing later waits on it (Golden
                // Cove, measured: `vzeroupper; vaddps %ymm1,%ymm2,%ymm3`
                // 1.00 cycles a copy). Their cost is the class's.
                Mnemonic::Vzeroupper => "vzeroupper",
                Mnemonic::Vzeroall => "vzeroall",
                // Zen 5 measured (session 63): lfence 11 cycles a copy,
                // sfence 0.5, mfence 76: classes of their own where a
                // description names them, `fence` elsewhere.
                Mnemonic::Lfence => "fence",
                Mnemonic::Sfence => "fence_store",
                Mnemonic::Mfence => "fence_full",
                Mnemonic::Mov | Mnemonic::Movzx | Mnemonic::Movsx | Mnemonic::Movsxd => {
                    if has_mem
                        && i.mnemonic() == Mnemonic::Mov
                        && i.op0_kind() == OpKind::Register
                        && (i.op0_register().is_gpr8() || i.op0_register().is_gpr16())
                    {
                        // A load into a byte or word register merges with
                        // the register's old value: a µop that waits for it
                        // (measured on Zen 3: `mov (%r13),%cl` 1.00 cycles a
                        // copy, `mov (%r13),%ecx` 0.38).
                        "mov"
                    } else if has_mem {
                        "nop" // the load or store µops do the work
                    } else if i.mnemonic() == Mnemonic::Mov {
                        "mov"
                    } else if matches!(i.mnemonic(), Mnemonic::Movsx | Mnemonic::Movsxd) {
                        "sign_extend"
                    } else {
                        "alu"
                    }
                }
                Mnemonic::Lea => {
                    // A displacement field counts even when it is 0 (rbp and
                    // r13 as a base force one): measured on Zen 4, `lea
                    // (%r13,%rcx),%rax` (disp8 0) runs as `lea 8(%rsi,%rcx)`.
                    let three = i.memory_base() != Register::None
                        && i.memory_index() != Register::None
                        && (i.memory_displacement64() != 0 || i.memory_displ_size() > 0);
                    // A scaled index (×2, ×4, ×8) is slower on Intel than
                    // three components are (Golden Cove, measured).
                    let scaled = i.memory_index() != Register::None && i.memory_index_scale() > 1;
                    match (three, scaled) {
                        (true, true) => "lea3_scaled",
                        (true, false) => "lea3",
                        (false, true) => "lea_scaled",
                        (false, false) => "lea",
                    }
                }
                Mnemonic::Add
                | Mnemonic::Sub
                | Mnemonic::And
                | Mnemonic::Or
                | Mnemonic::Xor
                | Mnemonic::Adc
                | Mnemonic::Adcx
                | Mnemonic::Adox
                | Mnemonic::Sbb
                | Mnemonic::Cmp
                | Mnemonic::Test
                | Mnemonic::Inc
                | Mnemonic::Dec
                | Mnemonic::Neg
                | Mnemonic::Not
                | Mnemonic::Cdqe
                | Mnemonic::Cwde
                | Mnemonic::Clc
                | Mnemonic::Stc
                | Mnemonic::Cmc => "alu",
                // Bit tests and bit-field extraction on registers: one a
                // cycle on Golden Cove, on the imul's port (measured); the
                // BMI1 logic three a cycle. Memory forms stay alu.
                Mnemonic::Bt | Mnemonic::Bts | Mnemonic::Btr | Mnemonic::Btc if !has_mem => {
                    "bit_test"
                }
                Mnemonic::Bzhi | Mnemonic::Bextr if !has_mem => "bit_field",
                Mnemonic::Andn if !has_mem => "bmi_logic",
                // The lowest set bit's ops: on Zen 5's three shift pipes
                // (measured, session 63), `bmi_logic` elsewhere.
                Mnemonic::Blsi | Mnemonic::Blsr | Mnemonic::Blsmsk if !has_mem => "bmi_bit",
                // Their memory forms: `alu` where a description has no
                // figures for them (as before), Zen 5's false dependency
                // on the destination too (measured, session 64).
                Mnemonic::Blsi | Mnemonic::Blsr | Mnemonic::Blsmsk => "bmi_bit_mem",
                Mnemonic::Bt
                | Mnemonic::Bts
                | Mnemonic::Btr
                | Mnemonic::Btc
                | Mnemonic::Bzhi
                | Mnemonic::Bextr
                | Mnemonic::Andn => "alu",
                // A register swap: three µops, one swap a cycle on Golden
                // Cove (measured); an exchange-and-add the same, 2 cycles.
                Mnemonic::Xchg if i.op0_register().size() >= 4 => "xchg_swap",
                Mnemonic::Xchg => "xchg_reg",
                Mnemonic::Xadd => "xadd_reg",
                // Rotates through the carry: by one two µops and 2 cycles,
                // by more (an immediate or cl) microcode, ~6 cycles that
                // hold the core (Golden Cove, measured).
                Mnemonic::Rcl | Mnemonic::Rcr => {
                    let by_one = i.op_count() < 2
                        || (i.op_kind(1) != OpKind::Register && i.immediate(1) == 1);
                    if by_one {
                        "rotate_carry"
                    } else {
                        "rotate_carry_multi"
                    }
                }
                // Filling rdx/edx with rax's sign: two a cycle on Golden
                // Cove (`cqto` 0.50 cycles a copy, four 2.00), p0/p6.
                Mnemonic::Cdq | Mnemonic::Cqo | Mnemonic::Cwd => "sign_fill",
                // Measured on Golden Cove: `bswap %eax` 1 cycle, `bswap
                // %rax` 2, one a cycle either; `movbe` a load and the swap.
                Mnemonic::Bswap if !has_mem && i.op0_register().size() == 8 => "bswap64",
                Mnemonic::Bswap | Mnemonic::Movbe => "bswap",
                // Double shifts, by an immediate or by cl (Golden Cove,
                // measured: 3 cycles, one a cycle, either way).
                Mnemonic::Shld | Mnemonic::Shrd => "shift_double",
                Mnemonic::Shl
                | Mnemonic::Shr
                | Mnemonic::Sar
                | Mnemonic::Rol
                | Mnemonic::Ror
                | Mnemonic::Sal
                | Mnemonic::Shlx
                | Mnemonic::Shrx
                | Mnemonic::Sarx
                | Mnemonic::Rorx => {
                    // The count in cl (its last operand), not cl shifted by
                    // an immediate (`shr $2,%cl` is one µop: a BHive block
                    // with it measured 1.16 cycles, 1.33 modeled as two).
                    // The BMI2 forms take their count in any register.
                    let last = i.op_count().saturating_sub(1);
                    let cl = !matches!(
                        i.mnemonic(),
                        Mnemonic::Shlx | Mnemonic::Shrx | Mnemonic::Sarx | Mnemonic::Rorx
                    ) && i.op_kind(last) == OpKind::Register
                        && i.op_register(last) == Register::CL;
                    if cl {
                        "rotate_cl"
                    } else {
                        "shift"
                    }
                }
                // Zen 5 runs tzcnt on its three shift pipes and pdep/pext
                // there in three cycles (measured, session 63), popcnt and
                // lzcnt on every ALU: classes of their own where a
                // description names them, `bitcount` elsewhere.
                Mnemonic::Tzcnt | Mnemonic::Bsf | Mnemonic::Bsr => "bit_scan",
                Mnemonic::Pdep | Mnemonic::Pext => "bit_deposit",
                Mnemonic::Popcnt | Mnemonic::Lzcnt => "bitcount",
                Mnemonic::Imul if i.op_count() >= 2 => "imul",
                // A 3-cycle multiply-like unit on Golden Cove (measured
                // `crc32q %rbx,%rax` chain 3.11 cycles) and Zen 4 (AMD: 3).
                Mnemonic::Crc32 => "imul",
                Mnemonic::Imul | Mnemonic::Mul | Mnemonic::Mulx => "mul_wide",
                Mnemonic::Div | Mnemonic::Idiv => {
                    let size = if has_mem {
                        i.memory_size().size()
                    } else {
                        i.op0_register().size()
                    };
                    if size >= 8 {
                        "div64"
                    } else {
                        "div32"
                    }
                }
                // Element extracts and inserts through a general register
                // cross between the register files as `movq` does (Zen 4:
                // `pextrq`/`pinsrq` round trips 7-8 cycles, one a cycle).
                _ if starts(
                    m,
                    &[
                        "pextr",
                        "pinsr",
                        "vpextr",
                        "vpinsr",
                        "extractps",
                        "vextractps",
                    ],
                ) && any_gpr(i)
                    && !has_mem =>
                {
                    match gpr_vec_direction(i) {
                        // An insert merges into a vector input as well.
                        "gpr_vec" | "gpr_vec_legacy" if m.contains("pinsr") => "vec_insert_gpr",
                        "gpr_vec" | "gpr_vec_legacy" => "gpr_vec",
                        // An element out of place: two cycles more than a
                        // move of the low one on Zen 5 (measured, session
                        // 65: `vpextrd $0` too, and vextractps, vpextrb/w).
                        _ => "vec_extract_gpr",
                    }
                }
                // A broadcast from a general register crosses the register
                // files first (Zen 5, measured, session 66: one a cycle, on
                // vmovd's pipe; round trips with vmovd out 6.9-9.0).
                _ if starts(m, &["vpbroadcast"]) && any_gpr(i) && !has_mem => "vec_broadcast_gpr",
                // Above / below-or-equal read CF and ZF, which Intel keeps
                // apart: two µops there (measured on Golden Cove).
                Mnemonic::Cmova | Mnemonic::Cmovbe => "cmov_carry_zero",
                // Signed conditions read SF and OF (and ZF): one flag group
                // on Intel, but two cycles from the flags on Zen 5.
                Mnemonic::Cmovl | Mnemonic::Cmovge | Mnemonic::Cmovle | Mnemonic::Cmovg => {
                    "cmov_signed"
                }
                Mnemonic::Seta | Mnemonic::Setbe => "setcc_carry_zero",
                _ if m.starts_with("cmov") => "cmov",
                _ if m.starts_with("set") => "setcc",
                Mnemonic::Movd | Mnemonic::Movq | Mnemonic::Vmovd | Mnemonic::Vmovq
                    if any_gpr(i) && any_vec(i) =>
                {
                    gpr_vec_direction(i)
                }
                Mnemonic::Movd | Mnemonic::Movq | Mnemonic::Vmovd | Mnemonic::Vmovq => {
                    if has_mem {
                        "nop"
                    } else {
                        "vec_mov"
                    }
                }
                // A general register into a mask register: port 5 on
                // Golden Cove, where the other mask operations use port 0.
                Mnemonic::Kmovb | Mnemonic::Kmovw | Mnemonic::Kmovd | Mnemonic::Kmovq
                    if !has_mem
                        && i.op0_register().is_k()
                        && i.op_kind(1) == OpKind::Register
                        && i.op1_register().is_gpr() =>
                {
                    "gpr_to_mask"
                }
                // AVX-512 mask registers (Golden Cove, measured: one a
                // cycle each, `vpcmpeqb %ymm1,%ymm0,%k1` 1.00 cycles a copy,
                // `kmovd %k1,%eax` 1.02, `kortestd` 1.00).
                _ if m.starts_with('k')
                    && (0..i.op_count())
                        .any(|k| i.op_kind(k) == OpKind::Register && i.op_register(k).is_k()) =>
                {
                    "mask_op"
                }
                _ if i.op_count() > 0
                    && i.op0_kind() == OpKind::Register
                    && i.op0_register().is_k() =>
                {
                    "vec_to_mask"
                }
                _ => {
                    let bare = m
                        .strip_prefix('v')
                        .filter(|_| i.code().encoding() != iced_x86::EncodingKind::Legacy)
                        .unwrap_or(m);
                    let ymm_dest = i.op_count() > 0
                        && i.op0_kind() == OpKind::Register
                        && (i.op0_register().is_ymm() || i.op0_register().is_zmm());
                    let vex = bare.len() < m.len();
                    let finish = |c: Option<&'static str>| match c {
                        Some("vec_mov") if has_mem => Some("nop"),
                        // The VEX form (its mask a fourth operand) is three
                        // µops on Golden Cove, 2 cycles (measured), where the
                        // SSE form is one.
                        Some("vec_blendv") if vex => Some("vec_blendv_vex"),
                        c => c,
                    };
                    let zmm = any_zmm(i);
                    let wide = match finish(vector_class(bare, zmm, ymm_dest)) {
                        Some("cvt" | "cvt_packed") if cvt_across_lanes(i) => {
                            Some(if cvt_widens(i) {
                                "cvt_widen"
                            } else {
                                "cvt_narrow"
                            })
                        }
                        // `vpermq`/`vpermpd $imm` permute within each
                        // 256-bit half: as their ymm forms (Zen 5, measured:
                        // 4.0 cycles where vpermd %zmm takes 5).
                        Some("vec512_permute")
                            if matches!(bare, "permq" | "permpd")
                                && (0..i.op_count())
                                    .any(|k| i.op_kind(k) == OpKind::Immediate8) =>
                        {
                            Some("vec512_lane_cross")
                        }
                        w => w,
                    };
                    if zmm {
                        narrow_512 = finish(vector_class(bare, false, ymm_dest))
                            .filter(|&n| Some(n) != wide);
                    }
                    match wide.or_else(|| rare_class(i, m)) {
                        Some(c) => c,
                        None => {
                            unknown = true;
                            "alu"
                        }
                    }
                }
            },
        }
    };
    // An integer operation reading AH, BH, CH or DH extracts the byte on a
    // unit of its own (Golden Cove: port 1, 3 cycles; measured).
    let reads_high8 = ii.used_registers().iter().any(|u| {
        matches!(
            u.register(),
            Register::AH | Register::BH | Register::CH | Register::DH
        ) && matches!(
            u.access(),
            OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        )
    });
    let class = match class {
        "alu" | "mov" | "shift" if reads_high8 => "high8_read",
        c => c,
    };
    if matches!(class, "vzeroupper" | "vzeroall") {
        // iced lists every vector register as read and written: the model
        // would chain them through it.
        reads.clear();
        writes.clear();
    }
    Shape {
        class,
        class_id: class_index(class) as u16,
        reads,
        addr_reads,
        writes,
        load,
        store,
        stack_op,
        alu_imm32,
        dest_size: if i.op0_kind() == OpKind::Register {
            i.op0_register().size() as u8
        } else {
            0
        },
        vector_mem,
        nontemporal: is_nontemporal_store(i),
        zero_idiom,
        flags_only,
        movable,
        zero_extend_byte,
        imm_add,
        rmw_reg_source,
        is_nop,
        extending_load,
        zero_extending_load,
        fusible,
        taken: false,
        high_half,
        logical_flags,
        cond_branch,
        unknown,
        narrow_512,
        addr: i.ip(),
        len: i.len(),
        offset_of: offset_of(i),
        upper: upper_state(i, class, writes_xmm, writes_wide),
    }
}

/// See [`UpperState`]; `xmm`/`wide`: it writes an xmm / a ymm or zmm
/// register.
fn upper_state(i: &Instruction, class: &str, xmm: bool, wide: bool) -> UpperState {
    let legacy = i.code().encoding() == iced_x86::EncodingKind::Legacy;
    if matches!(class, "vzeroupper" | "vzeroall") {
        UpperState::Clears
    } else if !legacy && wide_operation(i, wide) {
        UpperState::Dirties
    } else if legacy && xmm {
        UpperState::LegacySse
    } else {
        UpperState::Untouched
    }
}

/// A VEX instruction of 256 bits (a ymm operand: `vextracti128 $1,%ymm1,%xmm2`
/// dirties the upper halves as much as a ymm write, measured), or an EVEX
/// one writing a ymm or zmm register. iced counts a VEX.128 write as one
/// to the whole register (it clears the upper half): not by itself.
fn wide_operation(i: &Instruction, writes_wide: bool) -> bool {
    let operands = || (0..i.op_count()).filter(|&k| i.op_kind(k) == OpKind::Register);
    if i.code().encoding() == iced_x86::EncodingKind::VEX {
        operands().any(|k| i.op_register(k).is_ymm())
    } else {
        writes_wide
            && operands()
                .next()
                .is_some_and(|k| i.op_register(k).is_ymm() || i.op_register(k).is_zmm())
    }
}

/// A non-temporal store (`movnti`, `movntdq`, `vmovntps`, ...): it
/// bypasses the caches, and the write-combining buffer it fills goes to
/// memory at the memory's rate (`Machine::nontemporal_line`).
pub fn is_nontemporal_store(i: &Instruction) -> bool {
    use iced_x86::Mnemonic::*;
    matches!(
        i.mnemonic(),
        Movnti
            | Movntdq
            | Movntps
            | Movntpd
            | Movntq
            | Movntss
            | Movntsd
            | Vmovntdq
            | Vmovntps
            | Vmovntpd
    )
}

/// Per instruction of a repeated block: a legacy SSE instruction that
/// finds the vector registers' upper halves dirty — the last instruction
/// before it (the block repeating) that touched them wrote a ymm or zmm
/// register with a VEX or EVEX encoding, not `vzeroupper` (Golden Cove's
/// state transition: another SSE instruction between has paid it).
/// Empty where no instruction makes one (most blocks).
pub fn sse_transitions(shapes: &[Shape]) -> Vec<bool> {
    legacy_sse_after_dirty(shapes, |u| u != UpperState::Untouched)
}

/// Per instruction of a repeated block: a legacy SSE instruction writing
/// an xmm register while the upper halves are dirty — as
/// [`sse_transitions`], but SSE instructions between leave them dirty
/// (Zen 5 merges each). Empty where no instruction dirties them.
pub fn sse_upper_merges(shapes: &[Shape]) -> Vec<bool> {
    legacy_sse_after_dirty(shapes, |u| {
        matches!(u, UpperState::Dirties | UpperState::Clears)
    })
}

/// Per instruction: a legacy SSE instruction whose nearest instruction
/// before it (cyclically) of the states `counts` takes dirtied the upper
/// halves. Empty where the block has no SSE write or nothing dirties.
fn legacy_sse_after_dirty(shapes: &[Shape], counts: impl Fn(UpperState) -> bool) -> Vec<bool> {
    let n = shapes.len();
    let has = |u: UpperState| shapes.iter().any(|sh| sh.upper == u);
    if !has(UpperState::LegacySse) || !has(UpperState::Dirties) {
        return Vec::new();
    }
    (0..n)
        .map(|s| {
            shapes[s].upper == UpperState::LegacySse
                && (1..n)
                    .map(|k| shapes[(s + n - k) % n].upper)
                    .find(|&u| counts(u))
                    == Some(UpperState::Dirties)
        })
        .collect()
}

/// An 8- or 32-bit immediate operand (as a 32- or 64-bit ALU operation
/// takes one).
fn is_immediate(kind: OpKind) -> bool {
    matches!(
        kind,
        OpKind::Immediate8
            | OpKind::Immediate8to32
            | OpKind::Immediate8to64
            | OpKind::Immediate32
            | OpKind::Immediate32to64
    )
}

/// See [`Shape::offset_of`]: writes of 32 bits or more (the low bits are
/// what a cache line's offset needs).
fn offset_of(i: &Instruction) -> Option<(Reg, Reg, i64)> {
    if i.op_count() == 0 || i.op0_kind() != OpKind::Register {
        return None;
    }
    let dst = i.op0_register();
    if !dst.is_gpr() || dst.size() < 4 {
        return None;
    }
    let d = full(dst);
    match i.mnemonic() {
        Mnemonic::Lea if i.memory_index() == Register::None && i.memory_base().is_gpr64() => {
            Some((d, full(i.memory_base()), i.memory_displacement64() as i64))
        }
        Mnemonic::Add | Mnemonic::Sub if is_immediate(i.op1_kind()) => {
            let imm = i.immediate(1) as i64;
            Some((
                d,
                d,
                if i.mnemonic() == Mnemonic::Sub {
                    -imm
                } else {
                    imm
                },
            ))
        }
        Mnemonic::Inc => Some((d, d, 1)),
        Mnemonic::Dec => Some((d, d, -1)),
        Mnemonic::Mov
            if i.op_count() == 2
                && i.op1_kind() == OpKind::Register
                && i.op1_register().is_gpr()
                && i.op1_register().size() == dst.size() =>
        {
            Some((d, full(i.op1_register()), 0))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Decoder, DecoderOptions};

    #[test]
    fn a_shape_carries_its_class_index() {
        // mov (%rdi),%rax; imul %rcx,%rax; divq (%rsi)
        for bytes in [
            &[0x48, 0x8b, 0x07][..],
            &[0x48, 0x0f, 0xaf, 0xc1],
            &[0x48, 0xf7, 0x36],
        ] {
            let sh = one(bytes);
            assert_eq!(sh.class_id as usize, class_index(sh.class), "{}", sh.class);
            assert_eq!(CLASSES[sh.class_id as usize], sh.class);
        }
    }

    #[test]
    fn class_names_index_the_class_list() {
        for (k, c) in CLASSES.iter().enumerate() {
            assert_eq!(class_index(c), k, "{c}");
            assert_eq!(class_id(c), k, "{c}");
        }
        assert_eq!(CLASSES[0], "alu");
        assert_eq!(class_index("no such class"), 0);
    }

    fn one(bytes: &[u8]) -> Shape {
        let mut d = Decoder::with_ip(64, bytes, 0x1000, DecoderOptions::NONE);
        let i = d.decode();
        shape(&i, &mut InstructionInfoFactory::new())
    }

    #[test]
    fn a_shift_by_cl_is_told_from_cl_shifted() {
        assert_eq!(one(&[0x48, 0xd3, 0xeb]).class, "rotate_cl"); // shr %cl,%rbx
        assert_eq!(one(&[0xc0, 0xe9, 0x02]).class, "shift"); // shr $2,%cl
        assert_eq!(one(&[0xc4, 0xe2, 0xf1, 0xf7, 0xd8]).class, "shift"); // shlx %rcx,%rax,%rbx
                                                                         // Double shifts are their own class, by cl or not.
        assert_eq!(one(&[0x48, 0x0f, 0xa5, 0xc3]).class, "shift_double"); // shld %cl,%rax,%rbx
        assert_eq!(one(&[0x48, 0x0f, 0xa4, 0xd8, 0x03]).class, "shift_double"); // shld $3,%rbx,%rax
    }

    #[test]
    fn vector_masks_tests_and_sums_of_differences() {
        assert_eq!(one(&[0x66, 0x0f, 0xd7, 0xc0]).class, "vec_movmsk"); // pmovmskb %xmm0,%eax
        assert_eq!(one(&[0xc5, 0xfd, 0xd7, 0xc0]).class, "vec_movmsk"); // vpmovmskb %ymm0,%eax
        assert_eq!(one(&[0x66, 0x0f, 0x38, 0x17, 0xc8]).class, "vec_test"); // ptest
        assert_eq!(one(&[0x66, 0x0f, 0xf6, 0xc1]).class, "vec_sad"); // psadbw
                                                                     // mpsadbw $0,%xmm1,%xmm0
        assert_eq!(
            one(&[0x66, 0x0f, 0x3a, 0x42, 0xc1, 0x00]).class,
            "vec_mpsad"
        );
        assert_eq!(one(&[0x66, 0x0f, 0x38, 0x37, 0xc1]).class, "vec_p5_long"); // pcmpgtq
        assert_eq!(one(&[0x66, 0x0f, 0x67, 0xc1]).class, "vec_pack"); // packuswb
        assert_eq!(one(&[0xc4, 0xe2, 0x7d, 0x30, 0xc0]).class, "vec_pack"); // vpmovzxbw %xmm0,%ymm0
        assert_eq!(
            one(&[0x66, 0x0f, 0x38, 0x30, 0xc0]).class,
            "vec_byte_shuffle"
        ); // pmovzxbw %xmm0,%xmm0
    }

    #[test]
    fn floating_point_compares_rounds_and_horizontal_adds() {
        assert_eq!(one(&[0xf2, 0x0f, 0x58, 0xc1]).class, "fp_add"); // addsd
        assert_eq!(one(&[0xf2, 0x0f, 0x5f, 0xc1]).class, "fp_minmax"); // maxsd
        assert_eq!(one(&[0xf2, 0x0f, 0xc2, 0xc1, 0x01]).class, "fp_minmax"); // cmpltsd
        assert_eq!(one(&[0x66, 0x0f, 0x3a, 0x0b, 0xc0, 0x01]).class, "fp_round"); // roundsd
        assert_eq!(one(&[0x66, 0x0f, 0x7c, 0xc1]).class, "fp_hadd"); // haddpd
        assert_eq!(one(&[0x66, 0x0f, 0x38, 0x02, 0xc1]).class, "vec_hadd"); // phaddd %xmm1,%xmm0
        assert_eq!(one(&[0x66, 0x0f, 0x38, 0xdc, 0xc8]).class, "vec_aes"); // aesenc %xmm0,%xmm1
                                                                           // vaesenc %zmm0,%zmm1,%zmm2: the same unit at every width.
        assert_eq!(one(&[0x62, 0xf2, 0x75, 0x48, 0xdc, 0xd0]).class, "vec_aes");
        // pclmulqdq $0,%xmm0,%xmm1
        assert_eq!(
            one(&[0x66, 0x0f, 0x3a, 0x44, 0xc8, 0x00]).class,
            "vec_clmul"
        );
        // sha256rnds2 %xmm0,%xmm1,%xmm2
        assert_eq!(one(&[0x0f, 0x38, 0xcb, 0xd1]).class, "vec_sha");
        // vpdpbusd %ymm1,%ymm2,%ymm3
        assert_eq!(one(&[0xc4, 0xe2, 0x6d, 0x50, 0xd9]).class, "vec_dot");
        assert_eq!(one(&[0x0f, 0x52, 0xc0]).class, "fp_rcp"); // rsqrtps
        assert_eq!(one(&[0xc5, 0xf9, 0x7e, 0xc0]).class, "vec_to_gpr"); // vmovd %xmm0,%eax
        assert_eq!(one(&[0xc5, 0xf9, 0x6e, 0xc0]).class, "gpr_vec"); // vmovd %eax,%xmm0
        assert_eq!(one(&[0x66, 0x0f, 0x6e, 0xc0]).class, "gpr_vec_legacy"); // movd %eax,%xmm0
                                                                            // vpextrd $1,%xmm0,%eax
        assert_eq!(
            one(&[0xc4, 0xe3, 0x79, 0x16, 0xc0, 0x01]).class,
            "vec_extract_gpr"
        );
        // pinsrd $1,%eax,%xmm0: an insert, SSE or not
        assert_eq!(
            one(&[0x66, 0x0f, 0x3a, 0x22, 0xc0, 0x01]).class,
            "vec_insert_gpr"
        );
        assert_eq!(one(&[0xc4, 0xe3, 0x7d, 0x40, 0xc1, 0x01]).class, "fp_dot"); // vdpps $1,%ymm1,%ymm0,%ymm0
        assert_eq!(
            one(&[0x66, 0x0f, 0x3a, 0x41, 0xc1, 0x31]).class,
            "fp_dot_double"
        ); // dppd $0x31,%xmm1,%xmm0
        assert_eq!(one(&[0xc4, 0xe2, 0x7d, 0x1c, 0xc1]).class, "vec_abs"); // vpabsb %ymm1,%ymm0
        assert_eq!(one(&[0xf2, 0x0f, 0x51, 0xc0]).class, "fp_sqrt"); // sqrtsd
        assert_eq!(one(&[0xf2, 0x48, 0x0f, 0x2c, 0xc0]).class, "cvt_to_gpr"); // cvttsd2si
        assert_eq!(one(&[0xf2, 0x48, 0x0f, 0x2a, 0xc0]).class, "cvt_from_gpr"); // cvtsi2sd
        assert_eq!(one(&[0x0f, 0x5b, 0xc0]).class, "cvt_packed"); // cvtdq2ps
        assert_eq!(one(&[0xf3, 0x0f, 0x5a, 0xc0]).class, "cvt"); // cvtss2sd
        assert_eq!(one(&[0xc5, 0xfc, 0x5a, 0xc0]).class, "cvt_widen"); // vcvtps2pd %xmm0,%ymm0
        assert_eq!(one(&[0xc5, 0xfd, 0x5a, 0xc0]).class, "cvt_narrow"); // vcvtpd2ps %ymm0,%xmm0
        assert_eq!(one(&[0xc5, 0xfe, 0xe6, 0xc0]).class, "cvt_widen"); // vcvtdq2pd %xmm0,%ymm0
        assert_eq!(one(&[0xc5, 0xf8, 0x5a, 0xc0]).class, "cvt"); // vcvtps2pd %xmm0,%xmm0
        assert_eq!(one(&[0x48, 0x99]).class, "sign_fill"); // cqto
        assert_eq!(one(&[0xf2, 0x48, 0x0f, 0x38, 0xf1, 0xc3]).class, "imul"); // crc32q
    }

    #[test]
    fn prefetches_load_and_pauses_hold_dispatch() {
        let pf = one(&[0x0f, 0x18, 0x0b]); // prefetcht0 (%rbx)
        assert_eq!(pf.class, "nop");
        assert!(pf.load.is_some() && pf.writes.is_empty());
        assert_eq!(one(&[0xf3, 0x90]).class, "pause");
        assert_eq!(one(&[0x0f, 0xae, 0xe8]).class, "fence"); // lfence
    }

    #[test]
    fn mask_registers() {
        // vpcmpeqb %ymm1,%ymm0,%k1; kmovd %k1,%eax
        assert_eq!(
            one(&[0x62, 0xf1, 0x7d, 0x28, 0x74, 0xc9]).class,
            "vec_to_mask"
        );
        assert_eq!(one(&[0xc5, 0xfb, 0x93, 0xc1]).class, "mask_op");
        // kmovd %eax,%k1: port 5 on Golden Cove, apart from the others.
        assert_eq!(one(&[0xc5, 0xfb, 0x92, 0xc8]).class, "gpr_to_mask");
    }

    #[test]
    fn bit_tests_bmi_logic_and_xadd_by_form() {
        assert_eq!(one(&[0x48, 0x0f, 0xa3, 0xc3]).class, "bit_test"); // bt %rax,%rbx
        assert_eq!(one(&[0x48, 0x0f, 0xa3, 0x03]).class, "alu"); // bt %rax,(%rbx)
        assert_eq!(one(&[0xc4, 0xe2, 0xe0, 0xf2, 0xc8]).class, "bmi_logic"); // andn %rax,%rbx,%rcx
        assert_eq!(one(&[0xc4, 0xe2, 0xf8, 0xf5, 0xcb]).class, "bit_field"); // bzhi %rax,%rbx,%rcx
        assert_eq!(one(&[0xf3, 0x48, 0x0f, 0xbc, 0xfe]).class, "bit_scan"); // tzcnt %rsi,%rdi
        assert_eq!(one(&[0xc4, 0xe2, 0xeb, 0xf5, 0xfe]).class, "bit_deposit"); // pdep %rsi,%rdx,%rdi
        assert_eq!(one(&[0xc4, 0xe2, 0xe8, 0xf7, 0xfe]).class, "bit_field"); // bextr %rdx,%rsi,%rdi
        assert_eq!(one(&[0xc4, 0xe2, 0xc0, 0xf3, 0xce]).class, "bmi_bit"); // blsr %rsi,%rdi
        assert_eq!(one(&[0x48, 0x0f, 0xbc, 0xfe]).class, "bit_scan"); // bsf %rsi,%rdi
        assert_eq!(one(&[0x48, 0x0f, 0xc1, 0xc3]).class, "xadd_reg"); // xadd %rax,%rbx
    }

    #[test]
    fn vector_compares_and_byte_alignment_have_their_own_classes() {
        assert_eq!(one(&[0x66, 0x0f, 0x74, 0xc1]).class, "vec_compare"); // pcmpeqb %xmm1,%xmm0
        assert_eq!(one(&[0x66, 0x0f, 0xda, 0xc1]).class, "vec_compare"); // pminub %xmm1,%xmm0
        assert_eq!(one(&[0x66, 0x0f, 0xfc, 0xc1]).class, "vec_alu"); // paddb %xmm1,%xmm0
        assert_eq!(
            one(&[0x66, 0x0f, 0x3a, 0x0f, 0xc1, 0x03]).class,
            "vec_align"
        ); // palignr
        assert_eq!(
            one(&[0x66, 0x0f, 0x38, 0x00, 0xc1]).class,
            "vec_byte_shuffle"
        ); // pshufb
    }

    #[test]
    fn lane_crossing_forms_split_by_cost() {
        // In-lane permutes are shuffles; full permutes, inserts and
        // broadcasts classes of their own (Zen 5: 4 and 2 cycles against
        // the extracts' 3).
        let class = |b: &[u8]| one(b).class;
        assert_eq!(class(&[0xc4, 0xe3, 0x7d, 0x04, 0xc0, 0x1b]), "vec_shuffle"); // vpermilps
        assert_eq!(class(&[0xc4, 0xe3, 0xfd, 0x00, 0xc0, 0x1b]), "vec_permute"); // vpermq
        assert_eq!(
            class(&[0xc4, 0xe3, 0x7d, 0x18, 0xc0, 0x01]),
            "vec_lane_insert"
        ); // vinsertf128
        assert_eq!(class(&[0xc4, 0xe2, 0x7d, 0x58, 0xc0]), "vec_lane_insert"); // vpbroadcastd
        assert_eq!(
            // vpbroadcastd %eax,%ymm0 (EVEX): from a general register
            class(&[0x62, 0xf2, 0x7d, 0x28, 0x7c, 0xc0]),
            "vec_broadcast_gpr"
        );
        assert_eq!(
            class(&[0xc4, 0xe3, 0x7d, 0x19, 0xc0, 0x01]),
            "vec_lane_cross"
        ); // vextractf128
    }

    #[test]
    fn zmm_forms_split_by_port() {
        // vpminub %zmm1,%zmm2,%zmm3; vpshufb %zmm1,%zmm2,%zmm3; vpermd; vpaddd
        assert_eq!(
            one(&[0x62, 0xf1, 0x6d, 0x48, 0xda, 0xd9]).class,
            "vec512_compare"
        );
        assert_eq!(
            one(&[0x62, 0xf2, 0x6d, 0x48, 0x00, 0xd9]).class,
            "vec512_shuffle"
        );
        // vpermd %zmm: its own class since session 62 (Zen 5 names it);
        // a description without it costs it as vec512_lane_cross.
        assert_eq!(
            one(&[0x62, 0xf2, 0x75, 0x48, 0x36, 0xd2]).class,
            "vec512_permute"
        );
        let gc = crate::machine::Machine::by_name("golden-cove").unwrap();
        assert_eq!(gc.class("vec512_permute"), gc.class("vec512_lane_cross"));
        assert_eq!(
            one(&[0x62, 0xf1, 0x6d, 0x48, 0xfe, 0xd9]).class,
            "vec512_alu"
        );
    }

    #[test]
    fn fp_compares_and_unpacks_have_their_own_classes() {
        assert_eq!(one(&[0x66, 0x0f, 0x2e, 0xd9]).class, "fp_compare"); // ucomisd
        assert_eq!(one(&[0x66, 0x0f, 0x14, 0xd9]).class, "fp_unpack"); // unpcklpd
        assert_eq!(one(&[0x66, 0x0f, 0x6c, 0xd9]).class, "vec_shuffle"); // punpcklqdq
    }

    #[test]
    fn upper_half_effects_by_encoding() {
        assert_eq!(one(&[0x0f, 0x58, 0xd9]).upper, UpperState::LegacySse); // addps %xmm1,%xmm3
        assert_eq!(one(&[0xc5, 0xec, 0x58, 0xe1]).upper, UpperState::Dirties); // vaddps ymm
        assert_eq!(one(&[0xc5, 0xe8, 0x58, 0xe1]).upper, UpperState::Untouched); // vaddps xmm
        assert_eq!(one(&[0xc5, 0xf8, 0x77]).upper, UpperState::Clears); // vzeroupper
        assert_eq!(one(&[0x66, 0x0f, 0x2e, 0xd9]).upper, UpperState::Untouched);
        // ucomisd
    }

    #[test]
    fn vzeroupper_reads_and_writes_no_register() {
        let v = one(&[0xc5, 0xf8, 0x77]); // vzeroupper
        assert_eq!(v.class, "vzeroupper");
        assert!(v.reads.is_empty() && v.writes.is_empty());
    }

    #[test]
    fn only_eleven_bit_constants_fold() {
        assert!(one(&[0x48, 0x05, 0xff, 0x03, 0x00, 0x00]).imm_add); // add $0x3ff,%rax
        assert!(!one(&[0x48, 0x05, 0x00, 0x04, 0x00, 0x00]).imm_add); // add $0x400,%rax
        assert!(one(&[0x48, 0x8d, 0x80, 0x00, 0xfc, 0xff, 0xff]).imm_add); // lea -0x400(%rax),%rax
        assert!(!one(&[0x48, 0x8d, 0x80, 0xff, 0xfb, 0xff, 0xff]).imm_add); // lea -0x401(%rax),%rax
    }

    #[test]
    fn rotates_through_the_carry_by_one_or_by_more() {
        assert_eq!(one(&[0x48, 0xd1, 0xd0]).class, "rotate_carry"); // rcl $1,%rax
        assert_eq!(one(&[0x48, 0xc1, 0xd0, 0x01]).class, "rotate_carry"); // rcl $1 (imm8)
        assert_eq!(one(&[0x48, 0xd1, 0xd8]).class, "rotate_carry"); // rcr %rax
        assert_eq!(one(&[0x48, 0xc1, 0xd0, 0x03]).class, "rotate_carry_multi"); // rcl $3,%rax
        assert_eq!(one(&[0x48, 0xd3, 0xdb]).class, "rotate_carry_multi"); // rcr %cl,%rbx
    }

    #[test]
    fn register_swaps_and_vex_blends_have_their_own_classes() {
        assert_eq!(one(&[0x48, 0x93]).class, "xchg_swap"); // xchg %rax,%rbx
        assert_eq!(one(&[0x93]).class, "xchg_swap"); // xchg %eax,%ebx
        assert_eq!(one(&[0x66, 0x93]).class, "xchg_reg"); // xchg %ax,%bx
        assert_eq!(one(&[0x86, 0xd8]).class, "xchg_reg"); // xchg %bl,%al
        assert_eq!(one(&[0x66, 0x90]).class, "nop"); // xchg %ax,%ax
        assert_eq!(one(&[0x48, 0x87, 0x03]).class, "locked"); // xchg %rax,(%rbx)
                                                              // vpblendvb %xmm2,%xmm1,%xmm0,%xmm0 vs pblendvb %xmm0,%xmm1
        assert_eq!(
            one(&[0xc4, 0xe3, 0x79, 0x4c, 0xc1, 0x20]).class,
            "vec_blendv_vex"
        );
        assert_eq!(one(&[0x66, 0x0f, 0x38, 0x10, 0xc8]).class, "vec_blendv");
    }

    #[test]
    fn byte_swaps_by_width() {
        assert_eq!(one(&[0x0f, 0xc8]).class, "bswap"); // bswap %eax
        assert_eq!(one(&[0x48, 0x0f, 0xc8]).class, "bswap64"); // bswap %rax
        let movbe = one(&[0x48, 0x0f, 0x38, 0xf0, 0x03]); // movbe (%rbx),%rax
        assert_eq!(movbe.class, "bswap");
        assert!(movbe.load.is_some());
    }

    #[test]
    fn classes_and_dependencies() {
        let add = one(&[0x48, 0x01, 0xd8]); // add rax, rbx
        assert_eq!(add.class, "alu");
        assert!(
            add.reads.contains(&(Register::RAX as Reg))
                && add.reads.contains(&(Register::RBX as Reg))
        );
        assert!(add.writes.contains(&(Register::RAX as Reg)) && add.writes.contains(&FLAGS));
        assert!(add.fusible);
        let xor = one(&[0x31, 0xc0]); // xor eax, eax
        assert!(xor.zero_idiom);
        let imul = one(&[0x48, 0x0f, 0xaf, 0xc3]); // imul rax, rbx
        assert_eq!(imul.class, "imul");
        let load = one(&[0x48, 0x8b, 0x07]); // mov rax, [rdi]
        assert_eq!(load.class, "nop");
        assert!(load.load.is_some() && load.store.is_none());
        assert_eq!(load.addr_reads.as_slice(), [Register::RDI as Reg]);
        let store = one(&[0x48, 0x89, 0x07]); // mov [rdi], rax
        assert!(store.store.is_some() && store.load.is_none());
        let addm = one(&[0x48, 0x03, 0x07]); // add rax, [rdi]
        assert_eq!(addm.class, "alu");
        assert!(addm.load.is_some());
        let div = one(&[0x48, 0xf7, 0xf1]); // div rcx
        assert_eq!(div.class, "div64");
        let jne = one(&[0x75, 0xfe]);
        assert_eq!(jne.class, "branch");
        assert!(jne.cond_branch && jne.reads.contains(&FLAGS));
        let fma = one(&[0xc4, 0xe2, 0xf1, 0xa9, 0xc2]); // vfmadd213sd xmm0, xmm1, xmm2
        assert_eq!(fma.class, "fma");
        let addsd = one(&[0xf2, 0x0f, 0x58, 0xc1]); // addsd xmm0, xmm1
        assert_eq!(addsd.class, "fp_add");
        let mov = one(&[0x48, 0x89, 0xd8]); // mov rax, rbx
        assert!(mov.movable);
        let addi = one(&[0x48, 0x83, 0xc0, 0x01]); // add rax, 1
        assert!(addi.imm_add);
        assert!(one(&[0x48, 0xff, 0xc0]).imm_add); // inc %rax
        assert!(!one(&[0xff, 0xc0]).imm_add); // inc %eax
        let push = one(&[0x53]); // push rbx
        assert!(push.store.is_some() && !push.reads.contains(&(Register::RSP as Reg)));
    }
}
