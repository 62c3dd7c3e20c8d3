/* Kernel-attribution workload: a "sender" streams SECONDS (argv[1]) of
 * small TCP messages over loopback to a "receiver" it forked, which only
 * reads. On loopback the receive processing (NET_RX softirq: TCP input,
 * socket queueing, waking the reader) runs on the sender's CPU inside the
 * sender's system calls; pkprof charges it to the receiver it serves. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr *)&a, &al)) {
        perror("listen");
        return 1;
    }
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_NAME, "receiver");
        int c = accept(ls, NULL, NULL);
        char buf[256];
        long total = 0;
        ssize_t n;
        while ((n = read(c, buf, sizeof buf)) > 0)
            total += n;
        printf("receiver: %ld bytes\n", total);
        return 0;
    }
    prctl(PR_SET_NAME, "sender");
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(s, (struct sockaddr *)&a, sizeof a)) {
        perror("connect");
        return 1;
    }
    char msg[64];
    memset(msg, 'x', sizeof msg);
    long sent = 0;
    double end = now() + seconds;
    while (now() < end) {
        for (int i = 0; i < 256; i++)
            if (write(s, msg, sizeof msg) != sizeof msg) {
                perror("write");
                return 1;
            }
        sent += 256;
    }
    close(s);
    int st;
    waitpid(child, &st, 0);
    printf("sender: %ld messages\n", sent);
    return 0;
}
