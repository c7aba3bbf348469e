/* memscope's preload library for `memscope pages` (built by build.rs, shipped inside the
 * memscope binary, loaded into the user's program with LD_PRELOAD).
 *
 * A watcher thread reads /proc/self/maps every MEMSCOPE_PAGES_POLL_US microseconds and,
 * on the program's private anonymous read-write mappings (the heap and anonymous mmaps):
 *
 *  - MEMSCOPE_PAGES_SPLIT=1: marks every other 2 MiB chunk MADV_DONTDUMP (a flag that
 *    only affects core dumps), so no mapping spans a 2 MiB boundary and the kernel's
 *    per-mapping accessed-page counts in /proc/PID/smaps become per-2-MiB counts;
 *  - MEMSCOPE_PAGES_HUGE=all or start-end,… (hex): advises the 2 MiB-aligned parts of
 *    those ranges MADV_HUGEPAGE (later faults get transparent huge pages) and collapses
 *    what is already resident with MADV_COLLAPSE;
 *  - MEMSCOPE_PAGES_NO_HUGE=1: advises every such mapping MADV_NOHUGEPAGE (4 KiB pages
 *    even where THP is `always`; turning THP off for the whole process instead would
 *    move the mappings, since the kernel then stops aligning them to 2 MiB);
 *  - MEMSCOPE_PAGES_HUGE_KIND=2m: instead puts hugetlb pages (MAP_HUGETLB, from the
 *    pool) under the chosen chunks of each new anonymous mmap the program makes through
 *    the interposed mmap(), at map time, when the memory is still all zeros.
 *
 * The thread is started in every run (even with nothing to do) and never allocates, so
 * the program's address-space layout is the same in every arm of a comparison. Nothing
 * here ever changes what the program computes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MAP_HUGETLB
#define MAP_HUGETLB 0x40000
#endif

#define CHUNK ((uintptr_t)2 << 20)
#define MAX_TARGETS 1024
#define DONE_SLOTS (1 << 16)

struct range {
    uintptr_t start, end;
};

static int split_mode;
static int no_huge_mode;
static int huge_mode;      /* 0 none, 1 thp, 2 hugetlb */
static int huge_all;
static struct range targets[MAX_TARGETS];
static int n_targets;
static long poll_us = 5000;
/* Chunks already advised (open addressing on the chunk number; 0 = empty). */
static uintptr_t done[DONE_SLOTS];
/* The watcher's stack is ours, in .bss: pthread_create then maps nothing and the thread
 * never calls malloc, whose first call from a thread would create an arena at a moment
 * that varies from run to run and so move the program's later mappings. */
#define WATCHER_STACK (256 << 10)
static char watcher_stack[WATCHER_STACK] __attribute__((aligned(4096)));
static char maps_buf[1 << 16];

