/* How many branches the core executes a cycle, and on which pipes: loops of
 * K fused, never-taken `cmp %eax,%eax; jne` and a closing `dec; jnz`
 * (K + 1 branches a trip, one taken), alone or beside independent ALU ops
 * of a class whose pipes the machine description names (`shl`: three
 * pipes, `lea` with three operands: two), and codec's `rle_encode` run
 * loop (three branches a trip) at its own alignment. Timed with rdtsc
 * (best of 11 runs of 2 M trips) and turned into core cycles by a chain of
 * dependent adds (one a cycle). Pin it to a CPU.
 *
 * Zen 5 host of session 52 (EPYC family 26 model 2, KVM), 0.62-0.65 TSC
 * ticks a core cycle, five runs:
 *   branches a trip 2 / 3 / 4 / 6 / 9 / 12: 0.99-1.00 / 0.98-1.00 /
 *   1.37-1.50 / 1.98-2.00 / 2.97-3.01 / 3.95-4.01 cycles: three branches a
 *   cycle (the AMD guide's two is the taken ones:
 *   `taken_branches_per_cycle`);
 *   beside shl: 1 + 9 shl 3.29-3.36 (10 / 3), 3 + 6 shl 2.97-3.00 (9 / 3),
 *   3 + 9 shl 3.98-4.01 (12 / 3), 6 + 6 shl 3.98-4.00 (12 / 3): branches
 *   and shifts share the same three pipes (zen5 `branch` on alu0-alu2, as
 *   `shift`);
 *   beside lea3: 6 + 6 lea3 3.98-3.99 (12 / 3: lea3's two pipes among the
 *   three), 1 + 6 and 3 + 6 lea3 3.31-3.36 and 3.51-3.72 (3.00 at best);
 *   rle_encode's run loop (`cmp $0xff,%rcx; je; add; add; cmp; jae;
 *   cmp %dl,(%rdi,%rax); je` back, at offset 32 of a line) 1.06-1.09
 *   cycles a trip: the model said 1.50 with two branch pipes, 1.00 with
 *   three. The model with three: 2 / 3 / 4 / 6 / 9 / 12 branches 1.00 /
 *   1.00 / 1.33 / 2.00 / 3.00 / 4.00, 3 + 6 shl 3.00.
 *
 *   gcc -O2 -o branch_pipes branch_pipes.c && taskset -c 1 ./branch_pipes */
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>

#define CLOBBERS "cc", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "rbx", "r12", "r13", "r14", "r15"

/* K branches, then one OP per register of REGS (independent chains). */
#define MIX(name, K, OP, REGS)                                                   \
    static void name(long n)                                                     \
    {                                                                            \
        __asm__ volatile(".p2align 6\n\t"                                        \
                         "1:\n\t"                                                \
                         ".rept " #K "\n\t"                                      \
                         "cmp %%eax,%%eax\n\t"                                   \
                         "jne 2f\n\t"                                            \
                         ".endr\n\t"                                             \
                         ".irp r," REGS "\n\t" OP "\n\t"                         \
                         ".endr\n\t"                                             \
                         "dec %%rcx\n\t"                                         \
                         "jnz 1b\n\t"                                            \
                         "2:\n\t"                                                \
                         : "+c"(n)                                               \
                         : "a"(0)                                                \
                         : CLOBBERS);                                            \
    }

#define NONE "%%edx"
#define R6 "%%edx,%%esi,%%edi,%%r8d,%%r9d,%%r10d"
#define R9 "%%edx,%%esi,%%edi,%%r8d,%%r9d,%%r10d,%%r11d,%%ebx,%%r12d"
/* Branches alone: `nop` ignores its register (one nop a trip, which
 * executes nothing; the same loops without it read the same cycles). */
MIX(b1, 1, "nop", NONE)
MIX(b2, 2, "nop", NONE)
MIX(b3, 3, "nop", NONE)
MIX(b5, 5, "nop", NONE)
MIX(b8, 8, "nop", NONE)
MIX(b11, 11, "nop", NONE)
MIX(b0s9, 0, "shl $1,\\r", R9)
MIX(b2s6, 2, "shl $1,\\r", R6)
MIX(b2s9, 2, "shl $1,\\r", R9)
MIX(b5s6, 5, "shl $1,\\r", R6)
MIX(b0l6, 0, "lea 1(%%r15,%%r14,2),\\r", R6)
MIX(b2l6, 2, "lea 1(%%r15,%%r14,2),\\r", R6)
MIX(b5l6, 5, "lea 1(%%r15,%%r14,2),\\r", R6)

#define RUN_BYTES (1 << 21)
static unsigned char run_bytes[RUN_BYTES + 64];

/* rle_encode's run loop over one long run (its 255 cap moved out of reach). */
static void run_loop(long n)
{
    long rax = 0, rcx = -(1L << 40);
    __asm__ volatile("jmp 2f\n\t"
                     ".p2align 6\n\t"
                     ".skip 32, 0x90\n\t"
                     "1: cmp $0xff,%%rcx\n\t"
                     "je 3f\n\t"
                     "add $1,%%rax\n\t"
                     "add $1,%%rcx\n\t"
                     "cmp %%rsi,%%rax\n\t"
                     "jae 3f\n\t"
                     "2: cmp %%dl,(%%rdi,%%rax,1)\n\t"
                     "je 1b\n\t"
                     "3:\n\t"
                     : "+a"(rax), "+c"(rcx)
                     : "S"(n), "D"(run_bytes), "d"(7)
                     : "cc", "memory");
}

static double ticks_per_cycle(void)
{
    double best = 1e30;
    for (int r = 0; r < 9; r++) {
        long x = 0;
        unsigned long t0 = __rdtsc();
        for (long i = 0; i < 10000000; i++)
            __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0" : "+r"(x));
        double t = (double)(__rdtsc() - t0) / 40000000.0;
        if (t < best)
            best = t;
    }
    return best;
}

static double cycles_a_trip(void (*f)(long), long trips, double tpc)
{
    double best = 1e30;
    for (int r = 0; r < 11; r++) {
        unsigned long t0 = __rdtsc();
        f(trips);
        double t = (double)(__rdtsc() - t0) / tpc / (double)trips;
        if (t < best)
            best = t;
    }
    return best;
}

int main(void)
{
    memset(run_bytes, 7, sizeof run_bytes);
    double tpc = ticks_per_cycle();
    printf("TSC ticks per core cycle %.3f\n", tpc);
    struct {
        void (*f)(long);
        const char *what;
    } loops[] = {
        {b1, "2 branches"},
        {b2, "3 branches"},
        {b3, "4 branches"},
        {b5, "6 branches"},
        {b8, "9 branches"},
        {b11, "12 branches"},
        {b0s9, "1 branch + 9 shl"},
        {b2s6, "3 branches + 6 shl"},
        {b2s9, "3 branches + 9 shl"},
        {b5s6, "6 branches + 6 shl"},
        {b0l6, "1 branch + 6 lea3"},
        {b2l6, "3 branches + 6 lea3"},
        {b5l6, "6 branches + 6 lea3"},
    };
    for (unsigned k = 0; k < sizeof loops / sizeof loops[0]; k++)
        printf("%-24s %.3f cycles a trip\n", loops[k].what, cycles_a_trip(loops[k].f, 2000000, tpc));
    printf("%-24s %.3f cycles a trip\n", "rle_encode run loop", cycles_a_trip(run_loop, RUN_BYTES, tpc));
    return 0;
}
