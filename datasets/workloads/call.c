/* SLEEPY's `call` benchmark: an outer loop of argv[1] iterations (default one
 * hundred thousand) adds the result of loop(i), which sums 0..i-1. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long loop(long n)
{
    volatile long total = 0;
    for (long i = 0; i < n; i++)
        total += i;
    return total;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000L;
    long total = 0;
    for (long i = 0; i < n; i++)
        total += loop(i);
    printf("%ld\n", total);
    return 0;
}
