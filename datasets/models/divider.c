/* The FP divider with normal operands: latency of sqrtsd and divsd chains,
 * how far apart independent ones start, and blocks where a square root and
 * a divide share the unit (numeric's `nbody_step` inner loop, its ja left
 * out). Registers hold normal doubles (1.0-3.6; the divide chain divides by
 * exactly 1.0 so it never underflows), loads read normal doubles. Timed
 * with rdtsc (best of 7 runs of 2 M trips of four copies) and turned into
 * core cycles by a chain of dependent adds (one a cycle). Pin it to a CPU.
 *
 * Zen 5 host of session 59 (EPYC family 26 model 2, KVM), 0.62-0.65 TSC ticks a
 * core cycle, five runs (model: zen5.toml after this session; before, in
 * brackets: divider occupancy held as one window, the AMD guide's figures):
 *   nbody b3+b4+b5              12.14-12.38   model 13.0 [19.5]
 *   vsqrtsd; vdivsd fed by it   11.50-11.97   model 12.0 [13.5]
 *   two vsqrtsd; vdivsd         19.41-19.77   model 20.0 [20.0]
 *   vdivsd, independent          3.96-4.06    model  4.0 [ 5.0]
 *   vsqrtsd, independent         7.40-7.61    model  8.0 [ 7.0]
 *   vsqrtsd + vdivsd, independent 11.72-12.19 model 12.0 [12.0]
 *   vsqrtsd; vmulsd; vdivsd; vaddsd into an accumulator
 *                               11.23-11.81   model 12.0 [15.0]
 *   vsqrtsd chain               19.55-20.25   model 20.0 [15.0]
 *   vdivsd chain (by 1.0)       12.82-13.26   model 13.0 [13.0]
 * `dcpi calibrate` (its fp_div and fp_sqrt probes, the harness's xmm
 * registers 1.0) agrees: divsd 13.0 / 4.0 apart, sqrtsd 20.0 / 7.5 apart;
 * the BHive harness with whatever the registers held measured the same.
 * Single precision is faster (divss 10.0 / 2.5 apart, sqrtss 14.0 / 4.5):
 * the description's one class per operation takes double's.
 *
 *   gcc -O2 -o divider divider.c && taskset -c 1 ./divider */
#include <stdio.h>
#include "../skid/ticks_per_cycle.h"

static double arr[8][64];

/* Cycles per copy of `body`, run four times a trip, 2 M trips, best of 7;
 * r15, rax, r14, r13, rdx, r12, rcx point at rows 0-6 of `arr` and rbx is
 * 0 (nbody's registers), xmm0-xmm10 hold row 0's first eleven values. */
#define RUN(name, body)                                                                  \
    do {                                                                                 \
        double best = 1e30;                                                              \
        for (int rep = 0; rep < 7; rep++) {                                              \
            long n = 2000000;                                                            \
            uint64_t t0 = __rdtsc();                                                     \
            __asm__ volatile(                                                            \
                "lea (%[a0]),%%r15\n\tlea 512(%[a0]),%%rax\n\tlea 1024(%[a0]),%%r14\n\t"    \
                "lea 1536(%[a0]),%%r13\n\tlea 2048(%[a0]),%%rdx\n\tlea 2560(%[a0]),%%r12\n\t" \
                "lea 3072(%[a0]),%%rcx\n\txor %%ebx,%%ebx\n\t"                              \
                "movsd (%%r15),%%xmm0\n\tmovsd 8(%%r15),%%xmm1\n\tmovsd 16(%%r15),%%xmm2\n\t" \
                "movsd 24(%%r15),%%xmm3\n\tmovsd 32(%%r15),%%xmm4\n\tmovsd 40(%%r15),%%xmm5\n\t" \
                "movsd 48(%%r15),%%xmm6\n\tmovsd 56(%%r15),%%xmm7\n\tmovsd 64(%%r15),%%xmm8\n\t" \
                "movsd 72(%%r15),%%xmm9\n\tmovsd 80(%%r15),%%xmm10\n\tpxor %%xmm11,%%xmm11\n\t" \
                "1:\n\t" body "\n\t" body "\n\t" body "\n\t" body "\n\t"                     \
                "dec %[n]\n\tjnz 1b\n\t"                                                     \
                : [n] "+r"(n)                                                            \
                : [a0] "D"(arr[0])                                                       \
                : "rax", "rbx", "rcx", "rdx", "r12", "r13", "r14", "r15", "xmm0", "xmm1",  \
                  "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",  \
                  "xmm11", "memory", "cc");                                              \
            uint64_t t1 = __rdtsc();                                                     \
            double c = (t1 - t0) / tpc / (2000000.0 * 4);                                \
            if (c < best)                                                                \
                best = c;                                                                \
        }                                                                                \
        printf("%8.2f  %s\n", best, name);                                               \
    } while (0)

