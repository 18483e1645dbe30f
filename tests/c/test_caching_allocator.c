/* test_caching_allocator.c: the CUDA caching allocator's block logic (core/caching_allocator.c)
 * against a fake device: segments are real host memory (so ASan sees any block overrun), the
 * device has a capacity, and it counts its segments and synchronisations. */
#include <stdlib.h>
#include <string.h>

#include "core/caching_allocator.h"
#include "ctest.h"

#define MiB ((size_t)1 << 20)

typedef struct fake_device {
    size_t capacity, used;
    int live_segments, syncs, fail_with_error;
} fake_device;

static int fake_alloc(void *ctx, size_t n, void **ptr) {
    fake_device *d = (fake_device *)ctx;
    if (d->fail_with_error) {
        ampc_set_error(AMPC_E_RUNTIME, "CUDA error: fake driver failure");
        return AMPC_CA_ERROR;
    }
    if (d->used + n > d->capacity) return AMPC_CA_OOM;
    *ptr = malloc(n);
    if (!*ptr) return AMPC_CA_OOM;
    d->used += n;
    d->live_segments++;
    return AMPC_CA_OK;
}

static void fake_free(void *ctx, void *ptr, size_t n) {
    fake_device *d = (fake_device *)ctx;
    free(ptr);
    d->used -= n;
    d->live_segments--;
}

static void fake_info(void *ctx, size_t *free_b, size_t *total) {
    fake_device *d = (fake_device *)ctx;
    *free_b = d->capacity - d->used;
    *total = d->capacity;
}

static void fake_sync(void *ctx) { ((fake_device *)ctx)->syncs++; }

static ampc_caching_allocator *make(fake_device *d, size_t capacity) {
    memset(d, 0, sizeof *d);
    d->capacity = capacity;
    ampc_clear_error(); /* the checks below read the error slot */
    ampc_ca_driver drv = {d, fake_alloc, fake_free, fake_info, fake_sync};
    return ampc_ca_new(3, drv);
}

static ampc_memory_stats stats_of(ampc_caching_allocator *ca) {
    ampc_memory_stats s;
    ampc_ca_stats(ca, &s);
    return s;
}

static void *S1 = (void *)0x1000, *S2 = (void *)0x2000; /* two "streams" (NULL is a third) */

CTEST(caching_allocator_sizes) {
    CHECK(ampc_ca_round_size(1) == 512);
    CHECK(ampc_ca_round_size(512) == 512);
    CHECK(ampc_ca_round_size(513) == 1024);
    CHECK(ampc_ca_segment_size(512) == 2 * MiB);
    CHECK(ampc_ca_segment_size(MiB) == 2 * MiB);
    CHECK(ampc_ca_segment_size(MiB + 512) == 20 * MiB);
    CHECK(ampc_ca_segment_size(10 * MiB - 512) == 20 * MiB);
    CHECK(ampc_ca_segment_size(10 * MiB) == 10 * MiB);
    CHECK(ampc_ca_segment_size(11 * MiB) == 12 * MiB);
    char buf[32];
    CHECK(!strcmp(ampc_ca_format_size(512, buf, sizeof buf), "512 bytes"));
    CHECK(!strcmp(ampc_ca_format_size(1536, buf, sizeof buf), "1.50 KiB"));
    CHECK(!strcmp(ampc_ca_format_size(20 * MiB, buf, sizeof buf), "20.00 MiB"));
    CHECK(!strcmp(ampc_ca_format_size(3ull << 30, buf, sizeof buf), "3.00 GiB"));
}

