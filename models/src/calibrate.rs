//! `dcpi calibrate`: measure the host with rdtsc alone (the
//! [`harness`](crate::harness)) — latency of each instruction class from a
//! dependent chain, reciprocal throughput from eight independent instances —
//! compare with the machine description, and produce a calibrated one.
//! Mechanism probes (memory renaming, store forwarding, nop fusion, move
//! and zero-extension elimination, immediate folding, zero idioms) are small
//! blocks measured and modeled side by side, each naming the description
//! field it tests; they are reported, not applied — but for the two
//! non-temporal stream probes, whose cycles a line are the host memory's
//! (`nontemporal_line`, `nontemporal_partial_line`), which a calibrated
//! description takes as measured.

use crate::block::decode;
use crate::harness::measure;
use crate::machine::Machine;
use crate::schedule::{analyze, Options, RepeatMode};
use serde::Serialize;

/// One probe: a class, its dependent-chain block and its independent block.
struct Probe {
    class: &'static str,
    /// Instructions in the chain block (the chain's length).
    chain: &'static [u8],
    chain_len: usize,
    /// Eight independent instances.
    independent: &'static [u8],
}

/// `OP %xmm8, %xmmK` for K = 0..7, a legacy SSE instruction of mandatory
/// prefix `prefix` (0xf2 for sd, 0xf3 for ss) and opcode `0x0f op`: eight
/// instances, independent but for each destination's own chain.
const fn sse_from_xmm8(prefix: u8, op: u8) -> [u8; 40] {
    let mut b = [0u8; 40];
    let mut k = 0;
    while k < 8 {
        let at = 5 * k;
        b[at] = prefix;
        b[at + 1] = 0x41; // REX.B: xmm8
        b[at + 2] = 0x0f;
        b[at + 3] = op;
        b[at + 4] = 0xc0 | ((k as u8) << 3);
        k += 1;
    }
    b
}

