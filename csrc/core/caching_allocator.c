/* caching_allocator.c: the block cache of caching_allocator.h.
 *
 * Bookkeeping: every block (allocated or free) is a node of its segment's address-ordered list
 * (prev/next), so a freed block finds its neighbours in O(1). Free blocks sit in one of two
 * pools (small, large), each an array sorted by (stream, size, address): best fit is a binary
 * search for the first block of the stream with size >= the request. Allocated blocks are found
 * by address in a chained hash table. */
#include "caching_allocator.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ca_block {
    char *ptr;
    size_t size;
    void *stream;
    bool allocated;
    bool small; /* which pool its segment belongs to */
    struct ca_block *prev, *next; /* neighbours in the segment, address order */
    struct ca_block *hash_next;   /* chain of the allocated-block table */
} ca_block;

typedef struct ca_pool {
    ca_block **items; /* free blocks sorted by (stream, size, ptr) */
    size_t n, cap;
} ca_pool;

struct ampc_caching_allocator {
    int device;
    ampc_ca_driver driver;
    ca_pool small, large;
    ca_block **table; /* allocated blocks by address */
    size_t table_cap, table_n;
    ampc_memory_stats stats;
};

/* ---------------------------------------------------------------- sizes */

size_t ampc_ca_round_size(size_t nbytes) {
    if (nbytes < AMPC_CA_ROUND) return AMPC_CA_ROUND;
    return (nbytes + AMPC_CA_ROUND - 1) / AMPC_CA_ROUND * AMPC_CA_ROUND;
}

size_t ampc_ca_segment_size(size_t size) {
    if (size <= AMPC_CA_SMALL_SIZE) return AMPC_CA_SMALL_SEGMENT;
    if (size < AMPC_CA_MIN_LARGE_ALLOC) return AMPC_CA_LARGE_SEGMENT;
    return (size + AMPC_CA_ROUND_LARGE - 1) / AMPC_CA_ROUND_LARGE * AMPC_CA_ROUND_LARGE;
}

const char *ampc_ca_format_size(uint64_t nbytes, char *buf, size_t cap) {
    if (nbytes <= 1024)
        snprintf(buf, cap, "%llu bytes", (unsigned long long)nbytes);
    else if (nbytes <= 1048576)
        snprintf(buf, cap, "%.2f KiB", (double)nbytes / 1024.0);
    else if (nbytes <= 1073741824ull)
        snprintf(buf, cap, "%.2f MiB", (double)nbytes / 1048576.0);
    else
        snprintf(buf, cap, "%.2f GiB", (double)nbytes / 1073741824.0);
    return buf;
}

/* ---------------------------------------------------------------- pools */

/* Orders free blocks by (stream, size, ptr). */
static int block_cmp(void *stream_a, size_t size_a, const char *ptr_a, const ca_block *b) {
    uintptr_t sa = (uintptr_t)stream_a, sb = (uintptr_t)b->stream;
    if (sa != sb) return sa < sb ? -1 : 1;
    if (size_a != b->size) return size_a < b->size ? -1 : 1;
    if (ptr_a != b->ptr) return (uintptr_t)ptr_a < (uintptr_t)b->ptr ? -1 : 1;
    return 0;
}

/* Index of the first block not ordered before (stream, size, ptr). */
static size_t pool_lower_bound(const ca_pool *p, void *stream, size_t size, const char *ptr) {
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (block_cmp(stream, size, ptr, p->items[mid]) > 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool pool_insert(ca_pool *p, ca_block *b) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        ca_block **items = (ca_block **)realloc(p->items, cap * sizeof *items);
        if (!items) return false;
        p->items = items;
        p->cap = cap;
    }
    size_t i = pool_lower_bound(p, b->stream, b->size, b->ptr);
    memmove(p->items + i + 1, p->items + i, (p->n - i) * sizeof *p->items);
    p->items[i] = b;
    p->n++;
    return true;
}

static void pool_remove(ca_pool *p, ca_block *b) {
    size_t i = pool_lower_bound(p, b->stream, b->size, b->ptr);
    if (i < p->n && p->items[i] == b) {
        memmove(p->items + i, p->items + i + 1, (p->n - i - 1) * sizeof *p->items);
        p->n--;
    }
}

