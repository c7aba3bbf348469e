/* A per-thread working array whose size is a build knob, for `memscope sweep`: each thread
 * walks its array (WORK_KIB KiB of 64-byte lines, thread-local) as one random cycle of
 * dependent loads, so a step costs the load-to-use latency of the cache that holds the
 * array. While the array fits in L1d a step takes a few cycles; once it leaves L1d
 * every step waits for L2. UNUSED_KNOB changes nothing: a sweep over it must show `~`.
 *
 *   cc -O2 -pthread -DWORK_KIB=16 examples/sweep_l1d.c -o sweep_l1d
 *   ./sweep_l1d [steps per thread] [threads]   (prints "ns/step=…")
 *
 *   memscope sweep -p WORK_KIB=8,16,24,32,48,64,128 \
 *       --build 'cc -O2 -pthread -DWORK_KIB={WORK_KIB} examples/sweep_l1d.c -o sweep_l1d' \
 *       --keep sweep_l1d --metric 'ns/step:lower=ns/step=([0-9.]+)' ./sweep_l1d
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef WORK_KIB
#define WORK_KIB 16
#endif
#ifndef UNUSED_KNOB
#define UNUSED_KNOB 0
#endif

#define LINES (WORK_KIB * 1024 / 64)

struct line {
    struct line *next;
    char pad[64 - sizeof(struct line *)];
};

/* The per-thread working set: `memscope footprint` reads its size from the TLS segment. */
static __thread struct line work[LINES] __attribute__((aligned(64)));

static long steps_per_thread = 40 * 1000 * 1000;

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *walk(void *arg) {
    uint64_t seed = 0x9e3779b97f4a7c15ULL ^ (uintptr_t)arg;
    /* Sattolo's shuffle: one cycle through every line, in random order. */
    static __thread unsigned order[LINES];
    for (unsigned i = 0; i < LINES; i++)
        order[i] = i;
    for (unsigned i = LINES - 1; i > 0; i--) {
        unsigned j = xorshift(&seed) % i;
        unsigned t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (unsigned i = 0; i < LINES; i++)
        work[order[i]].next = &work[order[(i + 1) % LINES]];
    struct line *p = &work[0];
    for (long i = 0; i < steps_per_thread; i++)
        p = p->next;
    return p;
}

int main(int argc, char **argv) {
    int threads = 1;
    if (argc > 1)
        steps_per_thread = atol(argv[1]);
    if (argc > 2)
        threads = atoi(argv[2]);
    if (steps_per_thread <= 0 || threads <= 0 || threads > 256) {
        fprintf(stderr, "usage: %s [steps per thread > 0] [threads 1..256]\n", argv[0]);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t tid[256];
    for (int t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, walk, (void *)(uintptr_t)(t + 1));
    uintptr_t sink = 0;
    for (int t = 0; t < threads; t++) {
        void *r;
        pthread_join(tid[t], &r);
        sink ^= (uintptr_t)r;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("work=%d KiB per thread, %d thread(s), %ld steps each (%d)\n", WORK_KIB, threads,
           steps_per_thread, (int)(sink & 1) + UNUSED_KNOB * 0);
    printf("ns/step=%.4f\n", ns / steps_per_thread);
    return 0;
}
