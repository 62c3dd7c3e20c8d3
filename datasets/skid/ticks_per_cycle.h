/* TSC ticks per core cycle on this host, rdtsc alone (no PMU): a
 * dependent add chain runs one add a cycle; best of five runs of 80 M
 * adds. Shared by the experiments in this directory. */
#include <stdint.h>
#include <x86intrin.h>

__attribute__((noinline)) static long add_chain(long n)
{
    long x = 0;
    for (long i = 0; i < n; i++)
        __asm__ volatile("add $1,%0\n\tadd $1,%0\n\tadd $1,%0\n\tadd $1,%0" : "+r"(x));
    return x;
}

static double ticks_per_cycle(void)
{
    double b = 1e30;
    for (int k = 0; k < 5; k++) {
        uint64_t t0 = __rdtsc();
        add_chain(20000000);
        uint64_t t1 = __rdtsc();
        if (t1 - t0 < b)
            b = t1 - t0;
    }
    return b / (20000000.0 * 4);
}