static ca_pool *pool_of(ampc_caching_allocator *ca, const ca_block *b) { return b->small ? &ca->small : &ca->large; }

/* ---------------------------------------------------------------- allocated-block table */

static size_t hash_ptr(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p >> 9; /* blocks are 512-byte multiples */
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 32) & (cap - 1);
}

static bool table_grow(ampc_caching_allocator *ca) {
    size_t cap = ca->table_cap ? 2 * ca->table_cap : 256;
    ca_block **t = (ca_block **)calloc(cap, sizeof *t);
    if (!t) return false;
    for (size_t i = 0; i < ca->table_cap; i++)
        for (ca_block *b = ca->table[i], *nx; b; b = nx) {
            nx = b->hash_next;
            size_t h = hash_ptr(b->ptr, cap);
            b->hash_next = t[h];
            t[h] = b;
        }
    free(ca->table);
    ca->table = t;
    ca->table_cap = cap;
    return true;
}

static bool table_insert(ampc_caching_allocator *ca, ca_block *b) {
    if (ca->table_n >= ca->table_cap && !table_grow(ca)) return false;
    size_t h = hash_ptr(b->ptr, ca->table_cap);
    b->hash_next = ca->table[h];
    ca->table[h] = b;
    ca->table_n++;
    return true;
}

static ca_block *table_find(const ampc_caching_allocator *ca, const void *ptr) {
    if (!ca->table_cap) return NULL;
    for (ca_block *b = ca->table[hash_ptr(ptr, ca->table_cap)]; b; b = b->hash_next)
        if (b->ptr == ptr) return b;
    return NULL;
}

static ca_block *table_remove(ampc_caching_allocator *ca, const void *ptr) {
    if (!ca->table_cap) return NULL;
    ca_block **link = &ca->table[hash_ptr(ptr, ca->table_cap)];
    for (ca_block *b = *link; b; link = &b->hash_next, b = *link)
        if (b->ptr == ptr) {
            *link = b->hash_next;
            b->hash_next = NULL;
            ca->table_n--;
            return b;
        }
    return NULL;
}

/* ---------------------------------------------------------------- segments */

static void note_peaks(ampc_memory_stats *s) {
    if (s->allocated > s->peak_allocated) s->peak_allocated = s->allocated;
    if (s->reserved > s->peak_reserved) s->peak_reserved = s->reserved;
}

static void release_segment(ampc_caching_allocator *ca, ca_block *b) {
    ca->driver.segment_free(ca->driver.ctx, b->ptr, b->size);
    ca->stats.reserved -= (int64_t)b->size;
    ca->stats.segments--;
    ca->stats.num_device_frees++;
    free(b);
}

/* Returns every cached whole segment to the driver; true if any was. */
static bool release_cached_segments(ampc_caching_allocator *ca) {
    bool any = false;
    for (int k = 0; k < 2 && !any; k++) {
        const ca_pool *p = k ? &ca->large : &ca->small;
        for (size_t i = 0; i < p->n && !any; i++) any = !p->items[i]->prev && !p->items[i]->next;
    }
    if (!any) return false;
    if (ca->driver.synchronize) ca->driver.synchronize(ca->driver.ctx);
    for (int k = 0; k < 2; k++) {
        ca_pool *p = k ? &ca->large : &ca->small;
        size_t kept = 0;
        for (size_t i = 0; i < p->n; i++) {
            ca_block *b = p->items[i];
            if (!b->prev && !b->next) release_segment(ca, b);
            else p->items[kept++] = b; /* order is preserved */
        }
        p->n = kept;
    }
    return true;
}

