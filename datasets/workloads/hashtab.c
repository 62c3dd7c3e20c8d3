/* An open-addressing hash table (linear probing) of 64-bit keys: argv[1]
 * rounds (default 40) of inserts and lookups, half of them misses, on a
 * table that fits in L2. Data-dependent probe loops and early exits give
 * the analyzer short blocks with uneven frequencies (accuracy workload,
 * checked against callgrind). */
#include <stdio.h>
#include <stdlib.h>

#define SLOTS (1 << 15)
#define KEYS 20000
static unsigned long table[SLOTS];
static unsigned long rng = 0x9e3779b97f4a7c15UL;

__attribute__((noinline)) static unsigned long next_key(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng | 1; /* 0 marks an empty slot */
}

__attribute__((noinline)) static unsigned hash(unsigned long k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdUL;
    k ^= k >> 29;
    return (unsigned)k & (SLOTS - 1);
}

__attribute__((noinline)) int insert(unsigned long k)
{
    unsigned h = hash(k);
    while (table[h] != 0) {
        if (table[h] == k)
            return 0;
        h = (h + 1) & (SLOTS - 1);
    }
    table[h] = k;
    return 1;
}

__attribute__((noinline)) int contains(unsigned long k)
{
    for (unsigned h = hash(k);; h = (h + 1) & (SLOTS - 1)) {
        if (table[h] == k)
            return 1;
        if (table[h] == 0)
            return 0;
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 40;
    static unsigned long keys[KEYS];
    long found = 0, added = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < SLOTS; i++)
            table[i] = 0;
        for (int i = 0; i < KEYS; i++) {
            keys[i] = next_key();
            added += insert(keys[i]);
        }
        for (int i = 0; i < KEYS; i++) {
            found += contains(keys[i]);
            found += contains(next_key());
        }
    }
    printf("added %ld found %ld\n", added, found);
    return 0;
}
