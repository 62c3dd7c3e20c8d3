/* A recursive merge sort of argv[1] (default 200000) pseudo-random ints,
 * repeated argv[2] times (default 6), through a comparison function that
 * is called, not inlined: call-heavy code where a callee's frequency is the
 * sum of its call sites' (accuracy workload, checked against callgrind). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int compare(int a, int b)
{
    return (a > b) - (a < b);
}

__attribute__((noinline)) void merge(int *v, int *tmp, int lo, int mid, int hi)
{
    int i = lo, j = mid, k = lo;
    while (i < mid && j < hi)
        tmp[k++] = compare(v[i], v[j]) <= 0 ? v[i++] : v[j++];
    while (i < mid)
        tmp[k++] = v[i++];
    while (j < hi)
        tmp[k++] = v[j++];
    for (k = lo; k < hi; k++)
        v[k] = tmp[k];
}

__attribute__((noinline)) void msort(int *v, int *tmp, int lo, int hi)
{
    if (hi - lo < 2)
        return;
    int mid = lo + (hi - lo) / 2;
    msort(v, tmp, lo, mid);
    msort(v, tmp, mid, hi);
    merge(v, tmp, lo, mid, hi);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    int reps = argc > 2 ? atoi(argv[2]) : 6;
    int *v = malloc(n * sizeof *v), *tmp = malloc(n * sizeof *tmp);
    if (!v || !tmp)
        return 1;
    unsigned long seed = 7;
    long check = 0;
    for (int r = 0; r < reps; r++) {
        for (int i = 0; i < n; i++) {
            seed = seed * 6364136223846793005UL + 1442695040888963407UL;
            v[i] = (int)(seed >> 33);
        }
        msort(v, tmp, 0, n);
        for (int i = 1; i < n; i++)
            if (v[i - 1] > v[i])
                return 1;
        check += v[n / 2];
    }
    printf("median sum %ld\n", check);
    return 0;
}
