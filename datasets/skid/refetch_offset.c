/* Does where a mispredicted branch's target sits in its 64-byte line
 * change what the refetch costs or where its samples land? (Zen 5's
 * recorded exit targets leave 14.6-23.6 cycles of refetch samples a
 * mispredict, benches/refetch_cycles.py.) A loop of a branch on a loaded
 * byte, taken on a random tenth of the trips, its taken target placed K
 * bytes into a 64-byte line and followed by ADDS four-byte adds and a
 * jump back.
 *   gcc -O2 -DK=40 -DADDS=1 -o /tmp/ro datasets/skid/refetch_offset.c
 *   taskset -c 1 /tmp/ro           cycles a trip, predictable and random,
 *                                  and cycles per taken trip between them
 *   dcpi collect -o /tmp/ro.db -- taskset -c C /tmp/ro 20
 *                                  20 random passes to sample: the share of
 *                                  the samples one past the target
 * Results: datasets/skid/loop-exit-cost-zen5.md (second part). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>
#include "ticks_per_cycle.h"
#define STR2(x) #x
#define STR(x) STR2(x)
#define N (1 << 24)
static unsigned char ops[N];
__attribute__((noinline)) long run(const unsigned char *p, long n)
{
    long s = 0, a = 0;
    __asm__ volatile(
        "xor %%rcx, %%rcx\n"
        ".p2align 6\n"
        "1:\n"
        "movzbl (%[p],%%rcx), %%eax\n"
        "test %%eax, %%eax\n"
        "jne 3f\n"
        "add $1, %[s]\n"
        "2:\n"
        "add $1, %%rcx\n"
        "cmp %[n], %%rcx\n"
        "jb 1b\n"
        "jmp 4f\n"
        ".p2align 6\n"
        ".fill " STR(K) ", 1, 0xcc\n"
        "3:\n"
        "add $3, %[s]\n"
        ".rept " STR(ADDS) "\n"
        "add $5, %[a]\n"
        ".endr\n"
        "jmp 2b\n"
        "4:\n"
        : [s] "+r"(s), [a] "+r"(a)
        : [p] "r"(p), [n] "r"(n)
        : "rax", "rcx", "cc", "memory");
    return s + a;
}
static double best(void) {
    double b = 1e30;
    for (int k = 0; k < 5; k++) {
        uint64_t t0 = __rdtsc(); volatile long r = run(ops, N); (void)r; uint64_t t1 = __rdtsc();
        if (t1 - t0 < b) b = t1 - t0;
    }
    return b;
}
int main(int argc, char **argv) {
    if (argc > 1) { srand(7); for (long i = 0; i < N; i++) ops[i] = (rand() % 10) == 0; long t = 0; for (int r = 0; r < atoi(argv[1]); r++) t += run(ops, N); return (int)(t & 1); }
    double tpc = ticks_per_cycle();
    for (long i = 0; i < N; i++) ops[i] = (i % 10) == 0;
    double pred = best() / N / tpc;
    srand(7);
    long taken = 0;
    for (long i = 0; i < N; i++) { ops[i] = (rand() % 10) == 0; taken += ops[i]; }
    double rnd = best() / N / tpc;
    printf("K=%2d pred %.3f random %.3f cycles a trip: %.2f cycles per taken (%.3f taken a trip)\n", K, pred, rnd, (rnd - pred) / ((double)taken / N), (double)taken / N);
    return 0;
}
