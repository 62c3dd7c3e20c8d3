/* SLEEPY's `loop` benchmark: one for loop adding the iteration index to a
 * running total. Iterations from argv[1] (default one billion). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000000L;
    volatile long total = 0;
    for (long i = 0; i < n; i++)
        total += i;
    printf("%ld\n", (long)total);
    return 0;
}
