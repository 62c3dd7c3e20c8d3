/* Latency workload with two paths through one system call: THREADS threads
 * (argv[1], default 4) each open their own descriptor of one file and loop
 * ITERATIONS times (argv[2]): flock(LOCK_EX), WORK multiply steps (argv[3],
 * default 20000, ~25 µs) holding the lock, flock(LOCK_UN).
 * With one thread every flock returns at once; with several, a contended
 * flock sleeps until the holder unlocks: a second, slower peak. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

static long iterations;
static long work_steps = 20000;
static char path[] = "/tmp/dcpi-flock-XXXXXX";

static void work(void)
{
    volatile unsigned long x = 1;
    for (long i = 0; i < work_steps; i++)
        x = x * 6364136223846793005UL + 1;
}

static void *worker(void *arg)
{
    (void)arg;
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        perror("open");
        exit(1);
    }
    for (long i = 0; i < iterations; i++) {
        flock(fd, LOCK_EX);
        work();
        flock(fd, LOCK_UN);
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    iterations = argc > 2 ? atol(argv[2]) : 2000;
    if (argc > 3)
        work_steps = atol(argv[3]);
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    pthread_t t[64];
    if (threads < 1 || threads > 64)
        threads = 4;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    unlink(path);
    return 0;
}
