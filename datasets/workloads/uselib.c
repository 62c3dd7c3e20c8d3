/* Calls work_hot() in libwork.so; built as a stripped PIE by the tests. */
#include <stdio.h>
#include <stdlib.h>

long work_hot(long n);

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000000L;
    printf("%ld\n", work_hot(n));
    return 0;
}