const PROBES: &[Probe] = &[
    Probe {
        class: "alu",
        chain: &[0x48, 0x01, 0xd8], // add %rbx,%rax
        chain_len: 1,
        // add %rbx into rax, rcx, rdx, rsi, rdi, r8, r9, r10
        independent: &[
            0x48, 0x01, 0xd8, 0x48, 0x01, 0xd9, 0x48, 0x01, 0xda, 0x48, 0x01, 0xde, 0x48, 0x01,
            0xdf, 0x49, 0x01, 0xd8, 0x49, 0x01, 0xd9, 0x49, 0x01, 0xda,
        ],
    },
    Probe {
        class: "imul",
        chain: &[0x48, 0x0f, 0xaf, 0xc3], // imul %rbx,%rax
        chain_len: 1,
        independent: &[
            0x48, 0x0f, 0xaf, 0xc3, 0x48, 0x0f, 0xaf, 0xcb, 0x48, 0x0f, 0xaf, 0xd3, 0x48, 0x0f,
            0xaf, 0xf3, 0x48, 0x0f, 0xaf, 0xfb, 0x4c, 0x0f, 0xaf, 0xc3, 0x4c, 0x0f, 0xaf, 0xcb,
            0x4c, 0x0f, 0xaf, 0xd3,
        ],
    },
    Probe {
        class: "shift",
        chain: &[0x48, 0xc1, 0xe0, 0x03], // shl $3,%rax
        chain_len: 1,
        independent: &[
            0x48, 0xc1, 0xe0, 0x03, 0x48, 0xc1, 0xe1, 0x03, 0x48, 0xc1, 0xe2, 0x03, 0x48, 0xc1,
            0xe6, 0x03, 0x48, 0xc1, 0xe7, 0x03, 0x49, 0xc1, 0xe0, 0x03, 0x49, 0xc1, 0xe1, 0x03,
            0x49, 0xc1, 0xe2, 0x03,
        ],
    },
    Probe {
        class: "shift_double",
        chain: &[0x48, 0x0f, 0xa4, 0xd8, 0x03], // shld $3,%rbx,%rax
        chain_len: 1,
        // shld $3,%rbx into rax, rcx, rdx, rsi, rdi, r8, r9, r10
        independent: &[
            0x48, 0x0f, 0xa4, 0xd8, 0x03, 0x48, 0x0f, 0xa4, 0xd9, 0x03, 0x48, 0x0f, 0xa4, 0xda,
            0x03, 0x48, 0x0f, 0xa4, 0xde, 0x03, 0x48, 0x0f, 0xa4, 0xdf, 0x03, 0x49, 0x0f, 0xa4,
            0xd8, 0x03, 0x49, 0x0f, 0xa4, 0xd9, 0x03, 0x49, 0x0f, 0xa4, 0xda, 0x03,
        ],
    },
    Probe {
        class: "bswap",
        chain: &[0x0f, 0xc8], // bswap %eax
        chain_len: 1,
        // bswap of eax, ebx, ecx, edx, esi, edi, r8d, r9d
        independent: &[
            0x0f, 0xc8, 0x0f, 0xcb, 0x0f, 0xc9, 0x0f, 0xca, 0x0f, 0xce, 0x0f, 0xcf, 0x41, 0x0f,
            0xc8, 0x41, 0x0f, 0xc9,
        ],
    },
    Probe {
        class: "bswap64",
        chain: &[0x48, 0x0f, 0xc8], // bswap %rax
        chain_len: 1,
        // bswap of rax, rbx, rcx, rdx, rsi, rdi, r8, r9
        independent: &[
            0x48, 0x0f, 0xc8, 0x48, 0x0f, 0xcb, 0x48, 0x0f, 0xc9, 0x48, 0x0f, 0xca, 0x48, 0x0f,
            0xce, 0x48, 0x0f, 0xcf, 0x49, 0x0f, 0xc8, 0x49, 0x0f, 0xc9,
        ],
    },
    Probe {
        class: "load",
        chain: &[0x48, 0x8b, 0x00], // mov (%rax),%rax: pointer chase
        chain_len: 1,
        // mov 0, 8, ... 56(%rbx) into rax, rcx, rdx, rsi, rdi, r8, r9, r10:
        // other words of the line (Golden Cove serves two loads of one
        // word a cycle, see `Machine::load_bank_conflicts`)
        independent: &[
            0x48, 0x8b, 0x03, 0x48, 0x8b, 0x4b, 0x08, 0x48, 0x8b, 0x53, 0x10, 0x48, 0x8b, 0x73,
            0x18, 0x48, 0x8b, 0x7b, 0x20, 0x4c, 0x8b, 0x43, 0x28, 0x4c, 0x8b, 0x4b, 0x30, 0x4c,
            0x8b, 0x53, 0x38,
        ],
    },
    Probe {
        class: "fp_add",
        chain: &[0xf2, 0x0f, 0x58, 0xc1], // addsd %xmm1,%xmm0
        chain_len: 1,
        // addsd %xmm8 into xmm0..xmm7
        independent: &sse_from_xmm8(0xf2, 0x58),
    },
    Probe {
        class: "fp_mul",
        chain: &[0xf2, 0x0f, 0x59, 0xc1], // mulsd %xmm1,%xmm0
        chain_len: 1,
        // mulsd %xmm8 into xmm0..xmm7
        independent: &sse_from_xmm8(0xf2, 0x59),
    },
    // The divider and square root: not pipelined, so eight instances
    // measure their occupancy (each is also a chain of its own through its
    // destination's upper half, far shorter than eight occupancies). The
    // harness's xmm registers hold 1.0: a zero or special operand could
    // take a shortcut on some hosts.
    Probe {
        class: "fp_div",
        chain: &[0xf2, 0x0f, 0x5e, 0xc1], // divsd %xmm1,%xmm0
        chain_len: 1,
        // divsd %xmm8 into xmm0..xmm7
        independent: &sse_from_xmm8(0xf2, 0x5e),
    },
    Probe {
        class: "fp_sqrt",
        chain: &[0xf2, 0x0f, 0x51, 0xc0], // sqrtsd %xmm0,%xmm0
        chain_len: 1,
        // sqrtsd %xmm8 into xmm0..xmm7
        independent: &sse_from_xmm8(0xf2, 0x51),
    },
    Probe {
        class: "cvt",
        chain: &[0xf3, 0x0f, 0x5a, 0xc0], // cvtss2sd %xmm0,%xmm0
        chain_len: 1,
        // cvtss2sd %xmm8 into xmm0..xmm7
        independent: &sse_from_xmm8(0xf3, 0x5a),
    },
    Probe {
        class: "vec_alu",
        chain: &[0x66, 0x0f, 0xfe, 0xc1], // paddd %xmm1,%xmm0
        chain_len: 1,
        independent: &[
            0x66, 0x41, 0x0f, 0xfe, 0xc0, 0x66, 0x41, 0x0f, 0xfe, 0xc8, 0x66, 0x41, 0x0f, 0xfe,
            0xd0, 0x66, 0x41, 0x0f, 0xfe, 0xd8, 0x66, 0x41, 0x0f, 0xfe, 0xe0, 0x66, 0x41, 0x0f,
            0xfe, 0xe8, 0x66, 0x41, 0x0f, 0xfe, 0xf0, 0x66, 0x41, 0x0f, 0xfe, 0xf8,
        ],
    },
    Probe {
        class: "vec_shift",
        // psrlq $1,%xmm0
        chain: &[0x66, 0x0f, 0x73, 0xd0, 0x01],
        chain_len: 1,
        // psrlq $1 on xmm0..xmm7
        independent: &[
            0x66, 0x0f, 0x73, 0xd0, 0x01, 0x66, 0x0f, 0x73, 0xd1, 0x01, 0x66, 0x0f, 0x73, 0xd2,
            0x01, 0x66, 0x0f, 0x73, 0xd3, 0x01, 0x66, 0x0f, 0x73, 0xd4, 0x01, 0x66, 0x0f, 0x73,
            0xd5, 0x01, 0x66, 0x0f, 0x73, 0xd6, 0x01, 0x66, 0x0f, 0x73, 0xd7, 0x01,
        ],
    },
    Probe {
        class: "vec_shuffle",
        // pshufd $0x1b,%xmm0,%xmm0
        chain: &[0x66, 0x0f, 0x70, 0xc0, 0x1b],
        chain_len: 1,
        // pshufd $0x1b,%xmm8 into xmm0..xmm7
        independent: &[
            0x66, 0x41, 0x0f, 0x70, 0xc0, 0x1b, 0x66, 0x41, 0x0f, 0x70, 0xc8, 0x1b, 0x66, 0x41,
            0x0f, 0x70, 0xd0, 0x1b, 0x66, 0x41, 0x0f, 0x70, 0xd8, 0x1b, 0x66, 0x41, 0x0f, 0x70,
            0xe0, 0x1b, 0x66, 0x41, 0x0f, 0x70, 0xe8, 0x1b, 0x66, 0x41, 0x0f, 0x70, 0xf0, 0x1b,
            0x66, 0x41, 0x0f, 0x70, 0xf8, 0x1b,
        ],
    },
    Probe {
        class: "vec_byte_shuffle",
        // pshufb %xmm1,%xmm0
        chain: &[0x66, 0x0f, 0x38, 0x00, 0xc1],
        chain_len: 1,
        // pshufb %xmm8 on xmm0..xmm7
        independent: &[
            0x66, 0x41, 0x0f, 0x38, 0x00, 0xc0, 0x66, 0x41, 0x0f, 0x38, 0x00, 0xc8, 0x66, 0x41,
            0x0f, 0x38, 0x00, 0xd0, 0x66, 0x41, 0x0f, 0x38, 0x00, 0xd8, 0x66, 0x41, 0x0f, 0x38,
            0x00, 0xe0, 0x66, 0x41, 0x0f, 0x38, 0x00, 0xe8, 0x66, 0x41, 0x0f, 0x38, 0x00, 0xf0,
            0x66, 0x41, 0x0f, 0x38, 0x00, 0xf8,
        ],
    },
    Probe {
        class: "vec_imul",
        // pmulld %xmm1,%xmm0
        chain: &[0x66, 0x0f, 0x38, 0x40, 0xc1],
        chain_len: 1,
        // pmulld %xmm8 on xmm0..xmm7
        independent: &[
            0x66, 0x41, 0x0f, 0x38, 0x40, 0xc0, 0x66, 0x41, 0x0f, 0x38, 0x40, 0xc8, 0x66, 0x41,
            0x0f, 0x38, 0x40, 0xd0, 0x66, 0x41, 0x0f, 0x38, 0x40, 0xd8, 0x66, 0x41, 0x0f, 0x38,
            0x40, 0xe0, 0x66, 0x41, 0x0f, 0x38, 0x40, 0xe8, 0x66, 0x41, 0x0f, 0x38, 0x40, 0xf0,
            0x66, 0x41, 0x0f, 0x38, 0x40, 0xf8,
        ],
    },
    Probe {
        class: "vec_imul_narrow",
        // pmuludq %xmm1,%xmm0
        chain: &[0x66, 0x0f, 0xf4, 0xc1],
        chain_len: 1,
        // pmuludq %xmm8 on xmm0..xmm7
        independent: &[
            0x66, 0x41, 0x0f, 0xf4, 0xc0, 0x66, 0x41, 0x0f, 0xf4, 0xc8, 0x66, 0x41, 0x0f, 0xf4,
            0xd0, 0x66, 0x41, 0x0f, 0xf4, 0xd8, 0x66, 0x41, 0x0f, 0xf4, 0xe0, 0x66, 0x41, 0x0f,
            0xf4, 0xe8, 0x66, 0x41, 0x0f, 0xf4, 0xf0, 0x66, 0x41, 0x0f, 0xf4, 0xf8,
        ],
    },
    Probe {
        class: "fma",
        // vfmadd231pd %xmm1,%xmm2,%xmm0 (FMA3; a host without it loses the probe)
        chain: &[0xc4, 0xe2, 0xe9, 0xb8, 0xc1],
        chain_len: 1,
        // vfmadd231pd %xmm8,%xmm9 into xmm0..xmm7
        independent: &[
            0xc4, 0xc2, 0xb1, 0xb8, 0xc0, 0xc4, 0xc2, 0xb1, 0xb8, 0xc8, 0xc4, 0xc2, 0xb1, 0xb8,
            0xd0, 0xc4, 0xc2, 0xb1, 0xb8, 0xd8, 0xc4, 0xc2, 0xb1, 0xb8, 0xe0, 0xc4, 0xc2, 0xb1,
            0xb8, 0xe8, 0xc4, 0xc2, 0xb1, 0xb8, 0xf0, 0xc4, 0xc2, 0xb1, 0xb8, 0xf8,
        ],
    },
    Probe {
        class: "cmov",
        // cmovne %rbx,%rax
        chain: &[0x48, 0x0f, 0x45, 0xc3],
        chain_len: 1,
        // cmovne %rbx into rax, rcx, rdx, rsi, rdi, r8, r9, r10
        independent: &[
            0x48, 0x0f, 0x45, 0xc3, 0x48, 0x0f, 0x45, 0xcb, 0x48, 0x0f, 0x45, 0xd3, 0x48, 0x0f,
            0x45, 0xf3, 0x48, 0x0f, 0x45, 0xfb, 0x4c, 0x0f, 0x45, 0xc3, 0x4c, 0x0f, 0x45, 0xcb,
            0x4c, 0x0f, 0x45, 0xd3,
        ],
    },
    Probe {
        class: "bitcount",
        // popcnt %rax,%rax
        chain: &[0xf3, 0x48, 0x0f, 0xb8, 0xc0],
        chain_len: 1,
        // popcnt %rbx into rax, rcx, rdx, rsi, rdi, r8, r9, r10
        independent: &[
            0xf3, 0x48, 0x0f, 0xb8, 0xc3, 0xf3, 0x48, 0x0f, 0xb8, 0xcb, 0xf3, 0x48, 0x0f, 0xb8,
            0xd3, 0xf3, 0x48, 0x0f, 0xb8, 0xf3, 0xf3, 0x48, 0x0f, 0xb8, 0xfb, 0xf3, 0x4c, 0x0f,
            0xb8, 0xc3, 0xf3, 0x4c, 0x0f, 0xb8, 0xcb, 0xf3, 0x4c, 0x0f, 0xb8, 0xd3,
        ],
    },
    Probe {
        class: "lea3",
        // lea 8(%rax,%rbx),%rax
        chain: &[0x48, 0x8d, 0x44, 0x18, 0x08],
        chain_len: 1,
        // lea 8(%rbx,%r11) into rax, rcx, rdx, rsi, rdi, r8, r9, r10
        independent: &[
            0x4a, 0x8d, 0x44, 0x1b, 0x08, 0x4a, 0x8d, 0x4c, 0x1b, 0x08, 0x4a, 0x8d, 0x54, 0x1b,
            0x08, 0x4a, 0x8d, 0x74, 0x1b, 0x08, 0x4a, 0x8d, 0x7c, 0x1b, 0x08, 0x4e, 0x8d, 0x44,
            0x1b, 0x08, 0x4e, 0x8d, 0x4c, 0x1b, 0x08, 0x4e, 0x8d, 0x54, 0x1b, 0x08,
        ],
    },
    Probe {
        class: "lea_scaled",
        // lea (%rax,%rbx,4),%rax
        chain: &[0x48, 0x8d, 0x04, 0x98],
        chain_len: 1,
        // lea (%rbx,%r11,4) into rax, rcx, rdx, rsi, rdi, r8, r9, r10
        independent: &[
            0x4a, 0x8d, 0x04, 0x9b, 0x4a, 0x8d, 0x0c, 0x9b, 0x4a, 0x8d, 0x14, 0x9b, 0x4a, 0x8d,
            0x34, 0x9b, 0x4a, 0x8d, 0x3c, 0x9b, 0x4e, 0x8d, 0x04, 0x9b, 0x4e, 0x8d, 0x0c, 0x9b,
            0x4e, 0x8d, 0x14, 0x9b,
        ],
    },
    Probe {
        class: "sign_extend",
        // movslq %eax,%rax
        chain: &[0x48, 0x63, 0xc0],
        chain_len: 1,
        // movslq %ebx into rax, rcx, rdx, rsi, rdi, r8, r9, r10
        independent: &[
            0x48, 0x63, 0xc3, 0x48, 0x63, 0xcb, 0x48, 0x63, 0xd3, 0x48, 0x63, 0xf3, 0x48, 0x63,
            0xfb, 0x4c, 0x63, 0xc3, 0x4c, 0x63, 0xcb, 0x4c, 0x63, 0xd3,
        ],
    },
];