static int parse_hex(const char **p, uintptr_t *out) {
    uintptr_t v = 0;
    int digits = 0;
    for (;; (*p)++, digits++) {
        char c = **p;
        if (c >= '0' && c <= '9') v = v * 16 + (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v = v * 16 + (uintptr_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v = v * 16 + (uintptr_t)(c - 'A' + 10);
        else break;
    }
    *out = v;
    return digits > 0;
}

static void parse_targets(const char *s) {
    if (strcmp(s, "all") == 0) {
        huge_all = 1;
        return;
    }
    while (*s && n_targets < MAX_TARGETS) {
        uintptr_t a, b;
        if (s[0] == '0' && s[1] == 'x') s += 2;
        if (!parse_hex(&s, &a) || *s != '-') return;
        s++;
        if (s[0] == '0' && s[1] == 'x') s += 2;
        if (!parse_hex(&s, &b)) return;
        if (b > a) {
            targets[n_targets].start = a;
            targets[n_targets].end = b;
            n_targets++;
        }
        if (*s == ',') s++;
    }
}

/* Whether `key` (never 0) was seen before; records it if not. */
static int first_time_key(uintptr_t key) {
    uintptr_t slot = (key * 0x9e3779b97f4a7c15ULL) >> 48;
    for (int i = 0; i < DONE_SLOTS; i++) {
        uintptr_t *s = &done[(slot + (uintptr_t)i) & (DONE_SLOTS - 1)];
        if (*s == key) return 0;
        if (*s == 0) {
            *s = key;
            return 1;
        }
    }
    return 1; /* table full: advise again, which is harmless */
}

/* Whether the chunk was advised before; records it if not. */
static int first_time(uintptr_t chunk) {
    return first_time_key(chunk / CHUNK + 1);
}

/* Whether the mapping [start, end) was advised before (keys kept apart from chunks'). */
static int first_time_mapping(uintptr_t start, uintptr_t end) {
    return first_time_key(((start >> 12) * 1000003u + (end >> 12)) | ((uintptr_t)1 << 63));
}

static unsigned char residency[CHUNK / 4096];

static int any_resident(uintptr_t chunk) {
    if (mincore((void *)chunk, CHUNK, residency) != 0) return 1;
    for (size_t i = 0; i < sizeof residency; i++)
        if (residency[i] & 1) return 1;
    return 0;
}

static int chunk_is_target(uintptr_t chunk) {
    if (huge_all) return 1;
    for (int i = 0; i < n_targets; i++)
        if (chunk < targets[i].end && chunk + CHUNK > targets[i].start) return 1;
    return 0;
}

static void on_mapping(uintptr_t start, uintptr_t end) {
    uintptr_t own = (uintptr_t)watcher_stack;
    if (start < own + WATCHER_STACK && end > own) return;
    uintptr_t first = (start + CHUNK - 1) & ~(CHUNK - 1);
    if (split_mode && end - start > 0 && (start / CHUNK) != ((end - 1) / CHUNK)) {
        for (uintptr_t c = start & ~(CHUNK - 1); c < end; c += CHUNK) {
            if (((c / CHUNK) & 1) == 0) continue;
            uintptr_t a = c < start ? start : c;
            uintptr_t b = c + CHUNK > end ? end : c + CHUNK;
            madvise((void *)a, b - a, MADV_DONTDUMP);
        }
    }
    if (no_huge_mode && first_time_mapping(start, end))
        madvise((void *)start, end - start, MADV_NOHUGEPAGE);
    if (huge_mode == 1) {
        for (uintptr_t c = first; c + CHUNK <= end; c += CHUNK) {
            if (!chunk_is_target(c) || !first_time(c)) continue;
            madvise((void *)c, CHUNK, MADV_HUGEPAGE);
            /* Pages faulted before the advice are 4 KiB: collapse them into a huge page.
             * An untouched chunk needs nothing more (its first fault is huge). */
            if (any_resident(c)) madvise((void *)c, CHUNK, MADV_COLLAPSE);
        }
    }
}

/* One line of /proc/self/maps: "start-end perms offset dev inode   path". */
static void on_line(const char *line) {
    const char *p = line;
    uintptr_t start, end, skip;
    if (!parse_hex(&p, &start) || *p++ != '-' || !parse_hex(&p, &end) || *p++ != ' ') return;
    const char *perms = p;
    if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p') return;
    p += 5;
    if (!parse_hex(&p, &skip)) return; /* offset */
    while (*p == ' ') p++;
    while (*p && *p != ' ') p++; /* device */
    while (*p == ' ') p++;
    if (!(p[0] == '0' && p[1] == ' ')) return; /* inode: file-backed */
    p++;
    while (*p == ' ') p++;
    if (*p && strncmp(p, "[heap]", 6) != 0) return; /* named: stack, vvar, memfd … */
    on_mapping(start, end);
}

static void scan_maps(void) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, maps_buf + have, sizeof maps_buf - 1 - have);
        if (n <= 0) break;
        have += (size_t)n;
        maps_buf[have] = 0;
        char *line = maps_buf;
        char *nl;
        while ((nl = strchr(line, '\n')) != NULL) {
            *nl = 0;
            on_line(line);
            line = nl + 1;
        }
        have = (size_t)(maps_buf + have - line);
        memmove(maps_buf, line, have);
        if (have == sizeof maps_buf - 1) have = 0; /* a line longer than the buffer */
    }
    close(fd);
}

static void *watch(void *arg) {
    (void)arg;
    struct timespec pause = {poll_us / 1000000, (poll_us % 1000000) * 1000};
    for (;;) {
        if (split_mode || no_huge_mode || huge_mode == 1) scan_maps();
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void start_watcher(void) {
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, watcher_stack, WATCHER_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&thread, &attr, watch, NULL);
    pthread_attr_destroy(&attr);
}

static void after_fork_in_child(void) {
    start_watcher();
}

__attribute__((constructor)) static void memscope_pages_init(void) {
    const char *v;
    if ((v = getenv("MEMSCOPE_PAGES_SPLIT")) && strcmp(v, "1") == 0) split_mode = 1;
    if ((v = getenv("MEMSCOPE_PAGES_NO_HUGE")) && strcmp(v, "1") == 0) no_huge_mode = 1;
    if ((v = getenv("MEMSCOPE_PAGES_HUGE")) && *v) {
        parse_targets(v);
        const char *kind = getenv("MEMSCOPE_PAGES_HUGE_KIND");
        huge_mode = (kind && strcmp(kind, "2m") == 0) ? 2 : 1;
    }
    if ((v = getenv("MEMSCOPE_PAGES_POLL_US"))) {
        long us = atol(v);
        if (us >= 100) poll_us = us;
    }
    pthread_atfork(NULL, NULL, after_fork_in_child);
    start_watcher();
}

/* mmap interposed for the hugetlb kind: chosen 2 MiB chunks of a new private anonymous
 * mapping are replaced by hugetlb pages (moved in with mremap, so a chunk is either the
 * program's zeroed 4 KiB mapping or a zeroed huge page, never a hole). */
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    static mmap_fn real;
    if (!real) real = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
    if (!real) {
        errno = ENOSYS;
        return MAP_FAILED;
    }
    void *r = real(addr, len, prot, flags, fd, off);
    if (huge_mode != 2 || r == MAP_FAILED || !(flags & MAP_ANONYMOUS) || !(flags & MAP_PRIVATE) ||
        (flags & (MAP_FIXED | MAP_HUGETLB)))
        return r;
    uintptr_t start = (uintptr_t)r, end = start + len;
    for (uintptr_t c = (start + CHUNK - 1) & ~(CHUNK - 1); c + CHUNK <= end; c += CHUNK) {
        if (!chunk_is_target(c)) continue;
        void *h = real(NULL, CHUNK, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (h == MAP_FAILED) break; /* pool empty: the rest stays 4 KiB */
        if (mremap(h, CHUNK, CHUNK, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)c) == MAP_FAILED)
            munmap(h, CHUNK);
    }
    return r;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}