/* A new segment of `seg_size` for `stream` as one free block (not in a pool), or NULL. */
static ca_block *new_segment(ampc_caching_allocator *ca, size_t nbytes, size_t seg_size, void *stream, bool small) {
    ca_block *b = (ca_block *)calloc(1, sizeof *b);
    if (!b) {
        ampc_set_error(AMPC_E_NOMEM, "CUDA caching allocator: out of host memory for its bookkeeping");
        return NULL;
    }
    void *ptr = NULL;
    int rc = ca->driver.segment_alloc(ca->driver.ctx, seg_size, &ptr);
    if (rc == AMPC_CA_OOM) {
        /* What PyTorch does: give the cache back to the driver, then try once more. */
        if (release_cached_segments(ca)) {
            ca->stats.num_alloc_retries++;
            rc = ca->driver.segment_alloc(ca->driver.ctx, seg_size, &ptr);
        }
    }
    if (rc != AMPC_CA_OK) {
        free(b);
        if (rc == AMPC_CA_ERROR) return NULL; /* the driver set the error */
        ca->stats.num_ooms++;
        size_t free_b = 0, total_b = 0;
        if (ca->driver.mem_info) ca->driver.mem_info(ca->driver.ctx, &free_b, &total_b);
        char req[32], tot[32], fre[32], alc[32], unalc[32];
        /* PyTorch's wording, so scripts that look for it keep working. */
        ampc_set_error(AMPC_E_NOMEM,
                       "CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is "
                       "free. Of the allocated memory %s is allocated by ampc, and %s is reserved by ampc but "
                       "unallocated.",
                       ampc_ca_format_size(nbytes, req, sizeof req), ca->device,
                       ampc_ca_format_size(total_b, tot, sizeof tot), ampc_ca_format_size(free_b, fre, sizeof fre),
                       ampc_ca_format_size((uint64_t)ca->stats.allocated, alc, sizeof alc),
                       ampc_ca_format_size((uint64_t)(ca->stats.reserved - ca->stats.allocated), unalc, sizeof unalc));
        return NULL;
    }
    b->ptr = (char *)ptr;
    b->size = seg_size;
    b->stream = stream;
    b->small = small;
    ca->stats.reserved += (int64_t)seg_size;
    ca->stats.segments++;
    ca->stats.num_device_allocs++;
    note_peaks(&ca->stats);
    return b;
}

/* ---------------------------------------------------------------- public */

ampc_caching_allocator *ampc_ca_new(int device, ampc_ca_driver driver) {
    ampc_caching_allocator *ca = (ampc_caching_allocator *)calloc(1, sizeof *ca);
    if (!ca) return NULL;
    ca->device = device;
    ca->driver = driver;
    return ca;
}

/* Returns the whole segment that starts with block `head` to the driver. */
static void free_segment_from(ampc_caching_allocator *ca, ca_block *head) {
    size_t seg = 0;
    for (ca_block *c = head; c; c = c->next) seg += c->size;
    ca->driver.segment_free(ca->driver.ctx, head->ptr, seg);
}

void ampc_ca_destroy(ampc_caching_allocator *ca) {
    if (!ca) return;
    if (ca->driver.synchronize) ca->driver.synchronize(ca->driver.ctx);
    /* Every block is in exactly one place: a pool (free) or the table (allocated). Free each
     * segment once, through its first block, then the block structs. */
    for (int k = 0; k < 2; k++) {
        ca_pool *p = k ? &ca->large : &ca->small;
        for (size_t i = 0; i < p->n; i++)
            if (!p->items[i]->prev) free_segment_from(ca, p->items[i]);
    }
    for (size_t h = 0; h < ca->table_cap; h++)
        for (ca_block *b = ca->table[h]; b; b = b->hash_next)
            if (!b->prev) free_segment_from(ca, b);
    for (int k = 0; k < 2; k++) {
        ca_pool *p = k ? &ca->large : &ca->small;
        for (size_t i = 0; i < p->n; i++) free(p->items[i]);
        free(p->items);
    }
    for (size_t h = 0; h < ca->table_cap; h++)
        for (ca_block *b = ca->table[h], *nx; b; b = nx) {
            nx = b->hash_next;
            free(b);
        }
    free(ca->table);
    free(ca);
}

/* `b` takes over the bytes of its right neighbour in the segment (in no pool), whose struct is
 * freed. */
static void absorb_next(ca_block *b) {
    ca_block *next = b->next;
    b->size += next->size;
    b->next = next->next;
    if (next->next) next->next->prev = b;
    free(next);
}

/* Puts a block that is no longer allocated back into its pool, merged with its free neighbours
 * (same segment, so same stream and pool). */
