/* Where cpu-clock samples land in a loop bound by a call and its return:
 * `call leaf_ret; dec; jnz` (the leaf a bare ret) and msort's `compare`
 * called with constant arguments, each 4.0 cycles a trip on Zen 5
 * (datasets/models/call_return.c). Results: call-return-zen5.md.
 *   gcc -O2 -g -o call_return_samples call_return_samples.c
 *   dcpi collect -o cr.db -- ./call_return_samples 500000000
 *   dcpi list --db cr.db --func leaf_cmp (loop_ret, leaf_ret, loop_cmp) */
#include <stdint.h>
#include <stdlib.h>
__asm__(".text\n.p2align 4\n.type leaf_ret,@function\nleaf_ret: ret\n.size leaf_ret,.-leaf_ret\n"
        ".p2align 4\n.type leaf_cmp,@function\nleaf_cmp: xor %eax,%eax\n cmp %esi,%edi\n setl %dl\n"
        " setg %al\n movzbl %dl,%edx\n sub %edx,%eax\n ret\n.size leaf_cmp,.-leaf_cmp\n");
__attribute__((noinline)) void loop_ret(uint64_t n) {
    register uint64_t r12 __asm__("r12") = n;
    __asm__ volatile(".p2align 4\n1: call leaf_ret\n dec %%r12\n jnz 1b" : "+r"(r12) :: "rax","rcx","rdx","rsi","rdi","r8","r9","r10","r11","memory");
}
__attribute__((noinline)) void loop_cmp(uint64_t n) {
    register uint64_t r12 __asm__("r12") = n;
    __asm__ volatile(".p2align 4\n1: mov $3,%%edi\n mov $5,%%esi\n call leaf_cmp\n test %%eax,%%eax\n jg 2f\n 2: dec %%r12\n jnz 1b" : "+r"(r12) :: "rax","rcx","rdx","rsi","rdi","r8","r9","r10","r11","memory");
}
int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], 0, 0) : 500000000;
    loop_ret(n); loop_cmp(n);
    return 0;
}
