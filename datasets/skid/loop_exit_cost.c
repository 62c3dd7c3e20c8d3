/* What a loop's exit costs when it mispredicts, on real hardware (rdtsc,
 * no PMU): codec's `rle_decode` (the same source, gcc -O2, so the same
 * instructions as the recorded datasets/analyzer/codec) decoding 256 KB
 * of (count, byte) pairs (the workload's own function and buffers, its
 * source included) whose counts are all `RUN` (a trip count the
 * predictor can learn) or drawn from 1..16 as codec's input has them
 * (RUN 0: the inner loop's exit mispredicts about once a run). Prints
 * cycles a trip and a run (best of 50 decodes, pinned by the caller).
 * The difference between the two kinds of input at the same trips a run is
 * what the exit's mispredict costs, all of it: the loop's share (what the
 * analyzer calls X, `loop_exit_cycles`) and the refetch at its target.
 * Usage: gcc -O2 -o loop_exit_cost loop_exit_cost.c && taskset -c 1 ./loop_exit_cost RUN */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "ticks_per_cycle.h"

/* codec itself, its `main` renamed: its `rle_decode` and its buffers. */
#define main codec_main
#include "../workloads/codec.c"
#undef main

int main(int argc, char **argv)
{
    int fixed = argc > 1 ? atoi(argv[1]) : 0;
    unsigned long seed = 12345;
    size_t p = 0, total = 0;
    for (;;) {
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        size_t run = fixed ? (size_t)fixed : 1 + (seed >> 60);
        if (total + run > LEN)
            break;
        packed[p++] = (unsigned char)run;
        packed[p++] = (unsigned char)(seed >> 40);
        total += run;
    }
    double tpc = ticks_per_cycle(), best = 1e30;
    for (int k = 0; k < 50; k++) {
        uint64_t t0 = __rdtsc();
        size_t d = rle_decode(packed, p, output);
        uint64_t t1 = __rdtsc();
        if (d != total)
            return 1;
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    double cycles = best / tpc;
    printf("runs %s: %zu trips, %zu runs: %.3f cycles a trip, %.2f a run\n",
           fixed ? argv[1] : "1..16", total, p / 2, cycles / total, cycles / (p / 2));
    return 0;
}
