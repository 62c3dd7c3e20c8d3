/* What a mispredict costs in time on this host, rdtsc alone (no PMU): a
 * loop run over a predictable stream, then over a random one, the cycles a
 * trip more per expected mispredict. Two branch shapes the analyzer meets:
 *   cond:     a conditional branch on a byte just loaded (codec's, hashtab's
 *             loop exits);
 *   dispatch: a switch through a jump table (kernels' interp, bytecode's
 *             stream_vm): load the opcode, load the table entry, add, jmp.
 * Each is the front end's refill plus the latency of the branch's inputs,
 * which the refetched path must compute again before the branch resolves.
 * Core cycles from a dependent add chain (ticks_per_cycle.h); best of five;
 * 16 M trips over a stream too long for the predictor to learn.
 *
 * Build and run: gcc -O2 -o /tmp/mispredict_cost datasets/skid/mispredict_cost.c
 *                taskset -c 1 /tmp/mispredict_cost
 * Results: datasets/skid/mispredict-cost-zen4.md */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#include "ticks_per_cycle.h"

#define N (1 << 24)
static unsigned char ops[N];

__attribute__((noinline)) long cond(const unsigned char *p, long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        if (p[i])
            s += i;
        else
            s ^= i;
        __asm__ volatile("" : "+r"(s));
    }
    return s;
}

__attribute__((noinline)) long dispatch(const unsigned char *p, long n)
{
    long a = 1, c = 3;
    for (long i = 0; i < n; i++) {
        switch (p[i]) {
        case 0: a += c; break;
        case 1: c ^= a; break;
        case 2: a = a * 3 + 1; break;
        case 3: c += 7; break;
        case 4: a -= i; break;
        case 5: c = (c << 2) - a; break;
        case 6: a ^= 0x1234; break;
        case 7: c = ~c; break;
        }
        __asm__ volatile("" : "+r"(a), "+r"(c));
    }
    return a ^ c;
}

static double best_ticks(long (*f)(const unsigned char *, long))
{
    double b = 1e30;
    for (int k = 0; k < 5; k++) {
        uint64_t t0 = __rdtsc();
        volatile long r = f(ops, N);
        (void)r;
        uint64_t t1 = __rdtsc();
        if (t1 - t0 < b)
            b = t1 - t0;
    }
    return b;
}

static void measure(const char *name, long (*f)(const unsigned char *, long), int k, double tpc)
{
    for (long i = 0; i < N; i++)
        ops[i] = (unsigned char)(i % k);
    double pred = best_ticks(f) / N / tpc;
    srand(7);
    for (long i = 0; i < N; i++)
        ops[i] = (unsigned char)(rand() % k);
    double rnd = best_ticks(f) / N / tpc;
    double m = 1.0 - 1.0 / k;
    printf("| %s | %d | %.2f | %.2f | %.3f | %.1f |\n", name, k, pred, rnd, m, (rnd - pred) / m);
}

int main(void)
{
    double tpc = ticks_per_cycle();
    printf("TSC ticks per core cycle: %.3f\n\n", tpc);
    printf("| loop | ways | cycles a trip, predictable | random | mispredicts a trip (1 - 1/ways) | cycles per mispredict |\n");
    printf("| --- | --- | --- | --- | --- | --- |\n");
    measure("cond", cond, 2, tpc);
    measure("dispatch", dispatch, 8, tpc);
    measure("dispatch", dispatch, 4, tpc);
    measure("dispatch", dispatch, 2, tpc);
    return 0;
}
