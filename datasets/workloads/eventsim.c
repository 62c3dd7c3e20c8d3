/* A discrete-event simulation, argv[1] rounds (default 100): events in a
 * binary min-heap (sift-up and sift-down loops), each handled by a state
 * machine over a few dozen entities, and a recursive walk of a binary
 * tree of the entities' histories after every round. Held out (session 25):
 * measured only as a whole, so a later session can tell whether the
 * analyzer's rules carry over to code none of them was tuned on (accuracy
 * workload, checked against callgrind). */
#include <stdio.h>
#include <stdlib.h>

#define EVENTS 4096
#define ENTITIES 48
#define NODES 8191

struct event {
    unsigned long time;
    int entity, kind;
};
static struct event heap[EVENTS];
static int heap_len;

struct entity {
    int state;
    long served, waited;
    unsigned long busy_until;
};
static struct entity ent[ENTITIES];

struct node {
    struct node *left, *right;
    long value;
};
static struct node nodes[NODES];

__attribute__((noinline)) void push(struct event e)
{
    int i = heap_len++;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (heap[parent].time <= e.time)
            break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = e;
}

__attribute__((noinline)) struct event pop(void)
{
    struct event top = heap[0], last = heap[--heap_len];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= heap_len)
            break;
        if (c + 1 < heap_len && heap[c + 1].time < heap[c].time)
            c++;
        if (last.time <= heap[c].time)
            break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = last;
    return top;
}

/* The entity's state machine: idle -> queued -> busy -> cooling -> idle. */
__attribute__((noinline)) int handle(struct event e, unsigned *rng)
{
    struct entity *x = &ent[e.entity];
    *rng = *rng * 1103515245u + 12345u;
    unsigned r = *rng >> 16;
    switch (x->state) {
    case 0:
        x->state = 1;
        return 3 + r % 7;
    case 1:
        if (e.time < x->busy_until) {
            x->waited += x->busy_until - e.time;
            return (int)(x->busy_until - e.time);
        }
        x->state = 2;
        x->busy_until = e.time + 5 + r % 11;
        return 5 + r % 11;
    case 2:
        x->served++;
        x->state = (r & 3) ? 3 : 1;
        return 1 + (r & 7);
    default:
        x->state = 0;
        return 2 + (r & 15);
    }
}

__attribute__((noinline)) long walk(const struct node *n, int depth)
{
    if (!n)
        return 0;
    return n->value * depth + walk(n->left, depth + 1) + walk(n->right, depth + 1);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    unsigned rng = 99;
    for (int i = 0; i < NODES; i++) {
        nodes[i].left = 2 * i + 1 < NODES ? &nodes[2 * i + 1] : NULL;
        nodes[i].right = 2 * i + 2 < NODES ? &nodes[2 * i + 2] : NULL;
    }
    long checksum = 0;
    for (int r = 0; r < rounds; r++) {
        heap_len = 0;
        for (int i = 0; i < ENTITIES; i++) {
            ent[i] = (struct entity){0, 0, 0, 0};
            push((struct event){(unsigned long)i, i, 0});
        }
        for (int step = 0; step < 200000; step++) {
            struct event e = pop();
            int delay = handle(e, &rng);
            push((struct event){e.time + (unsigned long)delay, e.entity, ent[e.entity].state});
        }
        for (int i = 0; i < NODES; i++)
            nodes[i].value = ent[i % ENTITIES].served + i;
        checksum += walk(&nodes[0], 1);
    }
    printf("checksum %ld\n", checksum);
    return 0;
}