/// A block whose cycles per copy depend on one mechanism of the description.
struct MechanismProbe {
    /// The description field it tests, and how.
    field: &'static str,
    what: &'static str,
    code: &'static [u8],
}

/// Non-temporal stores streaming through 128 lines (8 KB, the index
/// masked first so the copies wrap): one whole line a copy, and one 16-byte
/// store a line (see [`Machine::nontemporal_line`]). Their cycles a copy
/// are the memory's per line, applied by [`Calibration::apply`].
const NONTEMPORAL_FULL: &str = "nontemporal_line";
const NONTEMPORAL_PARTIAL: &str = "nontemporal_partial_line";

const MECHANISMS: &[MechanismProbe] = &[
    MechanismProbe {
        field: NONTEMPORAL_FULL,
        what: "and $0x1fff,%rax; four movntdq %xmm0 to 0..0x30(%rdi,%rax); add $0x40,%rax (a line of non-temporal stores a copy, through 128 lines: the memory's cycles a line)",
        code: &[
            0x48, 0x25, 0xff, 0x1f, 0x00, 0x00, 0x66, 0x0f, 0xe7, 0x04, 0x07, 0x66, 0x0f, 0xe7,
            0x44, 0x07, 0x10, 0x66, 0x0f, 0xe7, 0x44, 0x07, 0x20, 0x66, 0x0f, 0xe7, 0x44, 0x07,
            0x30, 0x48, 0x83, 0xc0, 0x40,
        ],
    },
    MechanismProbe {
        field: NONTEMPORAL_PARTIAL,
        what: "and $0x1fff,%rax; movntdq %xmm0,(%rdi,%rax); add $0x40,%rax (a quarter of each line: a partly written line's cycles)",
        code: &[
            0x48, 0x25, 0xff, 0x1f, 0x00, 0x00, 0x66, 0x0f, 0xe7, 0x04, 0x07, 0x48, 0x83, 0xc0,
            0x40,
        ],
    },
    MechanismProbe {
        field: "cmov_signed",
        what: "cmp %ecx,%eax; cmovle %eax,%ecx (3 if a signed cmov waits two cycles for its flags, 2 if one)",
        code: &[0x39, 0xc8, 0x0f, 0x4e, 0xc8],
    },
    MechanismProbe {
        field: "mul_wide",
        what: "mul %rcx; mov %rdx,%rcx (4 if the high half comes a cycle after the low, as mul_wide_high says; 3 if with it)",
        code: &[0x48, 0xf7, 0xe1, 0x48, 0x89, 0xd1],
    },
    // A round trip between the register files cannot tell its two moves
    // apart: the description's two latencies are checked as a sum.
    MechanismProbe {
        field: "gpr_vec",
        what: "vmovq %rax,%xmm0; vmovq %xmm0,%rax (its latency and vec_to_gpr's)",
        code: &[0xc4, 0xe1, 0xf9, 0x6e, 0xc0, 0xc4, 0xe1, 0xf9, 0x7e, 0xc0],
    },
    MechanismProbe {
        field: "gpr_vec_legacy",
        what: "movq %rax,%xmm0; movq %xmm0,%rax (SSE encodings: its latency and vec_to_gpr's)",
        code: &[0x66, 0x48, 0x0f, 0x6e, 0xc0, 0x66, 0x48, 0x0f, 0x7e, 0xc0],
    },
    MechanismProbe {
        field: "cvt_from_gpr",
        what: "cvtsi2sd %rax,%xmm0; cvttsd2si %xmm0,%rax (its latency and cvt_to_gpr's)",
        code: &[0xf2, 0x48, 0x0f, 0x2a, 0xc0, 0xf2, 0x48, 0x0f, 0x2c, 0xc0],
    },
    MechanismProbe {
        field: "fp_div",
        what: "vsqrtsd %xmm1,%xmm1,%xmm0; vdivsd %xmm0,%xmm2,%xmm3 (its occupancy and fp_sqrt's summed if they share a unit)",
        code: &[0xc5, 0xf3, 0x51, 0xc1, 0xc5, 0xeb, 0x5e, 0xd8],
    },
    MechanismProbe {
        field: "memory_renaming",
        what: "mov %rax,8(%rbx); mov 8(%rbx),%rax (64-bit, not the stack)",
        code: &[0x48, 0x89, 0x43, 0x08, 0x48, 0x8b, 0x43, 0x08],
    },
    MechanismProbe {
        field: "memory_renaming",
        what: "add %rax,8(%rbx) (read-modify-write, register source)",
        code: &[0x48, 0x01, 0x43, 0x08],
    },
    MechanismProbe {
        field: "memory_renaming",
        what: "orl $4,8(%rbx) (read-modify-write, immediate)",
        code: &[0x83, 0x4b, 0x08, 0x04],
    },
    MechanismProbe {
        field: "store_forward_latency",
        what: "movb %al,8(%rbx); movb 8(%rbx),%al (byte round trip)",
        code: &[0x88, 0x43, 0x08, 0x8a, 0x43, 0x08],
    },
    MechanismProbe {
        field: "store_forward_latency_vector",
        what: "movq %xmm0,8(%rbx); movq 8(%rbx),%xmm0 (xmm round trip)",
        code: &[0x66, 0x0f, 0xd6, 0x43, 0x08, 0xf3, 0x0f, 0x7e, 0x43, 0x08],
    },
    MechanismProbe {
        field: "nop_fusion",
        what: "four independent movs and two nops (5 or 6 dispatch slots)",
        code: &[
            0x4c, 0x89, 0xe6, 0x4c, 0x89, 0xe7, 0x4d, 0x89, 0xe0, 0x4d, 0x89, 0xe1, 0x90, 0x90,
        ],
    },
    MechanismProbe {
        field: "zero_extension_elimination",
        what: "movzbl %dl,%eax; movzbl %al,%edx",
        code: &[0x0f, 0xb6, 0xc2, 0x0f, 0xb6, 0xd0],
    },
    MechanismProbe {
        field: "immediate_folding",
        what: "add $1,%rax (a chain through one register)",
        code: &[0x48, 0x83, 0xc0, 0x01],
    },
    MechanismProbe {
        field: "move_elimination",
        what: "mov %rax,%rbx; mov %rbx,%rax",
        code: &[0x48, 0x89, 0xc3, 0x48, 0x89, 0xd8],
    },
    MechanismProbe {
        field: "rmw_round_trip",
        what: "mov (%r15),%rax; addq $1,(%rax) (the base loaded again: forwarded, not renamed)",
        code: &[0x49, 0x8b, 0x07, 0x48, 0x83, 0x00, 0x01],
    },
    MechanismProbe {
        field: "store_forward_fail",
        what: "movb %al,(%rbx); mov (%rbx),%rcx (a load over part of a narrower store)",
        code: &[0x88, 0x03, 0x48, 0x8b, 0x0b],
    },
    MechanismProbe {
        field: "sbb_idiom",
        what: "cmp %rsi,%rdi; sbb %rcx,%rcx; and $2,%ecx (0.75 if sbb waits for the flag only)",
        code: &[0x48, 0x39, 0xf7, 0x48, 0x19, 0xc9, 0x83, 0xe1, 0x02],
    },
    MechanismProbe {
        field: "ports_bound_at_dispatch",
        what: "and $1,%edx; cmp $1,%edx; sbb %ecx,%ecx (1.5 if bound at dispatch, 1 if not)",
        code: &[0x83, 0xe2, 0x01, 0x83, 0xfa, 0x01, 0x19, 0xc9],
    },
    MechanismProbe {
        field: "fresh_alu_forward_slot",
        what: "mov $1,%eax; add %r10d,%eax (0.5 with six ALUs if the add takes a second slot, 0.33 if not)",
        code: &[0xb8, 0x01, 0x00, 0x00, 0x00, 0x44, 0x01, 0xd0],
    },
    MechanismProbe {
        field: "sign_extension_uop",
        what: "movsbl (%rbx),%eax; and $0,%eax; add %rax,%rbx (7 if the extension is a µop of its own, 6 if not)",
        code: &[0x0f, 0xbe, 0x03, 0x83, 0xe0, 0x00, 0x48, 0x01, 0xc3],
    },
    MechanismProbe {
        field: "move_op_fusion",
        what: "mov %r9d,%eax; add %r10d,%eax (one slot and one ALU µop if fused: 0.17 with six ALUs)",
        code: &[0x44, 0x89, 0xc8, 0x44, 0x01, 0xd0],
    },
    MechanismProbe {
        field: "store_commit_max",
        what: "stores at 0, 8, 16 and 64 from one register (3 if two a cycle to a line, 2 if more)",
        code: &[
            0x4c, 0x89, 0x30, 0x4c, 0x89, 0x70, 0x08, 0x4c, 0x89, 0x70, 0x10, 0x4c, 0x89, 0x70,
            0x40,
        ],
    },
    MechanismProbe {
        field: "dense_dispatch_width",
        what: "eight eliminated 32-bit movs in 16 bytes (8/7 = 1.14 if dense code dispatches seven a cycle, 1.0 if eight)",
        code: &[
            0x89, 0xc3, 0x89, 0xca, 0x89, 0xf7, 0x89, 0xee, 0x89, 0xc3, 0x89, 0xca, 0x89, 0xf7,
            0x89, 0xee,
        ],
    },
    MechanismProbe {
        field: "decode_bytes_straddle",
        what: "four 13-byte nops (0.81 at 64 bytes a cycle straddling windows, 1.0 with whole instructions a cycle)",
        code: &[
            0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x0f, 0x1f, 0x00, 0x66,
            0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x0f, 0x1f, 0x00, 0x66, 0x66,
            0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x0f, 0x1f, 0x00, 0x66, 0x66, 0x66,
            0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x0f, 0x1f, 0x00,
        ],
    },
    MechanismProbe {
        field: "zero_idioms",
        what: "xor %eax,%eax; add %eax,%ecx; add %ecx,%eax (1 cycle if xor breaks the chain)",
        code: &[0x31, 0xc0, 0x01, 0xc1, 0x01, 0xc8],
    },
];

