/* Known answers for the culprit analysis: each function stalls for one
 * reason, by construction.
 *   chase          random pointer chase over 64 MiB: D-cache/DTLB misses
 *   branch_random  a data-dependent branch on random bytes: mispredicts
 *   branch_sorted  the same loop on sorted bytes: predicted
 *   divchain       dependent 64-bit divides: the divider
 *   mulchain       dependent 64-bit multiplies: the chain through imul
 *                  (3 cycles each, pipelined: a dependency, not a busy unit)
 *   forward        a 4-byte store, then an 8-byte load of the same place: the
 *                  load is not contained in the store, forwarding fails and it
 *                  waits for the store to commit (~12 cycles here; a plain
 *                  store/load round trip costs ~1.5 on Golden Cove, which
 *                  forwards it almost for free)
 * argv[1] scales the work (default 1). */
#include <stdio.h>
#include <stdlib.h>

#define CHASE (8u << 20) /* 8 Mi pointers = 64 MiB */
#define BYTES 65536

__attribute__((noinline)) long chase(long *next, long steps)
{
    long p = 0;
    for (long i = 0; i < steps; i++)
        p = next[p];
    return p;
}

static inline __attribute__((always_inline)) long branch_loop(const unsigned char *v, int n, int reps)
{
    long sum = 0;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < n; i++) {
            if (v[i] >= 128) {
                sum += v[i];
                __asm__ volatile("" ::: "memory"); /* keep it a branch */
            }
        }
    return sum;
}

__attribute__((noinline)) long branch_random(const unsigned char *v, int n, int reps)
{
    return branch_loop(v, n, reps);
}

__attribute__((noinline)) long branch_sorted(const unsigned char *v, int n, int reps)
{
    return branch_loop(v, n, reps) + 1;
}

/* The divisor comes from the caller so gcc cannot turn it into a multiply. */
__attribute__((noinline)) unsigned long divchain(unsigned long x, unsigned long d, long steps)
{
    for (long i = 0; i < steps; i++)
        x = x / d + 0x123456789abcdefUL;
    return x;
}

/* The multiplier comes from the caller so gcc keeps the imul. */
__attribute__((noinline)) unsigned long mulchain(unsigned long x, unsigned long m, long steps)
{
    for (long i = 0; i < steps; i++)
        x = x * m;
    return x;
}

union pair {
    long whole;
    int half[2];
};

__attribute__((noinline)) long forward(union pair *p, long steps)
{
    long s = 0;
    for (long i = 0; i < steps; i++) {
        ((volatile int *)p->half)[0] = (int)(i + s);
        s = *(volatile long *)&p->whole;
    }
    return s;
}

static int cmp(const void *a, const void *b)
{
    return *(const unsigned char *)a - *(const unsigned char *)b;
}

int main(int argc, char **argv)
{
    long scale = argc > 1 ? atol(argv[1]) : 1;
    unsigned long rng = 88172645463325252UL;
    long *next = malloc(CHASE * sizeof(long));
    unsigned char *rnd = malloc(BYTES), *sorted = malloc(BYTES);
    if (!next || !rnd || !sorted)
        return 1;
    /* One random cycle through all slots (Sattolo's algorithm). */
    for (long i = 0; i < (long)CHASE; i++)
        next[i] = i;
    for (long i = CHASE - 1; i > 0; i--) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        long j = rng % i, t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    for (int i = 0; i < BYTES; i++) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        rnd[i] = sorted[i] = rng & 255;
    }
    qsort(sorted, BYTES, 1, cmp);
    long r = chase(next, 4000000 * scale);
    r += branch_random(rnd, BYTES, 600 * scale);
    r += branch_sorted(sorted, BYTES, 600 * scale);
    r += divchain(r, 3 + (argc > 2), 8000000 * scale);
    r += mulchain(r | 1, 0x9e3779b97f4a7c15UL + (argc > 2), 60000000 * scale);
    union pair pair = {0};
    r += forward(&pair, 40000000 * scale);
    printf("%ld\n", r);
    return 0;
}
