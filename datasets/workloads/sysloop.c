/* Syscall-heavy benchmark workload: N (argv[1]) reads of SIZE bytes
 * (argv[2]) from /dev/zero; prints the seconds the loop took. SIZE 1 gives
 * the cheapest calls (per-call overhead), 65536 calls of a few µs. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000L;
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 1;
    char *buf = malloc(size);
    int fd = open("/dev/zero", O_RDONLY);
    if (!buf || fd < 0) {
        perror("setup");
        return 1;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++)
        if (read(fd, buf, size) < 0) {
            perror("read");
            return 1;
        }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.6f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