/// A mechanism probe: measured vs modeled cycles per copy.
#[derive(Debug, Clone, Serialize)]
pub struct MechanismCheck {
    pub field: String,
    pub block: String,
    pub model_cycles: f64,
    pub measured_cycles: Option<f64>,
    /// Measured and modeled differ by more than 15 % (and 0.1 cycles).
    pub disagrees: bool,
}

/// Measured vs described, per class.
#[derive(Debug, Clone, Serialize)]
pub struct ClassCalibration {
    pub class: String,
    pub model_latency: u32,
    pub measured_latency: Option<f64>,
    /// The model's cycles per instance of the probe's eight independent
    /// instances (occupancy / ports, unless their latency bounds them).
    pub model_rthroughput: f64,
    pub measured_rthroughput: Option<f64>,
    /// The latency or throughput differs from the description by more than 15%.
    pub disagrees: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub machine: String,
    pub ticks_per_cycle: f64,
    pub classes: Vec<ClassCalibration>,
    pub mechanisms: Vec<MechanismCheck>,
}

/// [`measure`], again up to five times when a measurement is refused (not
/// linear: the host disturbed it). On a busy Zen 3 KVM guest one try in
/// three or so was refused; a clean-clone CI run once lost the zero-idiom
/// probe that way.
fn measure_retrying(code: &[u8], n: usize, cpu: usize) -> Option<crate::harness::Measured> {
    (0..5).find_map(|_| measure(code, n, cpu))
}

