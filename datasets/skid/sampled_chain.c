/* A dependent-add chain timed by the wall clock: the core clock the code
 * gets. Run alone and under `perf record -e cpu-clock -F RATE` to see what
 * sampling costs the sampled code (BENCHMARKS.md, "what sampling costs").
 *   gcc -O2 -o sampled_chain sampled_chain.c && ./sampled_chain 20000000 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    uint64_t a = 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        __asm__ volatile(".rept 100\n add %0,%0\n .endr" : "+r"(a));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("%.3f GHz effective (%.3f s)\n", n * 100 / s / 1e9, s);
    return a == 7;
}