int main(void)
{
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 64; j++)
            arr[i][j] = 1.0 + 0.37 * i + 0.011 * j;
    arr[0][9] = 1.0; /* xmm9: the divide chain's divisor */
    double tpc = ticks_per_cycle();
    printf("TSC ticks per core cycle %.3f\n", tpc);
    RUN("nbody b3+b4+b5",
        "movsd (%%r15,%%rbx,8),%%xmm4\n\tmovsd (%%rax,%%rbx,8),%%xmm3\n\tsubsd (%%r14),%%xmm4\n\t"
        "subsd 0x0(%%r13),%%xmm3\n\tmovsd (%%rdx,%%rbx,8),%%xmm2\n\tsubsd (%%r12),%%xmm2\n\t"
        "movsd (%%rcx,%%rbx,8),%%xmm10\n\tmovapd %%xmm4,%%xmm1\n\tmovapd %%xmm3,%%xmm0\n\t"
        "mulsd %%xmm3,%%xmm0\n\tmulsd %%xmm4,%%xmm1\n\taddsd %%xmm0,%%xmm1\n\t"
        "movapd %%xmm2,%%xmm0\n\tmulsd %%xmm2,%%xmm0\n\taddsd %%xmm0,%%xmm1\n\t"
        "addsd %%xmm8,%%xmm1\n\tucomisd %%xmm1,%%xmm11\n\tmovapd %%xmm1,%%xmm0\n\t"
        "sqrtsd %%xmm0,%%xmm0\n\tmulsd %%xmm0,%%xmm1\n\tmovapd %%xmm10,%%xmm0\n\t"
        "divsd %%xmm1,%%xmm0\n\tmulsd %%xmm0,%%xmm4\n\tmulsd %%xmm0,%%xmm3\n\t"
        "mulsd %%xmm0,%%xmm2\n\taddsd %%xmm4,%%xmm5\n\taddsd %%xmm3,%%xmm6\n\taddsd %%xmm2,%%xmm7");
    RUN("vsqrtsd; vdivsd fed by it", "vsqrtsd %%xmm1,%%xmm1,%%xmm0\n\tvdivsd %%xmm0,%%xmm2,%%xmm3");
    RUN("two vsqrtsd; vdivsd",
        "vsqrtsd %%xmm1,%%xmm1,%%xmm0\n\tvsqrtsd %%xmm2,%%xmm2,%%xmm4\n\tvdivsd %%xmm0,%%xmm2,%%xmm3");
    RUN("vdivsd, independent", "vdivsd %%xmm1,%%xmm2,%%xmm3");
    RUN("vsqrtsd, independent", "vsqrtsd %%xmm1,%%xmm1,%%xmm3");
    RUN("vsqrtsd + vdivsd, independent",
        "vsqrtsd %%xmm1,%%xmm1,%%xmm3\n\tvdivsd %%xmm1,%%xmm2,%%xmm4");
    RUN("vsqrtsd; vmulsd; vdivsd; vaddsd into an accumulator",
        "vsqrtsd %%xmm1,%%xmm1,%%xmm0\n\tvmulsd %%xmm2,%%xmm0,%%xmm0\n\t"
        "vdivsd %%xmm0,%%xmm2,%%xmm3\n\tvaddsd %%xmm3,%%xmm4,%%xmm4");
    RUN("vsqrtsd chain", "vsqrtsd %%xmm0,%%xmm0,%%xmm0");
    RUN("vdivsd chain (by 1.0)", "vdivsd %%xmm9,%%xmm0,%%xmm0");
    return 0;
}
