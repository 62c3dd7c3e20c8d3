// lzfind: an LZ77 match finder over a large buffer, in the way of xz's
// hash chains (the held-out real-program check of session 62, liblzma,
// made small and recordable). Every position hashes its next three bytes,
// looks the hash up in a 16 MB table of heads and walks up to DEPTH
// earlier positions through a 32 MB chain, comparing bytes at each.
// The table, chain and candidate reads miss to DRAM; the short compare
// loops and the bookkeeping between them run in their shadow: an
// out-of-order core retires them while the misses are outstanding, so
// they take fewer samples than their best-case cycles say (DCPI's
// frequency estimate assumes stalls only ever add cycles).
//
// Usage: lzfind MEGABYTES (of text to search; 24 in record.sh)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define HASH_BITS 22
#define WINDOW (1u << 23)
#define DEPTH 6
#define MAX_LEN 64

static uint32_t rng = 2463534242u;

static uint32_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

// Text with repeats: stretches over a 16-letter alphabet and copies of
// earlier stretches (so chains hold real matches of varied lengths).
__attribute__((noinline)) static void fill(uint8_t *buf, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t r = next();
        size_t len = 8 + (r >> 27);
        if (len > n - i)
            len = n - i;
        if (i > 65536 && (r & 3) != 0) {
            size_t from = next() % (i - len);
            for (size_t k = 0; k < len; k++)
                buf[i + k] = buf[from + k];
        } else {
            for (size_t k = 0; k < len; k++)
                buf[i + k] = 'a' + (next() & 15);
        }
        i += len;
    }
}

// Length of the common prefix of a and b, at most limit.
__attribute__((noinline)) static unsigned match_len(const uint8_t *a, const uint8_t *b,
                                                    unsigned limit) {
    unsigned n = 0;
    while (n < limit && a[n] == b[n])
        n++;
    return n;
}

// Walks the chains at every position; returns the sum of the best match
// lengths found (and skips over a long match, as a greedy parser does).
__attribute__((noinline)) static uint64_t find_matches(const uint8_t *buf, size_t n,
                                                       uint32_t *head, uint32_t *chain) {
    uint64_t sum = 0;
    size_t pos = 1;
    while (pos + MAX_LEN < n) {
        uint32_t key = buf[pos] | (uint32_t)buf[pos + 1] << 8 | (uint32_t)buf[pos + 2] << 16;
        uint32_t h = (key * 2654435761u) >> (32 - HASH_BITS);
        uint32_t cand = head[h];
        head[h] = (uint32_t)pos;
        chain[pos & (WINDOW - 1)] = cand;
        unsigned best = 0, depth = DEPTH;
        while (cand != 0 && pos - cand < WINDOW && depth-- > 0) {
            // xz's quick reject: the byte one past the best so far.
            if (buf[cand + best] == buf[pos + best]) {
                unsigned len = match_len(buf + cand, buf + pos, MAX_LEN);
                if (len > best)
                    best = len;
            }
            cand = chain[cand & (WINDOW - 1)];
        }
        sum += best;
        pos += best > 8 ? best / 2 : 1;
    }
    return sum;
}

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? strtoul(argv[1], 0, 10) : 24;
    size_t n = mb << 20;
    uint8_t *buf = malloc(n);
    uint32_t *head = calloc((size_t)1 << HASH_BITS, sizeof *head);
    uint32_t *chain = calloc(WINDOW, sizeof *chain);
    if (!buf || !head || !chain) {
        fprintf(stderr, "lzfind: out of memory\n");
        return 1;
    }
    fill(buf, n);
    printf("%llu\n", (unsigned long long)find_matches(buf, n, head, chain));
    return 0;
}
