/* SLEEPY's `btree` benchmark: argv[1] operations (default three million),
 * twenty percent random inserts and eighty percent lookups, on a B-tree whose
 * traversals are loops and whose insertion is recursive, with no parent
 * pointers. The function names follow the paper: find_index, find_child,
 * get_parent_key, lookup, insert, insert_rec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ORDER 8 /* max keys per node = 2*ORDER-1 */
#define MAXK (2 * ORDER - 1)

struct node {
    int nkeys;
    int leaf;
    long keys[MAXK];
    struct node *child[MAXK + 1];
};

static struct node *root;
static unsigned long rng = 88172645463325252UL;

__attribute__((noinline)) static unsigned long next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* First index whose key is >= k (linear scan, as a small node is). */
__attribute__((noinline)) int find_index(const struct node *n, long k)
{
    int i = 0;
    while (i < n->nkeys && n->keys[i] < k)
        i++;
    return i;
}

__attribute__((noinline)) struct node *find_child(const struct node *n, long k)
{
    return n->child[find_index(n, k)];
}

/* Key that separates child i from child i+1 in the parent. */
__attribute__((noinline)) long get_parent_key(const struct node *parent, int i)
{
    return parent->keys[i];
}

__attribute__((noinline)) int lookup(long k)
{
    const struct node *n = root;
    while (n) {
        int i = find_index(n, k);
        if (i < n->nkeys && n->keys[i] == k)
            return 1;
        if (n->leaf)
            return 0;
        n = n->child[i];
    }
    return 0;
}

static struct node *new_node(int leaf)
{
    struct node *n = calloc(1, sizeof *n);
    if (!n) {
        perror("calloc");
        exit(1);
    }
    n->leaf = leaf;
    return n;
}

static void split_child(struct node *parent, int i)
{
    struct node *full = parent->child[i];
    struct node *right = new_node(full->leaf);
    right->nkeys = ORDER - 1;
    memcpy(right->keys, full->keys + ORDER, (ORDER - 1) * sizeof(long));
    if (!full->leaf)
        memcpy(right->child, full->child + ORDER, ORDER * sizeof(struct node *));
    full->nkeys = ORDER - 1;
    memmove(parent->child + i + 2, parent->child + i + 1, (parent->nkeys - i) * sizeof(struct node *));
    memmove(parent->keys + i + 1, parent->keys + i, (parent->nkeys - i) * sizeof(long));
    parent->child[i + 1] = right;
    parent->keys[i] = full->keys[ORDER - 1];
    parent->nkeys++;
}

__attribute__((noinline)) static void insert_rec(struct node *n, long k)
{
    int i = find_index(n, k);
    if (i < n->nkeys && n->keys[i] == k)
        return;
    if (n->leaf) {
        memmove(n->keys + i + 1, n->keys + i, (n->nkeys - i) * sizeof(long));
        n->keys[i] = k;
        n->nkeys++;
        return;
    }
    if (find_child(n, k)->nkeys == MAXK) {
        split_child(n, i);
        if (k > get_parent_key(n, i))
            i++;
    }
    insert_rec(n->child[i], k);
}

__attribute__((noinline)) void insert(long k)
{
    if (root->nkeys == MAXK) {
        struct node *r = new_node(0);
        r->child[0] = root;
        root = r;
        split_child(r, 0);
    }
    insert_rec(root, k);
}

int main(int argc, char **argv)
{
    long ops = argc > 1 ? atol(argv[1]) : 3000000L;
    long found = 0;
    root = new_node(1);
    for (long i = 0; i < ops; i++) {
        unsigned long r = next_random();
        long key = (long)(r >> 8) % 1000000;
        if (r % 5 == 0)
            insert(key);
        else
            found += lookup(key);
    }
    printf("%ld\n", found);
    return 0;
}
