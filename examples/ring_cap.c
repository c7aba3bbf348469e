/* A per-thread allocator cache in the shape of many real ones, for `memscope footprint`:
 * 7 size classes, each a ring of RING_CAP pointers (set at build time: -DRING_CAP=64).
 * Growing RING_CAP grows every thread's TLS block by 7 x 8 bytes per slot, which is what
 * `memscope footprint` shows against the L1d.
 *
 *   cc -g -O1 -pthread -DRING_CAP=64 examples/ring_cap.c -o ring_cap
 *   memscope footprint ring_cap --threads 2
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef RING_CAP
#define RING_CAP 16
#endif
#define SIZE_CLASSES 7

struct ring {
    void *slots[RING_CAP];
    unsigned short head;
    unsigned short count;
};

struct tcache {
    struct ring rings[SIZE_CLASSES];
    unsigned long allocs;
    char initialised;
};

__thread struct tcache tcache;
static char arena[1 << 20];

static void *take(int size_class) {
    struct ring *r = &tcache.rings[size_class];
    tcache.allocs++;
    if (r->count == 0) return &arena[(tcache.allocs * 64) % sizeof arena];
    r->count--;
    return r->slots[(r->head + r->count) % RING_CAP];
}

static void give(int size_class, void *p) {
    struct ring *r = &tcache.rings[size_class];
    if (r->count == RING_CAP) return;
    r->slots[(r->head + r->count) % RING_CAP] = p;
    r->count++;
}

static void *work(void *arg) {
    long rounds = (long)arg;
    tcache.initialised = 1;
    for (long i = 0; i < rounds; i++) {
        int c = (int)(i % SIZE_CLASSES);
        give(c, take(c));
    }
    return NULL;
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 1000000;
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, work, (void *)rounds);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    printf("%lu allocations on the main thread, RING_CAP %d\n", tcache.allocs, RING_CAP);
    return 0;
}
