/* Matching and encoding, argv[1] rounds (default 60): Kernighan and Pike's
 * regular-expression matcher (match, matchhere, matchstar: recursion, short
 * loops that leave early, calls in loops) over lines of generated text, a
 * base64 encoder and decoder (table lookups, a loop over 3- and 4-byte
 * groups, a tail), and a Bloom filter whose k probes each call a separate
 * hash function (short leaves called from a loop). Held out (session 30,
 * written so the held-out `search` may be looked into): measured only as a
 * whole (accuracy workload, checked against callgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINES 2048
#define LINE 80
#define B64 (1 << 17)
#define BLOOM_BITS (1 << 17)
#define KEYS 40000

static char lines[LINES][LINE + 1];
static unsigned char raw[B64], back[B64];
static char coded[B64 / 3 * 4 + 8];
static unsigned long bloom[BLOOM_BITS / 64];
static unsigned rng = 777;

static unsigned next(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng >> 9;
}

__attribute__((noinline)) static int matchhere(const char *re, const char *text);

__attribute__((noinline)) static int matchstar(int c, const char *re, const char *text)
{
    do {
        if (matchhere(re, text))
            return 1;
    } while (*text != '\0' && (*text++ == c || c == '.'));
    return 0;
}

__attribute__((noinline)) static int matchhere(const char *re, const char *text)
{
    if (re[0] == '\0')
        return 1;
    if (re[1] == '*')
        return matchstar(re[0], re + 2, text);
    if (re[0] == '$' && re[1] == '\0')
        return *text == '\0';
    if (*text != '\0' && (re[0] == '.' || re[0] == *text))
        return matchhere(re + 1, text + 1);
    return 0;
}

__attribute__((noinline)) int match(const char *re, const char *text)
{
    if (re[0] == '^')
        return matchhere(re + 1, text);
    do {
        if (matchhere(re, text))
            return 1;
    } while (*text++ != '\0');
    return 0;
}

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

__attribute__((noinline)) size_t b64_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0);
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    return o;
}

static signed char decode_table[256];

__attribute__((noinline)) size_t b64_decode(const char *in, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        int a = decode_table[(unsigned char)in[i]], b = decode_table[(unsigned char)in[i + 1]];
        int c = decode_table[(unsigned char)in[i + 2]], d = decode_table[(unsigned char)in[i + 3]];
        out[o++] = (unsigned char)(a << 2 | b >> 4);
        if (in[i + 2] == '=')
            break;
        out[o++] = (unsigned char)(b << 4 | c >> 2);
        if (in[i + 3] == '=')
            break;
        out[o++] = (unsigned char)(c << 6 | d);
    }
    return o;
}

__attribute__((noinline)) unsigned hash_a(unsigned long k)
{
    k ^= k >> 31;
    k *= 0x7fb5d329728ea185UL;
    return (unsigned)(k >> 27) & (BLOOM_BITS - 1);
}

__attribute__((noinline)) unsigned hash_b(unsigned long k)
{
    k *= 0x81dadef4bc2dd44dUL;
    k ^= k >> 29;
    return (unsigned)k & (BLOOM_BITS - 1);
}

__attribute__((noinline)) unsigned hash_c(unsigned long k)
{
    unsigned h = 2166136261u;
    for (int i = 0; i < 8; i++) {
        h ^= (unsigned)(k >> (8 * i)) & 0xff;
        h *= 16777619u;
    }
    return h & (BLOOM_BITS - 1);
}

typedef unsigned (*hash_fn)(unsigned long);
static hash_fn probes[3] = {hash_a, hash_b, hash_c};

__attribute__((noinline)) void bloom_add(unsigned long k)
{
    for (int i = 0; i < 3; i++) {
        unsigned h = probes[i](k);
        bloom[h >> 6] |= 1UL << (h & 63);
    }
}

__attribute__((noinline)) int bloom_has(unsigned long k)
{
    for (int i = 0; i < 3; i++) {
        unsigned h = probes[i](k);
        if (!(bloom[h >> 6] >> (h & 63) & 1))
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 60;
    static const char *patterns[] = {"ab*c", "^x.*y$", "q.z", "a.*b.*c", "mm*n", "e$"};
    const char letters[] = "abcdeqxyzmn   ";
    for (int l = 0; l < LINES; l++) {
        int len = 20 + (int)(next() % (LINE - 20));
        for (int i = 0; i < len; i++)
            lines[l][i] = letters[next() % (sizeof letters - 1)];
        lines[l][len] = '\0';
    }
    for (int i = 0; i < 64; i++)
        decode_table[(unsigned char)alphabet[i]] = (signed char)i;
    for (int i = 0; i < B64; i++)
        raw[i] = (unsigned char)next();
    long hits = 0, present = 0;
    unsigned long sum = 0;
    for (int r = 0; r < rounds; r++) {
        for (int l = 0; l < LINES; l++)
            for (int p = 0; p < 6; p++)
                hits += match(patterns[p], lines[l]);
        size_t n = B64 - (size_t)(r % 3);
        size_t c = b64_encode(raw, n, coded);
        size_t d = b64_decode(coded, c, back);
        if (d != n || memcmp(raw, back, n) != 0) {
            fprintf(stderr, "matchers: base64 round trip failed\n");
            return 1;
        }
        sum = sum * 31 + coded[r % c];
        memset(bloom, 0, sizeof bloom);
        for (int k = 0; k < KEYS; k++)
            bloom_add((unsigned long)next() << 20 ^ next());
        for (int k = 0; k < KEYS; k++)
            present += bloom_has((unsigned long)next() << 20 ^ next());
    }
    printf("hits %ld present %ld sum %lu\n", hits, present, sum);
    return 0;
}
