/* A shared library whose work is done by unexported (static) functions:
 * once stripped, only .dynsym names the exported ones and only .eh_frame
 * says where the hidden ones are (as in Debian's liblzma, whose encoder
 * is all static functions). */
static __attribute__((noinline)) long hidden_sum(long n)
{
    volatile long acc = 0;
    for (long i = 0; i < n; i++)
        acc += i ^ (i >> 3);
    return acc;
}

static __attribute__((noinline)) long hidden_twice(long n)
{
    return hidden_sum(n) + hidden_sum(n / 2);
}

long exported_entry(long n)
{
    return hidden_twice(n) + 1;
}

long exported_after(long n)
{
    return n * 3 + hidden_sum(n & 7);
}