/// Measures every probed class on CPU `cpu`.
pub fn calibrate(machine: &Machine, cpu: usize) -> Calibration {
    let mut classes = Vec::new();
    let mut tpc = 0.0;
    for p in PROBES {
        let lat = measure_retrying(p.chain, p.chain_len, cpu);
        let tput = measure_retrying(p.independent, 8, cpu);
        if let Some(m) = lat {
            tpc = m.ticks_per_cycle;
        }
        let cost = machine.class(p.class);
        // What the model says of the same eight instances (each a chain of
        // its own from one copy to the next: a class of long latency is
        // bound by it, `vec_imul`'s 10 cycles by 10/8, not by its ports).
        let model_rt = decode(p.independent, 0, false)
            .ok()
            .map(|block| {
                analyze(
                    machine,
                    &block,
                    Options {
                        mode: RepeatMode::Unrolled,
                        iterations: 0,
                    },
                )
                .cycles_per_iteration
                    / 8.0
            })
            .unwrap_or(cost.occupancy as f64 / cost.ports.len().max(1) as f64);
        let measured_latency = lat.map(|m| m.cycles / p.chain_len as f64);
        let measured_rthroughput = tput.map(|m| m.cycles / 8.0);
        let off = |model: f64, got: Option<f64>| {
            got.is_some_and(|g| (g - model).abs() > 0.15 * model.max(0.2))
        };
        classes.push(ClassCalibration {
            class: p.class.into(),
            model_latency: cost.latency,
            measured_latency,
            model_rthroughput: model_rt,
            measured_rthroughput,
            disagrees: off(cost.latency as f64, measured_latency)
                || off(model_rt, measured_rthroughput),
        });
    }
    let mechanisms = MECHANISMS
        .iter()
        .filter_map(|p| {
            let block = decode(p.code, 0, false).ok()?;
            let model = analyze(
                machine,
                &block,
                Options {
                    mode: RepeatMode::Unrolled,
                    iterations: 0,
                },
            )
            .cycles_per_iteration;
            let measured = measure_retrying(p.code, block.len(), cpu).map(|m| m.cycles);
            let disagrees =
                measured.is_some_and(|g| (g - model).abs() > (0.15 * model.max(g)).max(0.1));
            Some(MechanismCheck {
                field: p.field.into(),
                block: p.what.into(),
                model_cycles: model,
                measured_cycles: measured,
                disagrees,
            })
        })
        .collect();
    Calibration {
        machine: machine.name.clone(),
        ticks_per_cycle: tpc,
        classes,
        mechanisms,
    }
}

