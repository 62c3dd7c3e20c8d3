/* Text processing over a generated document, argv[1] passes (default 400):
 * a tokenizer driven by a character-class table, word counting in a
 * chained hash table (linked-list walks), a per-word transform picked
 * through a table of function pointers (indirect calls), and a multi-word
 * checksum with carries. Held out from the analyzer's tuning (session 25):
 * its accuracy tells whether rules found on the other five workloads carry
 * over (accuracy workload, checked against callgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT (1 << 18)
#define BUCKETS 4096
#define MAXWORDS 60000

enum { SPACE, ALPHA, DIGIT, PUNCT };
static unsigned char cls[256];
static char text[TEXT + 1];

struct word {
    struct word *next;
    unsigned hash;
    int len, count;
    char s[24];
};
static struct word pool[MAXWORDS];
static int used;
static struct word *bucket[BUCKETS];

__attribute__((noinline)) unsigned hash_word(const char *s, int n)
{
    unsigned h = 2166136261u;
    for (int i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

__attribute__((noinline)) struct word *intern(const char *s, int n)
{
    unsigned h = hash_word(s, n);
    struct word **p = &bucket[h & (BUCKETS - 1)];
    for (struct word *w = *p; w; w = w->next)
        if (w->hash == h && w->len == n && memcmp(w->s, s, n) == 0)
            return w;
    if (used == MAXWORDS)
        return NULL;
    struct word *w = &pool[used++];
    w->hash = h;
    w->len = n;
    w->count = 0;
    memcpy(w->s, s, n);
    w->next = *p;
    *p = w;
    return w;
}

static long upper(const struct word *w) { return w->s[0] & ~0x20; }
static long weigh(const struct word *w) { return (long)w->len * w->count; }
static long mix(const struct word *w) { return (long)(w->hash >> 7) ^ w->count; }
static long parity(const struct word *w) { return __builtin_popcount(w->hash) & 1; }
static long (*const transform[4])(const struct word *) = {upper, weigh, mix, parity};

/* One pass: tokens by character class, each word interned and transformed. */
__attribute__((noinline)) long tokenize(void)
{
    long acc = 0;
    int i = 0;
    while (i < TEXT) {
        int c = cls[(unsigned char)text[i]];
        if (c == ALPHA) {
            int start = i;
            while (i < TEXT && cls[(unsigned char)text[i]] == ALPHA && i - start < 23)
                i++;
            struct word *w = intern(text + start, i - start);
            if (w) {
                w->count++;
                acc += transform[w->hash & 3](w);
            }
        } else if (c == DIGIT) {
            long v = 0;
            while (i < TEXT && cls[(unsigned char)text[i]] == DIGIT)
                v = v * 10 + (text[i++] - '0');
            acc ^= v;
        } else {
            acc += c;
            i++;
        }
    }
    return acc;
}

/* A 256-bit running sum of the counts: carries through four words. */
__attribute__((noinline)) void checksum(unsigned long sum[4])
{
    for (int k = 0; k < used; k++) {
        unsigned __int128 t = (unsigned __int128)sum[0] + (unsigned long)pool[k].count * 0x9e3779b97f4a7c15UL;
        sum[0] = (unsigned long)t;
        for (int j = 1; j < 4; j++) {
            t = (unsigned __int128)sum[j] + (unsigned long)(t >> 64);
            sum[j] = (unsigned long)t;
        }
    }
}

int main(int argc, char **argv)
{
    int passes = argc > 1 ? atoi(argv[1]) : 400;
    for (int c = 0; c < 256; c++)
        cls[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ? ALPHA
                 : (c >= '0' && c <= '9')                           ? DIGIT
                 : (c == ' ' || c == '\n')                          ? SPACE
                                                                    : PUNCT;
    /* Words from a small vocabulary with a skewed choice, numbers and punctuation. */
    unsigned rng = 12345;
    for (int i = 0; i < TEXT;) {
        rng = rng * 1103515245 + 12345;
        unsigned r = rng >> 8;
        if (r % 10 == 0) {
            int n = 1 + (r >> 4) % 5;
            for (int k = 0; k < n && i < TEXT; k++)
                text[i++] = '0' + (r >> (k + 8)) % 10;
        } else {
            int len = 2 + (r >> 4) % 9;
            unsigned id = (r >> 9) % ((r & 0x100) ? 200 : 20000);
            unsigned long h = (id + 1) * 0x9e3779b97f4a7c15UL;
            for (int k = 0; k < len && i < TEXT; k++, h >>= 5)
                text[i++] = 'a' + h % 26;
        }
        if (i < TEXT)
            text[i++] = (r & 0x30) == 0x30 ? ',' : ' ';
    }
    long acc = 0;
    unsigned long sum[4] = {0, 0, 0, 0};
    for (int p = 0; p < passes; p++) {
        acc += tokenize();
        checksum(sum);
    }
    printf("words %d acc %ld sum %lx\n", used, acc, sum[3] ^ sum[0]);
    return 0;
}
