/* Benchmark workload: a fixed amount of CPU-bound work (integer mixing plus a
 * random walk over a 4 MiB table, so cache state matters as in real code).
 * Prints the seconds its own work took (so tool start-up is not counted) and
 * its own user and system CPU time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 400000000L;
    enum { N = 1 << 19 };
    static unsigned long table[N];
    for (long i = 0; i < N; i++)
        table[i] = i * 0x9E3779B97F4A7C15UL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long x = 1, idx = 0;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if ((i & 15) == 0) {
            idx = (idx + table[x & (N - 1)]) & (N - 1);
            table[idx] += x;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* work seconds, own user and system CPU seconds, checksum */
    printf("%.6f %.6f %.6f %lu\n", s, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, x ^ idx);
    return 0;
}