static void insert_free(ampc_caching_allocator *ca, ca_block *b) {
    ca_pool *pool = pool_of(ca, b);
    if (b->prev && !b->prev->allocated) {
        b = b->prev;
        pool_remove(pool, b);
        absorb_next(b);
    }
    if (b->next && !b->next->allocated) {
        pool_remove(pool, b->next);
        absorb_next(b);
    }
    if (!pool_insert(pool, b)) {
        /* No host memory to cache it: hand a whole segment back; part of one stays unused
         * until its segment is released (never handed out twice, freed by destroy). */
        if (!b->prev && !b->next) release_segment(ca, b);
    }
}

void *ampc_ca_alloc(ampc_caching_allocator *ca, size_t nbytes, void *stream) {
    if (nbytes == 0) return NULL;
    if (nbytes > SIZE_MAX - AMPC_CA_ROUND_LARGE) {
        char req[32];
        ca->stats.num_ooms++;
        ampc_set_error(AMPC_E_NOMEM, "CUDA out of memory. Tried to allocate %s on GPU %d.",
                       ampc_ca_format_size(nbytes, req, sizeof req), ca->device);
        return NULL;
    }
    size_t size = ampc_ca_round_size(nbytes);
    bool small = size <= AMPC_CA_SMALL_SIZE;
    ca_pool *pool = small ? &ca->small : &ca->large;

    /* Best fit: the first block of this stream, in size order, that is large enough. */
    ca_block *b = NULL;
    size_t i = pool_lower_bound(pool, stream, size, NULL);
    if (i < pool->n && pool->items[i]->stream == stream) {
        b = pool->items[i];
        memmove(pool->items + i, pool->items + i + 1, (pool->n - i - 1) * sizeof *pool->items);
        pool->n--;
    } else {
        b = new_segment(ca, nbytes, ampc_ca_segment_size(size), stream, small);
        if (!b) return NULL;
    }

    /* Split off the remainder when it is worth keeping. */
    size_t rest = b->size - size;
    if (small ? rest >= AMPC_CA_ROUND : rest > AMPC_CA_SMALL_SIZE) {
        ca_block *r = (ca_block *)calloc(1, sizeof *r);
        if (r) { /* without host memory for the struct the block simply stays whole */
            r->ptr = b->ptr + size;
            r->size = rest;
            r->stream = stream;
            r->small = small;
            r->prev = b;
            r->next = b->next;
            if (b->next) b->next->prev = r;
            b->next = r;
            b->size = size;
            if (!pool_insert(pool, r)) absorb_next(b); /* undo: merge back */
        }
    }

    if (!table_insert(ca, b)) {
        insert_free(ca, b);
        ampc_set_error(AMPC_E_NOMEM, "CUDA caching allocator: out of host memory for its bookkeeping");
        return NULL;
    }
    b->allocated = true;
    ca->stats.allocated += (int64_t)b->size;
    ca->stats.active_blocks++;
    ca->stats.num_allocs++;
    note_peaks(&ca->stats);
    return b->ptr;
}

void ampc_ca_free(ampc_caching_allocator *ca, void *ptr) {
    if (!ptr) return;
    ca_block *b = table_remove(ca, ptr);
    if (!b) return;
    b->allocated = false;
    ca->stats.allocated -= (int64_t)b->size;
    ca->stats.active_blocks--;
    ca->stats.num_frees++;
    insert_free(ca, b);
}

void ampc_ca_empty_cache(ampc_caching_allocator *ca) { release_cached_segments(ca); }

void ampc_ca_stats(const ampc_caching_allocator *ca, ampc_memory_stats *out) { *out = ca->stats; }

void ampc_ca_reset_peak(ampc_caching_allocator *ca) {
    ca->stats.peak_allocated = ca->stats.allocated;
    ca->stats.peak_reserved = ca->stats.reserved;
}

size_t ampc_ca_block_size(const ampc_caching_allocator *ca, const void *ptr) {
    const ca_block *b = table_find(ca, ptr);
    return b ? b->size : 0;
}

size_t ampc_ca_free_blocks(const ampc_caching_allocator *ca) { return ca->small.n + ca->large.n; }