impl Calibration {
    /// The description with measured latencies (rounded to whole cycles) put
    /// in, their sources saying so, and the memory's cycles a line of
    /// non-temporal stores (the host's memory, not the core's: measured,
    /// never assumed). Throughput disagreements are reported, not applied:
    /// ports are the model's structure, not a number to fit.
    pub fn apply(&self, machine: &Machine, host: &str) -> Machine {
        let mut m = machine.clone();
        m.name = format!("{}-calibrated", machine.name);
        m.description = format!("{} (latencies calibrated on {host})", machine.description);
        for c in &self.classes {
            if let (Some(lat), Some(cost)) = (c.measured_latency, m.class_mut(&c.class)) {
                let rounded = lat.round().max(0.0) as u32;
                if rounded != cost.latency {
                    cost.source = format!(
                        "calibrated: {lat:.2} cycles on {host} (was {}; {})",
                        cost.latency, cost.source
                    );
                    cost.latency = rounded;
                }
            }
        }
        for c in &self.mechanisms {
            let Some(cycles) = c.measured_cycles.filter(|x| x.is_finite() && *x > 0.0) else {
                continue;
            };
            let rounded = cycles.round().max(1.0) as u32;
            match c.field.as_str() {
                NONTEMPORAL_FULL => m.nontemporal_line = rounded,
                NONTEMPORAL_PARTIAL => m.nontemporal_partial_line = rounded,
                _ => {}
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::Register;

    #[test]
    fn every_probe_is_its_chain_and_eight_of_the_same_instruction() {
        for p in PROBES {
            let chain = decode(p.chain, 0, false).expect("a chain block decodes");
            assert_eq!(chain.len(), p.chain_len, "{}", p.class);
            let eight = decode(p.independent, 0, false).expect("an independent block decodes");
            assert_eq!(eight.len(), 8, "{}", p.class);
            for d in &eight {
                assert_eq!(d.instr.mnemonic(), chain[0].instr.mnemonic(), "{}", p.class);
            }
        }
    }

    #[test]
    fn non_temporal_probes_stream_and_their_measurements_are_applied() {
        let zen5 = Machine::by_name("zen5").unwrap();
        let model = |field: &str| {
            let p = MECHANISMS.iter().find(|p| p.field == field).unwrap();
            let block = decode(p.code, 0, false).unwrap();
            analyze(
                &zen5,
                &block,
                Options {
                    mode: RepeatMode::Unrolled,
                    iterations: 0,
                },
            )
            .cycles_per_iteration
        };
        // The description's own figures, a line a copy.
        assert!((model(NONTEMPORAL_FULL) - zen5.nontemporal_line as f64).abs() < 0.01);
        assert!((model(NONTEMPORAL_PARTIAL) - zen5.nontemporal_partial_line as f64).abs() < 0.01);
        let gc = Machine::by_name("golden-cove").unwrap();
        assert_eq!(gc.nontemporal_line, 0);
        let check = |field: &str, measured: Option<f64>| MechanismCheck {
            field: field.into(),
            block: String::new(),
            model_cycles: 1.0,
            measured_cycles: measured,
            disagrees: true,
        };
        let cal = Calibration {
            machine: gc.name.clone(),
            ticks_per_cycle: 1.0,
            classes: Vec::new(),
            mechanisms: vec![
                check(NONTEMPORAL_FULL, Some(7.4)),
                check(NONTEMPORAL_PARTIAL, None),
                check("zero_idioms", Some(3.0)),
            ],
        };
        let m = cal.apply(&gc, "a host");
        assert_eq!((m.nontemporal_line, m.nontemporal_partial_line), (7, 0));
    }

    #[test]
    fn sse_from_xmm8_writes_xmm0_to_xmm7_from_xmm8() {
        let eight = decode(&sse_from_xmm8(0xf2, 0x5e), 0, false).unwrap();
        for (k, d) in eight.iter().enumerate() {
            assert_eq!(d.instr.mnemonic(), iced_x86::Mnemonic::Divsd);
            assert_eq!(d.instr.op0_register(), Register::XMM0 + k as u32);
            assert_eq!(d.instr.op1_register(), Register::XMM8);
        }
    }
}
