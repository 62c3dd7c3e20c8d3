/* Load-to-use latency by addressing mode: dependent chains of 100 loads
 * whose result is the next address (or index), timed by the wall clock and
 * turned into cycles at the core clock given (GHz, default 3.69: run
 * `dcpi calibrate` for this host's). On the Zen 4 host of session 15: base,
 * base+disp and base+index 4.02 cycles; base+index*2|4|8, base+index+disp
 * 5.02; a load-op `add (%rbx,%rax,4),%rax` 6.04. A load into xmm and the
 * move back: 9.05 plain, 10.05 scaled here, but 10.05 both in another
 * program of the same chains: not modeled. The zen4 description's
 * `complex_address_latency = 1` comes from here (BENCHMARKS.md).
 *   gcc -O2 -o indexed_load_latency indexed_load_latency.c && ./indexed_load_latency 3.69 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t table[1024] __attribute__((aligned(64)));
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static double ghz = 3.69;
static const long N = 500000;

#define CHAIN(name, text, init)                                                        \
    do {                                                                               \
        double best = 1e9;                                                             \
        for (int r = 0; r < 15; r++) {                                                 \
            uint64_t x = (init);                                                       \
            uint64_t *b = table;                                                       \
            double t0 = now();                                                         \
            for (long i = 0; i < N; i++)                                               \
                __asm__ volatile(".rept 100\n" text "\n.endr" : "+r"(x) : "r"(b) : "xmm0");     \
            double t = now() - t0;                                                     \
            if (t < best) best = t;                                                    \
        }                                                                              \
        printf("%-28s %.2f cycles\n", name, best * ghz * 1e9 / (N * 100.0));           \
    } while (0)

int main(int argc, char **argv) {
    if (argc > 1) ghz = atof(argv[1]);
    /* Pointer chases: every entry used points at itself. */
    table[0] = (uint64_t)&table[0];
    table[1] = (uint64_t)&table[0];
    CHAIN("mov (%0),%0", "mov (%0),%0", (uint64_t)&table[0]);
    CHAIN("mov 8(%0),%0", "mov 8(%0),%0", (uint64_t)&table[0]);
    /* Index chases: the index stays 0 (table[0..] reads as 0 below). */
    for (int i = 0; i < 1024; i++) table[i] = 0;
    CHAIN("mov (%1,%0),%0", "mov (%1,%0),%0", 0);
    CHAIN("mov (%1,%0,2),%0", "mov (%1,%0,2),%0", 0);
    CHAIN("mov (%1,%0,4),%0", "mov (%1,%0,4),%0", 0);
    CHAIN("mov (%1,%0,8),%0", "mov (%1,%0,8),%0", 0);
    CHAIN("mov 8(%1,%0),%0", "mov 8(%1,%0),%0", 0);
    CHAIN("mov 8(%1,%0,8),%0", "mov 8(%1,%0,8),%0", 0);
    CHAIN("add (%1,%0,4),%0 (load-op)", "add (%1,%0,4),%0", 0);
    CHAIN("add (%1,%0),%0 (load-op)", "add (%1,%0),%0", 0);
    /* Into an xmm register and back (9.05 / 10.05 here; see the header). */
    CHAIN("movq (%1,%0),%xmm0; movq back", "movq (%1,%0),%%xmm0\nmovq %%xmm0,%0", 0);
    CHAIN("movq (%1,%0,8),%xmm0; movq back", "movq (%1,%0,8),%%xmm0\nmovq %%xmm0,%0", 0);
    return 0;
}