CTEST(caching_allocator_split_merge_best_fit) {
    fake_device d;
    ampc_caching_allocator *ca = make(&d, 1024 * MiB);
    CHECK(ampc_ca_alloc(ca, 0, NULL) == NULL && ampc_last_status() == AMPC_OK);

    /* small pool: one 2 MiB segment, blocks carved in address order */
    char *a = (char *)ampc_ca_alloc(ca, 1000, NULL);
    char *b = (char *)ampc_ca_alloc(ca, 1000, NULL);
    CHECK(a && b && b == a + 1024);
    CHECK(ampc_ca_block_size(ca, a) == 1024 && d.live_segments == 1);
    ampc_memory_stats s = stats_of(ca);
    CHECK(s.allocated == 2048 && s.reserved == (int64_t)(2 * MiB) && s.active_blocks == 2 && s.segments == 1);
    memset(a, 1, 1000);
    memset(b, 2, 1000);

    /* a freed 1024 block is the best fit for 500 bytes (the segment's tail is larger) and is split */
    ampc_ca_free(ca, a);
    char *c = (char *)ampc_ca_alloc(ca, 500, NULL);
    CHECK(c == a && ampc_ca_block_size(ca, c) == 512);
    char *e = (char *)ampc_ca_alloc(ca, 512, NULL); /* the 512 remainder: exact fit */
    CHECK(e == a + 512);

    /* freeing everything merges the segment back into one free block */
    ampc_ca_free(ca, b);
    ampc_ca_free(ca, c);
    ampc_ca_free(ca, e);
    CHECK(ampc_ca_free_blocks(ca) == 1);
    s = stats_of(ca);
    CHECK(s.allocated == 0 && s.reserved == (int64_t)(2 * MiB) && s.active_blocks == 0);

    /* large pool: 3 MiB from a 20 MiB segment, split (17 MiB left) */
    char *l1 = (char *)ampc_ca_alloc(ca, 3 * MiB, NULL);
    CHECK(l1 && ampc_ca_block_size(ca, l1) == 3 * MiB && d.live_segments == 2);
    char *l2 = (char *)ampc_ca_alloc(ca, 12 * MiB, NULL); /* from the 17 MiB remainder */
    CHECK(l2 == l1 + 3 * MiB && d.live_segments == 2);
    /* 11 MiB: a new 12 MiB segment, not split (1 MiB left is not worth a block) */
    char *l3 = (char *)ampc_ca_alloc(ca, 11 * MiB, NULL);
    CHECK(l3 && ampc_ca_block_size(ca, l3) == 12 * MiB && d.live_segments == 3);
    s = stats_of(ca);
    CHECK(s.allocated == (int64_t)(27 * MiB) && s.reserved == (int64_t)(34 * MiB));

    /* best fit among free large blocks: the 5 MiB tail of segment 2 vs the freed 12 MiB l3 */
    ampc_ca_free(ca, l3);
    char *l4 = (char *)ampc_ca_alloc(ca, 4 * MiB, NULL);
    CHECK(l4 == l2 + 12 * MiB); /* the 5 MiB tail, not the 12 MiB block */
    char *l5 = (char *)ampc_ca_alloc(ca, 6 * MiB, NULL);
    CHECK(l5 == l3); /* only the 12 MiB block fits; split, 6 MiB left */
    CHECK(ampc_ca_block_size(ca, l5) == 6 * MiB);
    memset(l5, 7, 6 * MiB);
    ampc_ca_free(ca, l1);
    ampc_ca_free(ca, l2);
    ampc_ca_free(ca, l4);
    ampc_ca_free(ca, l5);
    CHECK(stats_of(ca).allocated == 0);
    CHECK(ampc_ca_free_blocks(ca) == 3); /* one whole block per segment */

    ampc_ca_free(ca, (void *)0x12345); /* unknown pointers are ignored */
    ampc_ca_empty_cache(ca);
    s = stats_of(ca);
    CHECK(s.reserved == 0 && s.segments == 0 && d.live_segments == 0 && d.used == 0);
    CHECK(s.num_device_allocs == 3 && s.num_device_frees == 3);
    ampc_ca_destroy(ca);
}

