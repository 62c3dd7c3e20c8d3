// jit: code generated at run time, named the way JITs name theirs for perf:
// a loop copied into anonymous executable memory and a line
// `START SIZE jit_sum_loop` in /tmp/perf-PID.map (as Node's
// --perf-basic-prof, the JVM's perf-map-agent and Python's -X perf do).
// The map is left in place when it ends, as theirs are: `perf report` and
// `dcpi prof` read it afterwards.
//
// Usage: jit [TRIPS] (default 400000000)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long trips = argc > 1 ? strtol(argv[1], 0, 10) : 400000000;
    // mov $TRIPS,%rcx; 1: add %rcx,%rax; dec %rcx; jnz 1b; ret
    unsigned char code[] = {0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0, 0x48, 0x01,
                            0xc8, 0x48, 0xff, 0xc9, 0x75, 0xf8, 0xc3};
    memcpy(code + 2, &trips, sizeof trips);
    unsigned char *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("jit: mmap");
        return 1;
    }
    memcpy(p, code, sizeof code);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    fprintf(f, "%lx %zx jit_sum_loop\n", (unsigned long)p, sizeof code);
    fclose(f);
    long (*fn)(void) = (long (*)(void))(void *)p;
    printf("%ld\n", fn());
    return 0;
}
