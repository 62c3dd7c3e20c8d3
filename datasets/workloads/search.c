/* Searching and sparse arithmetic, argv[1] rounds (default 400): a
 * Boyer-Moore-Horspool search of a few patterns in a generated text (a skip
 * loop whose trip count follows the text, an inner compare loop that mostly
 * fails at once), a sparse matrix-vector product in CSR form (rows of 0-31
 * entries, indirect loads), and an insertion sort of many short arrays (a
 * data-dependent inner loop of a few trips). Held out (session 29): measured
 * only as a whole, so a later session can tell whether the analyzer's rules
 * carry over to code none of them was tuned on (accuracy workload, checked
 * against callgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT (1 << 16)
#define ROWS 4096
#define COLS 4096
#define MAXNZ (ROWS * 32)
#define SORTS 4096

static unsigned char text[TEXT];
static int row_start[ROWS + 1], col[MAXNZ];
static double val[MAXNZ], x[COLS], y[ROWS];
static int small[SORTS][24];
static int small_len[SORTS];
static unsigned rng = 12345;

static unsigned next(void)
{
    rng = rng * 1103515245u + 12345u;
    return rng >> 8;
}

__attribute__((noinline)) long bmh_search(const unsigned char *t, long n, const unsigned char *p, int m)
{
    int skip[256];
    for (int c = 0; c < 256; c++)
        skip[c] = m;
    for (int i = 0; i < m - 1; i++)
        skip[p[i]] = m - 1 - i;
    long found = 0;
    long i = 0;
    while (i <= n - m) {
        int j = m - 1;
        while (j >= 0 && t[i + j] == p[j])
            j--;
        if (j < 0)
            found++;
        i += skip[t[i + m - 1]];
    }
    return found;
}

__attribute__((noinline)) void spmv(void)
{
    for (int r = 0; r < ROWS; r++) {
        double s = 0.0;
        for (int k = row_start[r]; k < row_start[r + 1]; k++)
            s += val[k] * x[col[k]];
        y[r] = s;
    }
}

__attribute__((noinline)) void insertion_sort(int *a, int n)
{
    for (int i = 1; i < n; i++) {
        int v = a[i], j = i - 1;
        while (j >= 0 && a[j] > v) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = v;
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    /* A text over a skewed alphabet: words of 2-9 letters, spaces between. */
    for (long i = 0; i < TEXT;) {
        int len = 2 + next() % 8;
        for (int k = 0; k < len && i < TEXT; k++)
            text[i++] = "etaoinshrdlcumwf"[next() % 16];
        if (i < TEXT)
            text[i++] = ' ';
    }
    int nz = 0;
    for (int r = 0; r < ROWS; r++) {
        row_start[r] = nz;
        int len = next() % 32;
        for (int k = 0; k < len; k++) {
            col[nz] = next() % COLS;
            val[nz] = (next() % 1000) / 1000.0;
            nz++;
        }
    }
    row_start[ROWS] = nz;
    for (int c = 0; c < COLS; c++)
        x[c] = (next() % 100) / 10.0;
    static const char *patterns[] = {"the", "tion", "strain", "a", "heard", "moist"};
    long found = 0;
    double total = 0.0;
    long order = 0;
    for (int round = 0; round < rounds; round++) {
        for (int p = 0; p < 6; p++)
            found += bmh_search(text, TEXT, (const unsigned char *)patterns[p], (int)strlen(patterns[p]));
        for (int k = 0; k < 12; k++) {
            spmv();
            total += y[(round + k) % ROWS];
            x[(round * 12 + k) % COLS] += 0.5;
        }
        for (int s = 0; s < SORTS; s++) {
            small_len[s] = 8 + next() % 17;
            for (int k = 0; k < small_len[s]; k++)
                small[s][k] = next() % 1000;
            insertion_sort(small[s], small_len[s]);
            order += small[s][small_len[s] / 2];
        }
    }
    printf("found %ld total %.3f order %ld\n", found, total, order);
    return 0;
}
