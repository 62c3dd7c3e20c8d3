/* Where do timer samples land relative to the slow instruction?
 * Three loops, selected by argv[1]:
 *   imul  - a dependent imul chain, then independent adds
 *   chase - a pointer chase through 64 MiB (cache misses), then adds
 *   alu   - independent adds only (no long-latency instruction)
 *   branch - a branch on a random bit (xorshift), mispredicted about every
 *            other iteration: where a mispredict's refill lands
 *   steady - the same loop, the branch on a bit that never changes
 *   spread - the same random branch, each path eight independent adds
 *            (four registers): how far past the target a refill's samples
 *            spread
 *   spreadchain - each path eight dependent adds (one register): the
 *            same with a chain that runs exposed after the refill
 *   spreadstore - each path an add, a store, six adds: how long a store
 *            just after the target holds the refilled pipeline
 * Each loop's instructions are labelled skid_<mode>_<k> so their addresses
 * can be found with nm. Iterations from argv[2]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void imul_loop(long n)
{
    long a = 3, b = 5, c = 0, d = 0;
    __asm__ volatile(
        ".globl skid_imul_0\n skid_imul_0: imul %[b], %[a]\n"
        ".globl skid_imul_1\n skid_imul_1: add $1, %[c]\n"
        ".globl skid_imul_2\n skid_imul_2: add $1, %[d]\n"
        ".globl skid_imul_3\n skid_imul_3: dec %[n]\n"
        ".globl skid_imul_4\n skid_imul_4: jnz skid_imul_0\n"
        : [a] "+r"(a), [c] "+r"(c), [d] "+r"(d), [n] "+r"(n)
        : [b] "r"(b));
    printf("%ld %ld %ld\n", a, c, d);
}

static void chase_loop(long n)
{
    size_t words = (64u << 20) / sizeof(void *);
    void **mem = malloc(words * sizeof(void *));
    size_t *perm = malloc(words / 8 * sizeof(size_t));
    if (!mem || !perm)
        return;
    /* One pointer per cache line, visited in a random cyclic order. */
    size_t lines = words / 8;
    for (size_t i = 0; i < lines; i++)
        perm[i] = i;
    unsigned long x = 88172645463325252UL;
    for (size_t i = lines - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t j = x % (i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        mem[perm[i] * 8] = &mem[perm[(i + 1) % lines] * 8];
    void *p = &mem[perm[0] * 8];
    long c = 0, d = 0;
    __asm__ volatile(
        ".globl skid_chase_0\n skid_chase_0: mov (%[p]), %[p]\n"
        ".globl skid_chase_1\n skid_chase_1: add $1, %[c]\n"
        ".globl skid_chase_2\n skid_chase_2: add $1, %[d]\n"
        ".globl skid_chase_3\n skid_chase_3: dec %[n]\n"
        ".globl skid_chase_4\n skid_chase_4: jnz skid_chase_0\n"
        : [p] "+r"(p), [c] "+r"(c), [d] "+r"(d), [n] "+r"(n));
    printf("%p %ld %ld\n", p, c, d);
}

static void alu_loop(long n)
{
    long a = 0, b = 0, c = 0, d = 0, e = 0;
    __asm__ volatile(
        ".globl skid_alu_0\n skid_alu_0: add $1, %[a]\n"
        ".globl skid_alu_1\n skid_alu_1: add $1, %[b]\n"
        ".globl skid_alu_2\n skid_alu_2: add %[a], %[c]\n"
        ".globl skid_alu_3\n skid_alu_3: add %[b], %[d]\n"
        ".globl skid_alu_4\n skid_alu_4: xor %[c], %[e]\n"
        ".globl skid_alu_5\n skid_alu_5: dec %[n]\n"
        ".globl skid_alu_6\n skid_alu_6: jnz skid_alu_0\n"
        : [a] "+r"(a), [b] "+r"(b), [c] "+r"(c), [d] "+r"(d), [e] "+r"(e), [n] "+r"(n));
    printf("%ld %ld\n", d, e);
}

/* A branch on a random bit (taken_rng != 0) or on a constant bit: the two
 * paths are one add each; the xorshift step is the loop's dependency chain. */
static void branch_loop(long n, int random)
{
    unsigned long x = 88172645463325252UL, t = 0, mask = random ? 1 : 0;
    long c = 0, d = 0;
    __asm__ volatile(
        ".globl skid_branch_0\n skid_branch_0: mov %[x], %[t]\n"
        ".globl skid_branch_1\n skid_branch_1: shl $13, %[t]\n"
        ".globl skid_branch_2\n skid_branch_2: xor %[t], %[x]\n"
        ".globl skid_branch_3\n skid_branch_3: mov %[x], %[t]\n"
        ".globl skid_branch_4\n skid_branch_4: shr $7, %[t]\n"
        ".globl skid_branch_5\n skid_branch_5: xor %[t], %[x]\n"
        ".globl skid_branch_6\n skid_branch_6: mov %[x], %[t]\n"
        ".globl skid_branch_7\n skid_branch_7: shl $17, %[t]\n"
        ".globl skid_branch_8\n skid_branch_8: xor %[t], %[x]\n"
        ".globl skid_branch_9\n skid_branch_9: test %[m], %[x]\n"
        ".globl skid_branch_10\n skid_branch_10: jz skid_branch_13\n"
        ".globl skid_branch_11\n skid_branch_11: add $1, %[c]\n"
        ".globl skid_branch_12\n skid_branch_12: jmp skid_branch_14\n"
        ".globl skid_branch_13\n skid_branch_13: add $1, %[d]\n"
        ".globl skid_branch_14\n skid_branch_14: add $1, %[c]\n"
        ".globl skid_branch_15\n skid_branch_15: add $1, %[d]\n"
        ".globl skid_branch_16\n skid_branch_16: dec %[n]\n"
        ".globl skid_branch_17\n skid_branch_17: jnz skid_branch_0\n"
        : [x] "+r"(x), [t] "+r"(t), [c] "+r"(c), [d] "+r"(d), [n] "+r"(n)
        : [m] "r"(mask));
    printf("%lu %ld %ld\n", x, c, d);
}

/* The random branch of branch_loop with longer paths: eight adds on each,
 * on four registers (independent, labels skid_spread_*) or on one (a
 * chain, skid_spreadchain_*), then a join. Label suffixes: 00-10 the
 * xorshift step and the branch, f0-f8 the fall-through path and its jump,
 * t0-t7 the taken path, j0-j1 the join. */
#define SPREAD_PATH(P, p, r1, r2, r3, r4)                              \
    ".globl " P #p "0\n " P #p "0: add $1, %[" r1 "]\n"                 \
    ".globl " P #p "1\n " P #p "1: add $1, %[" r2 "]\n"                 \
    ".globl " P #p "2\n " P #p "2: add $1, %[" r3 "]\n"                 \
    ".globl " P #p "3\n " P #p "3: add $1, %[" r4 "]\n"                 \
    ".globl " P #p "4\n " P #p "4: add $1, %[" r1 "]\n"                 \
    ".globl " P #p "5\n " P #p "5: add $1, %[" r2 "]\n"                 \
    ".globl " P #p "6\n " P #p "6: add $1, %[" r3 "]\n"                 \
    ".globl " P #p "7\n " P #p "7: add $1, %[" r4 "]\n"
/* The xorshift step, the branch on its random bit to t0 (else f0 on),
 * the paths, the join: labels as above. */
#define BRANCH_ASM(P, FALL, TAKEN)                                      \
    ".globl " P "00\n " P "00: mov %[x], %[t]\n"                        \
    ".globl " P "01\n " P "01: shl $13, %[t]\n"                         \
    ".globl " P "02\n " P "02: xor %[t], %[x]\n"                        \
    ".globl " P "03\n " P "03: mov %[x], %[t]\n"                        \
    ".globl " P "04\n " P "04: shr $7, %[t]\n"                          \
    ".globl " P "05\n " P "05: xor %[t], %[x]\n"                        \
    ".globl " P "06\n " P "06: mov %[x], %[t]\n"                        \
    ".globl " P "07\n " P "07: shl $17, %[t]\n"                         \
    ".globl " P "08\n " P "08: xor %[t], %[x]\n"                        \
    ".globl " P "09\n " P "09: test %[m], %[x]\n"                       \
    ".globl " P "10\n " P "10: jz " P "t0\n"                            \
    FALL                                                                \
    ".globl " P "f8\n " P "f8: jmp " P "j0\n"                           \
    TAKEN                                                               \
    ".globl " P "j0\n " P "j0: dec %[n]\n"                              \
    ".globl " P "j1\n " P "j1: jnz " P "00\n"
#define SPREAD_ASM(P, a, b, cc, dd)                                     \
    BRANCH_ASM(P, SPREAD_PATH(P, f, a, b, cc, dd), SPREAD_PATH(P, t, a, b, cc, dd))

/* spread with the second instruction of each path a store (as msort's
 * merge arms: add, store, ...): labels skid_spreadstore_*. */
#define STORE_PATH(P, p)                                                \
    ".globl " P #p "0\n " P #p "0: add $1, %[c]\n"                    \
    ".globl " P #p "1\n " P #p "1: mov %[c], (%[b])\n"                \
    ".globl " P #p "2\n " P #p "2: add $1, %[d]\n"                    \
    ".globl " P #p "3\n " P #p "3: add $1, %[e]\n"                    \
    ".globl " P #p "4\n " P #p "4: add $1, %[f]\n"                    \
    ".globl " P #p "5\n " P #p "5: add $1, %[c]\n"                    \
    ".globl " P #p "6\n " P #p "6: add $1, %[d]\n"                    \
    ".globl " P #p "7\n " P #p "7: add $1, %[e]\n"
#define STORE_ASM(P) BRANCH_ASM(P, STORE_PATH(P, f), STORE_PATH(P, t))

static void spreadstore_loop(long n)
{
    unsigned long x = 88172645463325252UL, t = 0, mask = 1;
    long c = 0, d = 0, e = 0, f = 0;
    static long buf[8];
    long *b = buf;
    __asm__ volatile(STORE_ASM("skid_spreadstore_")
                     : [x] "+r"(x), [t] "+r"(t), [c] "+r"(c), [d] "+r"(d),
                       [e] "+r"(e), [f] "+r"(f), [n] "+r"(n)
                     : [m] "r"(mask), [b] "r"(b)
                     : "memory");
    printf("%lu %ld %ld %ld %ld %ld\n", x, c, d, e, f, buf[0]);
}

static void spread_loop(long n, int chain)
{
    unsigned long x = 88172645463325252UL, t = 0, mask = 1;
    long c = 0, d = 0, e = 0, f = 0;
    if (chain)
        __asm__ volatile(SPREAD_ASM("skid_spreadchain_", "c", "c", "c", "c")
                         : [x] "+r"(x), [t] "+r"(t), [c] "+r"(c), [d] "+r"(d),
                           [e] "+r"(e), [f] "+r"(f), [n] "+r"(n)
                         : [m] "r"(mask));
    else
        __asm__ volatile(SPREAD_ASM("skid_spread_", "c", "d", "e", "f")
                         : [x] "+r"(x), [t] "+r"(t), [c] "+r"(c), [d] "+r"(d),
                           [e] "+r"(e), [f] "+r"(f), [n] "+r"(n)
                         : [m] "r"(mask));
    printf("%lu %ld %ld %ld %ld\n", x, c, d, e, f);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "imul";
    long n = argc > 2 ? atol(argv[2]) : 300000000L;
    if (!strcmp(mode, "imul"))
        imul_loop(n);
    else if (!strcmp(mode, "chase"))
        chase_loop(n);
    else if (!strcmp(mode, "branch"))
        branch_loop(n, 1);
    else if (!strcmp(mode, "steady"))
        branch_loop(n, 0);
    else if (!strcmp(mode, "spread"))
        spread_loop(n, 0);
    else if (!strcmp(mode, "spreadchain"))
        spread_loop(n, 1);
    else if (!strcmp(mode, "spreadstore"))
        spreadstore_loop(n);
    else
        alu_loop(n);
    return 0;
}
