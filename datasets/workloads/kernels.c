/* Compute kernels whose data stay in the L1 cache, so their cycles are
 * mostly what a best-case pipeline model predicts: the analyzer's accuracy
 * workload (frequencies against callgrind's exact counts) and its CFG
 * shapes (a jump-table interpreter, nested loops, a tail call, a noreturn
 * call). Deterministic: argv[1] scales the work (default 200). */
#include <stdio.h>
#include <stdlib.h>

#define N 64
static int a[N][N], b[N][N], c[N][N];
static int data[512];

__attribute__((noinline)) void matmul(void)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            int s = 0;
            for (int k = 0; k < N; k++)
                s += a[i][k] * b[k][j];
            c[i][j] = s;
        }
}

/* Insertion sort of a small array that fits in L1. */
__attribute__((noinline)) void isort(int *v, int n)
{
    for (int i = 1; i < n; i++) {
        int x = v[i], j = i - 1;
        while (j >= 0 && v[j] > x) {
            v[j + 1] = v[j];
            j--;
        }
        v[j + 1] = x;
    }
}

/* A byte-code interpreter: a switch gcc compiles to a jump table. */
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

/* Branches on data: taken on about half the elements, in a fixed pattern. */
__attribute__((noinline)) long branchy(const int *v, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++) {
        if (v[i] & 4)
            s += v[i];
        else
            s -= v[i] >> 1;
    }
    return s;
}

__attribute__((noinline)) void fail(const char *why)
{
    fprintf(stderr, "kernels: %s\n", why);
    exit(2);
}

/* A tail call: gcc -O2 turns the call into a jump. */
__attribute__((noinline)) long checked(const int *v, int n)
{
    if (n <= 0)
        fail("empty input");
    return branchy(v, n);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    unsigned rng = 12345;
    unsigned char code[4096];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = (i * 7 + j) % 13;
            b[i][j] = (i + j * 3) % 11;
        }
    for (int i = 0; i < 4096; i++) {
        rng = rng * 1103515245 + 12345;
        code[i] = (rng >> 16) % 9;
    }
    long total = 0;
    for (int r = 0; r < reps; r++) {
        matmul();
        total += c[r % N][(r * 3) % N];
        for (int i = 0; i < 512; i++) {
            rng = rng * 1103515245 + 12345;
            data[i] = (rng >> 16) & 1023;
        }
        isort(data, 128);
        total += checked(data, 512);
        total = interp(code, 4096, total);
    }
    printf("%ld\n", total);
    return 0;
}