CTEST(caching_allocator_streams) {
    fake_device d;
    ampc_caching_allocator *ca = make(&d, 1024 * MiB);
    void *a = ampc_ca_alloc(ca, 1000, S1);
    ampc_ca_free(ca, a);
    /* another stream never gets S1's cached memory: a segment of its own */
    void *b = ampc_ca_alloc(ca, 1000, S2);
    CHECK(b && b != a && d.live_segments == 2);
    void *n = ampc_ca_alloc(ca, 1000, NULL);
    CHECK(n && n != a && n != b && d.live_segments == 3);
    /* S1 gets its block back */
    void *c = ampc_ca_alloc(ca, 1000, S1);
    CHECK(c == a);
    /* a block freed goes back to the stream it was allocated on, whatever is current now */
    ampc_ca_free(ca, b);
    void *e = ampc_ca_alloc(ca, 1000, S1);
    CHECK(e != b);
    void *f = ampc_ca_alloc(ca, 1000, S2);
    CHECK(f == b);
    ampc_ca_free(ca, c);
    ampc_ca_free(ca, e);
    ampc_ca_free(ca, f);
    ampc_ca_free(ca, n);
    CHECK(d.live_segments == 3);
    ampc_ca_empty_cache(ca);
    CHECK(d.live_segments == 0);
    ampc_ca_destroy(ca);
}

CTEST(caching_allocator_stats) {
    fake_device d;
    ampc_caching_allocator *ca = make(&d, 1024 * MiB);
    void *a = ampc_ca_alloc(ca, 4 * MiB, NULL);
    void *b = ampc_ca_alloc(ca, 100, NULL);
    ampc_memory_stats s = stats_of(ca);
    CHECK(s.allocated == (int64_t)(4 * MiB + 512) && s.peak_allocated == s.allocated);
    CHECK(s.reserved == (int64_t)(22 * MiB) && s.peak_reserved == s.reserved);
    CHECK(s.num_allocs == 2 && s.num_frees == 0 && s.active_blocks == 2);
    ampc_ca_free(ca, a);
    s = stats_of(ca);
    CHECK(s.allocated == 512 && s.peak_allocated == (int64_t)(4 * MiB + 512) && s.num_frees == 1);
    ampc_ca_reset_peak(ca);
    s = stats_of(ca);
    CHECK(s.peak_allocated == 512 && s.peak_reserved == (int64_t)(22 * MiB));
    ampc_ca_empty_cache(ca); /* the large segment is free; the small one holds b */
    s = stats_of(ca);
    CHECK(s.reserved == (int64_t)(2 * MiB) && s.peak_reserved == (int64_t)(22 * MiB) && d.syncs == 1);
    ampc_ca_empty_cache(ca); /* nothing to release: no synchronisation either */
    CHECK(d.syncs == 1 && stats_of(ca).reserved == (int64_t)(2 * MiB));
    ampc_ca_free(ca, b);
    ampc_ca_empty_cache(ca);
    CHECK(stats_of(ca).reserved == 0 && d.live_segments == 0);
    ampc_ca_destroy(ca);
}

