/* Known answer for the culprit analysis: a code footprint far beyond the
 * I-cache. 4096 functions of straight-line independent adds (256 bytes
 * each, 1 MiB in all: 32 times the 32 KiB L1 I-cache, half the 2 MiB L2)
 * are called one after the other in an order that strides across the
 * whole footprint, so nearly every call fetches its lines from L2 while
 * the adds themselves never wait on data.
 *   icache N          the wide sweep, N * 4000 times
 *   icache N narrow   the control: as many calls, to 4 functions (1 KiB)
 * Measured here (Golden Cove, 2026-11-22): a call takes ~13.5 ns wide and
 * ~4.3 ns narrow (~12 cycles, the adds at full width): two thirds of the
 * wide sweep's cycles are I-cache misses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 64 independent adds over 8 registers: ~11 cycles at full width. */
#define BODY                                                                 \
    __asm__ volatile(".rept 8\n\t"                                           \
                     "add $1,%%r8d\n\tadd $1,%%r9d\n\tadd $1,%%r10d\n\t"     \
                     "add $1,%%r11d\n\tadd $1,%%esi\n\tadd $1,%%edi\n\t"     \
                     "add $1,%%edx\n\tadd $1,%%ecx\n\t"                      \
                     ".endr" ::                                              \
                         : "r8", "r9", "r10", "r11", "rsi", "rdi", "rdx",    \
                           "rcx", "cc")

/* Functions f<6 base-4 digits>, defined in address order. */
#define F1(s) static __attribute__((noipa, aligned(64))) void f##s(void) { BODY; }
#define F4(s) F1(s##0) F1(s##1) F1(s##2) F1(s##3)
#define F16(s) F4(s##0) F4(s##1) F4(s##2) F4(s##3)
#define F64(s) F16(s##0) F16(s##1) F16(s##2) F16(s##3)
#define F256(s) F64(s##0) F64(s##1) F64(s##2) F64(s##3)
#define F1024(s) F256(s##0) F256(s##1) F256(s##2) F256(s##3)
F1024(0) F1024(1) F1024(2) F1024(3)

/* Calls in digit-reversed order: consecutive calls are 1024 functions
 * (256 KiB) apart, so neither the next-line prefetcher nor L1 helps. gcc
 * must not fold the identical functions into one (noipa). */
#define C1(s) f0##s(); f1##s(); f2##s(); f3##s();
#define C4(s) C1(0##s) C1(1##s) C1(2##s) C1(3##s)
#define C16(s) C4(0##s) C4(1##s) C4(2##s) C4(3##s)
#define C64(s) C16(0##s) C16(1##s) C16(2##s) C16(3##s)
#define C256(s) C64(0##s) C64(1##s) C64(2##s) C64(3##s)
#define C1024(s) C256(0##s) C256(1##s) C256(2##s) C256(3##s)

__attribute__((noinline)) void sweep(void)
{
    C1024()
}

#undef C1
#define C1(s) f000000(); f000001(); f000002(); f000003();

__attribute__((noinline)) void sweep_narrow(void)
{
    C1024()
}

int main(int argc, char **argv)
{
    long scale = argc > 1 ? atol(argv[1]) : 1;
    int narrow = argc > 2 && strcmp(argv[2], "narrow") == 0;
    for (long r = 0; r < 4000 * scale; r++) {
        if (narrow)
            sweep_narrow();
        else
            sweep();
    }
    printf("%d\n", 0);
    return 0;
}
