/* A shared library with a hot function, for PIE + shared-library tests. */
__attribute__((noinline)) long work_hot(long n)
{
    volatile long acc = 0;
    for (long i = 0; i < n; i++)
        acc += i ^ (i >> 3);
    return acc;
}