CTEST(caching_allocator_out_of_memory) {
    fake_device d;
    ampc_caching_allocator *ca = make(&d, 30 * MiB);
    /* cache a 12 MiB segment on S1 */
    void *a = ampc_ca_alloc(ca, 11 * MiB, S1);
    CHECK(a != NULL);
    ampc_ca_free(ca, a);
    CHECK(d.used == 12 * MiB);
    /* S2 needs 20 MiB: the device has 18 MiB free, so the cache is released and the call retried */
    void *b = ampc_ca_alloc(ca, 20 * MiB, S2);
    CHECK(b != NULL && ampc_last_status() == AMPC_OK);
    ampc_memory_stats s = stats_of(ca);
    CHECK(s.num_alloc_retries == 1 && s.num_ooms == 0 && d.syncs == 1 && d.live_segments == 1);
    CHECK(s.reserved == (int64_t)(20 * MiB));

    /* nothing cached, nothing fits: fails with PyTorch's message, no retry */
    void *c = ampc_ca_alloc(ca, 25 * MiB, S2);
    CHECK(c == NULL && ampc_last_status() == AMPC_E_NOMEM);
    const char *msg = ampc_last_error();
    CHECK(strstr(msg, "CUDA out of memory. Tried to allocate 25.00 MiB. GPU 3 has a total capacity of 30.00 MiB "
                      "of which 10.00 MiB is free.") != NULL);
    CHECK(strstr(msg, "20.00 MiB is allocated by ampc, and 0 bytes is reserved by ampc but unallocated") != NULL);
    s = stats_of(ca);
    CHECK(s.num_ooms == 1 && s.num_alloc_retries == 1 && s.allocated == (int64_t)(20 * MiB));
    ampc_clear_error();

    /* still usable afterwards */
    void *e = ampc_ca_alloc(ca, 5 * MiB, S2); /* 20 MiB segment would not fit: 10 MiB free */
    CHECK(e == NULL && stats_of(ca).num_ooms == 2);
    ampc_clear_error();
    ampc_ca_free(ca, b);
    e = ampc_ca_alloc(ca, 5 * MiB, S2); /* the cached 20 MiB block, split */
    CHECK(e == b && ampc_ca_block_size(ca, e) == 5 * MiB);
    ampc_ca_free(ca, e);

    /* a driver error is not an out-of-memory: no retry, the driver's message */
    ampc_ca_empty_cache(ca);
    d.fail_with_error = 1;
    void *f = ampc_ca_alloc(ca, 1000, NULL);
    CHECK(f == NULL && ampc_last_status() == AMPC_E_RUNTIME && strstr(ampc_last_error(), "fake driver") != NULL);
    CHECK(stats_of(ca).num_ooms == 2);
    ampc_clear_error();
    d.fail_with_error = 0;

    /* absurd sizes fail cleanly */
    CHECK(ampc_ca_alloc(ca, SIZE_MAX - 10, NULL) == NULL && ampc_last_status() == AMPC_E_NOMEM);
    ampc_clear_error();
    ampc_ca_destroy(ca);
    CHECK(d.live_segments == 0 && d.used == 0);
}

/* Random allocations and frees on three streams: live blocks never overlap, their first and
 * last bytes survive until they are freed, the statistics add up, and everything returns. */
CTEST(caching_allocator_random_workload) {
    fake_device d;
    ampc_caching_allocator *ca = make(&d, 4096 * MiB);
    enum { SLOTS = 200 };
    unsigned char *ptr[SLOTS] = {0};
    size_t len[SLOTS] = {0};
    unsigned seed = 12345;
    void *streams[3] = {NULL, S1, S2};
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % SLOTS);
        if (ptr[k]) {
            CHECK(ptr[k][0] == (unsigned char)k && ptr[k][len[k] - 1] == (unsigned char)k);
            ampc_ca_free(ca, ptr[k]);
            ptr[k] = NULL;
            continue;
        }
        seed = seed * 1103515245u + 12345u;
        unsigned r = seed >> 4;
        size_t n = (r % 4 == 0) ? (size_t)(r % (24 * MiB)) + 1 : (size_t)(r % (64 * 1024)) + 1;
        unsigned char *p = (unsigned char *)ampc_ca_alloc(ca, n, streams[(seed >> 20) % 3]);
        CHECK(p != NULL);
        if (!p) break;
        size_t bs = ampc_ca_block_size(ca, p);
        CHECK(bs >= ampc_ca_round_size(n) && bs % 512 == 0);
        for (int j = 0; j < SLOTS; j++)
            if (ptr[j]) {
                size_t bj = ampc_ca_block_size(ca, ptr[j]);
                CHECK(p + bs <= ptr[j] || ptr[j] + bj <= p);
            }
        ptr[k] = p;
        len[k] = n;
        p[0] = p[n - 1] = (unsigned char)k;
        if (step % 5000 == 4999) ampc_ca_empty_cache(ca);
    }
    int64_t sum = 0, live = 0;
    for (int k = 0; k < SLOTS; k++)
        if (ptr[k]) {
            sum += (int64_t)ampc_ca_block_size(ca, ptr[k]);
            live++;
        }
    ampc_memory_stats s = stats_of(ca);
    CHECK(s.allocated == sum && s.active_blocks == live && s.reserved >= s.allocated);
    CHECK(s.reserved == (int64_t)d.used && s.segments == d.live_segments);
    /* destroy with live blocks returns every segment */
    ampc_ca_destroy(ca);
    CHECK(d.live_segments == 0 && d.used == 0);
}
