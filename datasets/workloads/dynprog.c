/* Dynamic programming and number formatting, argv[1] rounds (default 60):
 * Levenshtein distance over pairs of short words (a 2-D loop whose inner
 * body takes a minimum of three neighbours), the longest common subsequence
 * of two longer strings (a branchy inner loop on equal characters), a 0/1
 * knapsack over one row (an inner loop running backwards with a data-
 * dependent max), and integers printed in a base read at run time (the
 * divider on the critical path, a short loop whose trip count is the
 * number's length) then parsed back. Held out (session 31, written so the
 * held-out `matchers` may be looked into): measured only as a whole
 * (accuracy workload, checked against callgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS 512
#define WORD 24
#define SEQ 700
#define ITEMS 120
#define CAP 4000
#define NUMS 20000

static char words[WORDS][WORD + 1];
static char seq_a[SEQ + 1], seq_b[SEQ + 1];
static int weight[ITEMS], value[ITEMS];
static int best[CAP + 1];
static unsigned nums[NUMS];
static unsigned rng = 4242;

static unsigned next(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}

__attribute__((noinline)) int levenshtein(const char *a, const char *b)
{
    int la = strlen(a), lb = strlen(b);
    int row[WORD + 1];
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int cost = a[i - 1] != b[j - 1];
            int m = diag + cost;
            if (up + 1 < m)
                m = up + 1;
            if (row[j - 1] + 1 < m)
                m = row[j - 1] + 1;
            row[j] = m;
            diag = up;
        }
    }
    return row[lb];
}

__attribute__((noinline)) int lcs(const char *a, const char *b, int n)
{
    static int prev[SEQ + 1], cur[SEQ + 1];
    memset(prev, 0, sizeof prev);
    for (int i = 1; i <= n; i++) {
        cur[0] = 0;
        char c = a[i - 1];
        for (int j = 1; j <= n; j++) {
            if (b[j - 1] == c)
                cur[j] = prev[j - 1] + 1;
            else if (prev[j] > cur[j - 1])
                cur[j] = prev[j];
            else
                cur[j] = cur[j - 1];
        }
        memcpy(prev, cur, sizeof cur);
    }
    return prev[n];
}

__attribute__((noinline)) int knapsack(int cap)
{
    memset(best, 0, sizeof best);
    for (int k = 0; k < ITEMS; k++) {
        int w = weight[k], v = value[k];
        for (int c = cap; c >= w; c--) {
            int with = best[c - w] + v;
            if (with > best[c])
                best[c] = with;
        }
    }
    return best[cap];
}

__attribute__((noinline)) int format_base(unsigned x, unsigned base, char *out)
{
    char tmp[40];
    int n = 0;
    do {
        unsigned d = x % base;
        tmp[n++] = d < 10 ? '0' + d : 'a' + d - 10;
        x /= base;
    } while (x);
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    return n;
}

__attribute__((noinline)) unsigned parse_base(const char *s, unsigned base)
{
    unsigned x = 0;
    for (; *s; s++) {
        unsigned d = *s <= '9' ? (unsigned)(*s - '0') : (unsigned)(*s - 'a' + 10);
        x = x * base + d;
    }
    return x;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 60;
    unsigned base = argc > 2 ? (unsigned)atoi(argv[2]) : 7;
    for (int w = 0; w < WORDS; w++) {
        int len = 6 + next() % (WORD - 6);
        for (int i = 0; i < len; i++)
            words[w][i] = 'a' + next() % 6;
        words[w][len] = '\0';
    }
    for (int i = 0; i < SEQ; i++) {
        seq_a[i] = 'a' + next() % 4;
        seq_b[i] = 'a' + next() % 4;
    }
    for (int k = 0; k < ITEMS; k++) {
        weight[k] = 20 + next() % 300;
        value[k] = 1 + next() % 1000;
    }
    for (int i = 0; i < NUMS; i++)
        nums[i] = next() >> (next() % 20);
    long sum = 0;
    char buf[40];
    for (int r = 0; r < rounds; r++) {
        for (int p = 0; p < 512; p++) {
            int a = (r * 97 + p * 31) % WORDS, b = (r * 13 + p * 7 + 1) % WORDS;
            sum += levenshtein(words[a], words[b]);
        }
        if (r % 4 == 0)
            sum += lcs(seq_a, seq_b, SEQ);
        if (r % 3 == 0)
            sum += knapsack(CAP - r % 7);
        for (int i = r % 4; i < NUMS; i += 4) {
            int n = format_base(nums[i], base + (i & 1) * 4, buf);
            sum += n + (parse_base(buf, base + (i & 1) * 4) == nums[i]);
        }
    }
    printf("%ld\n", sum);
    return 0;
}
