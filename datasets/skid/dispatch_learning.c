/* Whether the branch predictor learns a dispatch stream that repeats, on
 * this host, rdtsc alone (no PMU): kernels' interp (nine codes, seven
 * through a jump table and two to its default arm) run over one array of
 * random codes again and again, as the kernels workload does (4,096 codes,
 * 32,000 calls), and over 64 different arrays in turn (nothing to learn
 * within a predictor's reach). The analyzer's dispatch rule takes the
 * mispredicts a trip from the cases' shares (a random stream: 0.86 here);
 * if the repeated stream runs much faster, the predictor learned part of
 * it and that share overstates the mispredicts.
 * Core cycles from a dependent add chain (ticks_per_cycle.h); best of five.
 *
 * Build and run: gcc -O2 -o /tmp/dispatch_learning datasets/skid/dispatch_learning.c
 *                taskset -c 1 /tmp/dispatch_learning
 * Results: BENCHMARKS.md, session 57. */
#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

#include "ticks_per_cycle.h"

#define LEN 4096
#define ARRAYS 64
static unsigned char codes[ARRAYS][LEN];

/* kernels.c's interp, as recorded in datasets/analyzer. */
__attribute__((noinline)) long interp(const unsigned char *code, int len, long acc)
{
    for (int pc = 0; pc < len; pc++) {
        switch (code[pc]) {
        case 0: acc += 3; break;
        case 1: acc ^= acc >> 3; break;
        case 2: acc *= 5; break;
        case 3: acc -= pc; break;
        case 4: acc = (acc << 1) | 1; break;
        case 5: acc += acc >> 7; break;
        case 6: acc ^= 0x5a5a; break;
        default: acc = ~acc; break;
        }
    }
    return acc;
}

/* Best of five of 8,000 calls, each over array 0 (`arrays` 1) or the next
 * of `arrays` in turn: TSC ticks a trip. */
static double ticks_a_trip(int arrays)
{
    double best = 1e30;
    long acc = 0;
    for (int k = 0; k < 5; k++) {
        uint64_t t0 = __rdtsc();
        for (int r = 0; r < 8000; r++)
            acc = interp(codes[r % arrays], LEN, acc);
        uint64_t t1 = __rdtsc();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    __asm__ volatile("" : : "r"(acc));
    return best / (8000.0 * LEN);
}

int main(void)
{
    unsigned rng = 12345;
    for (int k = 0; k < ARRAYS; k++)
        for (int i = 0; i < LEN; i++) {
            rng = rng * 1103515245 + 12345;
            codes[k][i] = (unsigned char)((rng >> 16) % 9);
        }
    double tpc = ticks_per_cycle();
    printf("TSC ticks per core cycle: %.3f\n\n", tpc);
    printf("| stream | cycles a trip |\n| --- | --- |\n");
    printf("| one array of %d codes, repeated | %.2f |\n", LEN, ticks_a_trip(1) / tpc);
    printf("| %d arrays in turn | %.2f |\n", ARRAYS, ticks_a_trip(ARRAYS) / tpc);
    return 0;
}
