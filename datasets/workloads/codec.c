/* A byte-stream codec: run-length encode a generated buffer, decode it
 * again, and checksum both with a table-driven CRC-32, argv[1] times
 * (default 30). Byte loops with data-dependent run lengths, a table
 * lookup per byte, and a loop-carried CRC chain (accuracy workload,
 * checked against callgrind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN (256 * 1024)
static unsigned char input[LEN], packed[2 * LEN], output[LEN];
static unsigned crc_table[256];

static void crc_init(void)
{
    for (unsigned i = 0; i < 256; i++) {
        unsigned c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

__attribute__((noinline)) unsigned crc32(const unsigned char *p, size_t n)
{
    unsigned c = 0xffffffffu;
    for (size_t i = 0; i < n; i++)
        c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* (count, byte) pairs; runs up to 255. */
__attribute__((noinline)) size_t rle_encode(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned char b = in[i];
        size_t run = 1;
        while (i + run < n && in[i + run] == b && run < 255)
            run++;
        out[o++] = (unsigned char)run;
        out[o++] = b;
        i += run;
    }
    return o;
}

__attribute__((noinline)) size_t rle_decode(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i + 1 < n; i += 2)
        for (unsigned r = 0; r < in[i]; r++)
            out[o++] = in[i + 1];
    return o;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    unsigned long seed = 12345;
    for (size_t i = 0; i < LEN;) {
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        size_t run = 1 + (seed >> 60); /* runs of 1..16 */
        unsigned char b = (unsigned char)(seed >> 40);
        for (size_t k = 0; k < run && i < LEN; k++)
            input[i++] = b;
    }
    crc_init();
    unsigned sum = 0;
    for (int r = 0; r < rounds; r++) {
        size_t p = rle_encode(input, LEN, packed);
        size_t d = rle_decode(packed, p, output);
        if (d != LEN || memcmp(input, output, LEN) != 0) {
            fprintf(stderr, "codec: round trip failed\n");
            return 1;
        }
        sum = sum * 31 + (crc32(input, LEN) ^ crc32(packed, p));
    }
    printf("crc %08x\n", sum);
    return 0;
}
