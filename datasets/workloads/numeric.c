/* Numeric and graph kernels, argv[1] rounds (default 400): a small n-body
 * step in double precision (divides and square roots), an edit distance by
 * dynamic programming (a min of three per cell), and a breadth-first search
 * over a random graph in compressed rows (a queue, indirect loads, a
 * visited test per edge). Held out (session 25): recorded and measured as a
 * whole before any analyzer change looked at it, so a later session can
 * tell whether its rules carry over to code none of them was tuned on
 * (accuracy workload, checked against callgrind). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define BODIES 64
#define SEQ 600
#define NODES 20000
#define DEGREE 6

static double px[BODIES], py[BODIES], pz[BODIES], vx[BODIES], vy[BODIES], vz[BODIES], mass[BODIES];
static char sa[SEQ + 1], sb[SEQ + 1];
static int dist_row[2][SEQ + 1];
static int row_start[NODES + 1], edges[NODES * DEGREE], level[NODES], queue[NODES];

__attribute__((noinline)) void nbody_step(double dt)
{
    for (int i = 0; i < BODIES; i++) {
        double ax = 0, ay = 0, az = 0;
        for (int j = 0; j < BODIES; j++) {
            if (j == i)
                continue;
            double dx = px[j] - px[i], dy = py[j] - py[i], dz = pz[j] - pz[i];
            double d2 = dx * dx + dy * dy + dz * dz + 1e-9;
            double inv = mass[j] / (d2 * sqrt(d2));
            ax += dx * inv;
            ay += dy * inv;
            az += dz * inv;
        }
        vx[i] += ax * dt;
        vy[i] += ay * dt;
        vz[i] += az * dt;
    }
    for (int i = 0; i < BODIES; i++) {
        px[i] += vx[i] * dt;
        py[i] += vy[i] * dt;
        pz[i] += vz[i] * dt;
    }
}

__attribute__((noinline)) int edit_distance(const char *a, const char *b, int n)
{
    int *prev = dist_row[0], *cur = dist_row[1];
    for (int j = 0; j <= n; j++)
        prev[j] = j;
    for (int i = 1; i <= n; i++) {
        cur[0] = i;
        for (int j = 1; j <= n; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            int m = sub < del ? sub : del;
            cur[j] = m < ins ? m : ins;
        }
        int *t = prev;
        prev = cur;
        cur = t;
    }
    return prev[n];
}

__attribute__((noinline)) int bfs(int source)
{
    for (int v = 0; v < NODES; v++)
        level[v] = -1;
    int head = 0, tail = 0, deepest = 0;
    level[source] = 0;
    queue[tail++] = source;
    while (head < tail) {
        int v = queue[head++];
        for (int e = row_start[v]; e < row_start[v + 1]; e++) {
            int w = edges[e];
            if (level[w] < 0) {
                level[w] = level[v] + 1;
                deepest = level[w];
                queue[tail++] = w;
            }
        }
    }
    return deepest;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    unsigned rng = 2024;
#define NEXT() (rng = rng * 1664525u + 1013904223u)
    for (int i = 0; i < BODIES; i++) {
        px[i] = (NEXT() >> 8) / 16777216.0;
        py[i] = (NEXT() >> 8) / 16777216.0;
        pz[i] = (NEXT() >> 8) / 16777216.0;
        mass[i] = 1.0 + (NEXT() >> 28);
    }
    for (int i = 0; i < SEQ; i++) {
        sa[i] = 'a' + (NEXT() >> 16) % 4;
        sb[i] = (NEXT() >> 16) % 5 ? sa[i] : 'a' + (NEXT() >> 16) % 4;
    }
    for (int v = 0; v <= NODES; v++)
        row_start[v] = v * DEGREE;
    for (int e = 0; e < NODES * DEGREE; e++)
        edges[e] = (NEXT() >> 8) % NODES;
    double energy = 0;
    long total = 0;
    for (int r = 0; r < rounds; r++) {
        for (int s = 0; s < 20; s++)
            nbody_step(0.001);
        energy += vx[r % BODIES] * vx[r % BODIES];
        total += edit_distance(sa, sb, SEQ);
        for (int s = 0; s < 4; s++)
            total += bfs((r * 7919 + s * 104729) % NODES);
    }
    printf("energy %.6f total %ld\n", energy, total);
    return 0;
}
