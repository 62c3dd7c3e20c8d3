/* Two switch-dispatched virtual machines, written (session 27) to check
 * the dispatch-loop estimate on code it was not tuned on:
 *  - stack_vm runs a small bytecode program (a counted loop of a dozen
 *    stack instructions): the same short sequence of cases over and over,
 *    which a branch predictor learns;
 *  - stream_vm runs a long pseudo-random stream of register ops with
 *    skewed case frequencies (twelve cases, the first few far more common):
 *    most dispatches mispredict.
 * Deterministic: argv[1] scales the work (default 100). */
#include <stdio.h>
#include <stdlib.h>

enum { PUSH, ADD, SUB, MUL, DUP, SWAP, DROP, JNZ, DEC, LOAD, STORE, HALT };

static long mem[16];

__attribute__((noinline)) long stack_vm(const unsigned char *code, long n)
{
    long stack[64];
    int sp = 0, pc = 0;
    for (;;) {
        unsigned char op = code[pc++];
        switch (op) {
        case PUSH: stack[sp++] = code[pc++]; break;
        case ADD: sp--; stack[sp - 1] += stack[sp]; break;
        case SUB: sp--; stack[sp - 1] -= stack[sp]; break;
        case MUL: sp--; stack[sp - 1] *= stack[sp]; break;
        case DUP: stack[sp] = stack[sp - 1]; sp++; break;
        case SWAP: { long t = stack[sp - 1]; stack[sp - 1] = stack[sp - 2]; stack[sp - 2] = t; } break;
        case DROP: sp--; break;
        case JNZ: { int to = code[pc++]; if (stack[--sp]) pc = to; } break;
        case DEC: stack[sp - 1]--; break;
        case LOAD: stack[sp++] = mem[code[pc++] & 15]; break;
        case STORE: mem[code[pc++] & 15] = stack[--sp]; break;
        default: return stack[sp - 1] + n;
        }
    }
}

__attribute__((noinline)) long stream_vm(const unsigned char *ops, int len, long a, long b)
{
    for (int i = 0; i < len; i++) {
        switch (ops[i]) {
        case 0: a += b; break;
        case 1: b ^= a >> 5; break;
        case 2: a -= i; break;
        case 3: b += 7; break;
        case 4: a = a * 3 + 1; break;
        case 5: b = (b << 2) - a; break;
        case 6: a ^= 0x1234; break;
        case 7: b -= a & 255; break;
        case 8: a += b >> 3; break;
        case 9: b = ~b; break;
        case 10: a = (a >> 1) | (b & 1); break;
        default: b += i; break;
        }
    }
    return a ^ b;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 100;
    /* mem[0] = 400; loop: mem[1] += mem[0] * 3; mem[0]--; while mem[0] */
    const unsigned char program[] = {
        PUSH, 200, PUSH, 2, MUL, STORE, 0,
        LOAD, 0, PUSH, 3, MUL, LOAD, 1, ADD, STORE, 1, /* 7 */
        LOAD, 0, DEC, DUP, STORE, 0, JNZ, 7,
        LOAD, 1, HALT,
    };
    static unsigned char ops[8192];
    unsigned rng = 2024;
    for (int i = 0; i < 8192; i++) {
        rng = rng * 1664525 + 1013904223;
        unsigned r = (rng >> 8) & 1023;
        /* Skewed: case k about twice as common as case k + 2. */
        int k = 0;
        while (k < 11 && r < 1024u >> (k / 2 + 1))
            k++;
        ops[i] = (unsigned char)((k + (r & 1)) % 12);
    }
    long total = 0;
    for (int r = 0; r < reps; r++) {
        total += stack_vm(program, r);
        total += stream_vm(ops, 8192, r, total);
    }
    printf("%ld\n", total);
    return 0;
}
