/* What a call and its return cost the loop that makes them, and how many
 * taken branches the front end follows a cycle: loops of `dec; jnz` around
 * a `call` to a leaf (a bare `ret`, or msort's `compare`), or around one or
 * two `jmp`s to the next aligned line, timed with rdtsc (best of 300 runs
 * of 20000 trips) and turned into core cycles by a chain of eight
 * dependent adds a trip (8 cycles). Pin it to a CPU.
 *
 * Zen 5 host of session 51 (EPYC family 26 model 2, KVM), three runs:
 *   loop alone 1.00-1.02, one jmp 1.00-1.03, two jmps 1.50-1.53 in most
 *   runs, 1.84-2.05 in others: two taken branches a cycle at best (zen5
 *   `taken_branches_per_cycle = 2`);
 *   call ret 4.00-4.06, two call/ret 7.93-8.10, call ret and four adds
 *   4.05, call compare 3.97-4.03 (its 4-cycle chain under the round trip,
 *   with the argument from the last result 3.99-4.04, with a test/jg on
 *   the result 3.98-4.04): a call and its return add 3 cycles
 *   (zen5 `call_return_cycles = 3`);
 *   push and ret (the return stack mispredicts) 24.9-25.0.
 *
 *   gcc -O2 -o call_return call_return.c && taskset -c 1 ./call_return */
#include <stdint.h>
#include <stdio.h>
#include <x86intrin.h>

static double best(uint64_t (*f)(uint64_t))
{
    uint64_t b = -1;
    for (int i = 0; i < 300; i++) {
        uint64_t x = f(20000);
        if (x < b)
            b = x;
    }
    return b / 20000.0;
}

static uint64_t chain(uint64_t n)
{
    uint64_t a = 0;
    uint64_t t0 = __rdtsc();
    __asm__ volatile("1: add $1,%0\n add $1,%0\n add $1,%0\n add $1,%0\n"
                     " add $1,%0\n add $1,%0\n add $1,%0\n add $1,%0\n"
                     " dec %1\n jnz 1b"
                     : "+r"(a), "+r"(n));
    return __rdtsc() - t0;
}

__asm__(".text\n.p2align 4\nleaf_ret: ret\n"
        ".p2align 4\nleaf_cmp: xor %eax,%eax\n cmp %esi,%edi\n setl %dl\n"
        " setg %al\n movzbl %dl,%edx\n sub %edx,%eax\n ret\n");

#define LOOP(name, body)                                                       \
    static uint64_t name(uint64_t n)                                           \
    {                                                                          \
        uint64_t t0 = __rdtsc();                                               \
        register uint64_t r12 __asm__("r12") = n;                              \
        __asm__ volatile(".p2align 4\n1:" body "dec %%r12\n jnz 1b"            \
                         : "+r"(r12)                                           \
                         :                                                     \
                         : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9",      \
                           "r10", "r11", "memory");                            \
        return __rdtsc() - t0;                                                 \
    }

LOOP(alone, "")
LOOP(jmp1, "jmp 3f\n .p2align 6\n 3:")
LOOP(jmp2, "jmp 3f\n .p2align 6\n 3: jmp 4f\n .p2align 6\n 4:")
LOOP(call_ret, "call leaf_ret\n")
LOOP(call_ret2, "call leaf_ret\n call leaf_ret\n")
LOOP(call_ret_adds, "call leaf_ret\n add $1,%%eax\n add $1,%%ecx\n add $1,%%edx\n add $1,%%esi\n")
LOOP(call_cmp, "mov $3,%%edi\n mov $5,%%esi\n call leaf_cmp\n")
LOOP(call_cmp_dep, "mov %%eax,%%edi\n mov $5,%%esi\n call leaf_cmp\n")
LOOP(call_cmp_use, "mov $3,%%edi\n mov $5,%%esi\n call leaf_cmp\n test %%eax,%%eax\n jg 2f\n 2:")
LOOP(push_ret, "lea 3f(%%rip),%%rax\n push %%rax\n ret\n .p2align 4\n 3:")

int main(void)
{
    double ticks = best(chain) / 8;
    printf("TSC ticks a cycle %.4f\n", ticks);
    struct {
        const char *name;
        uint64_t (*f)(uint64_t);
    } t[] = {
        {"loop alone", alone},
        {"one jmp", jmp1},
        {"two jmps", jmp2},
        {"call ret", call_ret},
        {"two call ret", call_ret2},
        {"call ret, four adds", call_ret_adds},
        {"call compare", call_cmp},
        {"call compare, arg from result", call_cmp_dep},
        {"call compare, test/jg", call_cmp_use},
        {"push; ret (mispredicted)", push_ret},
    };
    for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++)
        printf("%-30s %.3f cycles a trip\n", t[i].name, best(t[i].f) / ticks);
    return 0;
}
