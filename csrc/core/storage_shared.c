/* storage_shared.c: CPU storage in shared memory, for torch.multiprocessing.
 *
 * share_memory_() moves a storage's bytes into an anonymous shared region (memfd_create, or a
 * shm_open name unlinked at once where memfd is missing) mapped MAP_SHARED, in place: every
 * tensor viewing the storage keeps its data and now sees the shared copy. The region's fd stays
 * open in the storage so it can be passed to another process (fd passing, as torch's
 * file_descriptor strategy), which maps the same pages with ampc_storage_from_shared_fd. The
 * kernel frees the pages when the last mapping and the last fd are gone, so nothing can leak in
 * /dev/shm whichever process exits first. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage.h"

typedef struct shared_region {
    int fd;
    void *addr;
    size_t len; /* mapped length: nbytes, at least 1 (mmap cannot map 0 bytes) */
} shared_region;

static void shared_release(void *ctx) {
    shared_region *r = (shared_region *)ctx;
    munmap(r->addr, r->len);
    close(r->fd);
    free(r);
}

static int new_anonymous_fd(void) {
#ifdef MFD_CLOEXEC
    int fd = memfd_create("ampc_shared_storage", MFD_CLOEXEC);
    if (fd >= 0 || errno != ENOSYS) return fd;
#endif
    static unsigned counter;
    for (int attempt = 0; attempt < 64; attempt++) {
        char name[64];
        snprintf(name, sizeof name, "/ampc_%ld_%u", (long)getpid(), counter++);
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            shm_unlink(name); /* anonymous from here on: freed with its last fd and mapping */
            return fd;
        }
        if (errno != EEXIST) return -1;
    }
    return -1;
}

/* Maps `fd` (taking ownership) for `nbytes`; NULL with the error set (fd closed). */
static shared_region *map_region(int fd, size_t nbytes, const char *op) {
    size_t len = nbytes ? nbytes : 1;
    void *addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    shared_region *r = addr == MAP_FAILED ? NULL : (shared_region *)malloc(sizeof *r);
    if (!r) {
        ampc_set_error(AMPC_E_RUNTIME, "%s: cannot map %zu bytes of shared memory: %s", op, len,
                       addr == MAP_FAILED ? strerror(errno) : "out of host memory");
        if (addr != MAP_FAILED) munmap(addr, len);
        close(fd);
        return NULL;
    }
    r->fd = fd;
    r->addr = addr;
    r->len = len;
    return r;
}

ampc_status ampc_storage_share_(ampc_storage *s) {
    if (s->device.type != AMPC_CPU)
        return ampc_set_error(AMPC_E_RUNTIME, "share_memory_: only CPU storage moves to shared memory");
    if (ampc_storage_is_shared(s)) return AMPC_OK;
    int fd = new_anonymous_fd();
    if (fd < 0) return ampc_set_error(AMPC_E_RUNTIME, "share_memory_: cannot create shared memory: %s", strerror(errno));
    size_t len = s->nbytes ? s->nbytes : 1;
    if (ftruncate(fd, (off_t)len) != 0) {
        int e = errno;
        close(fd);
        return ampc_set_error(AMPC_E_RUNTIME, "share_memory_: cannot size shared memory to %zu bytes: %s", len,
                              strerror(e));
    }
    shared_region *r = map_region(fd, s->nbytes, "share_memory_");
    if (!r) return AMPC_E_RUNTIME;
    if (s->nbytes) memcpy(r->addr, s->data, s->nbytes);
    /* free the old bytes the way they were obtained, then point the storage at the region */
    if (s->release)
        s->release(s->release_ctx);
    else if (s->pinned)
        ampc_get_pinned_allocator()->free(s->device, s->data, s->nbytes);
    else if (s->data)
        ampc_get_allocator((ampc_device_type)s->device.type)->free(s->device, s->data, s->nbytes);
    s->data = r->addr;
    s->release = shared_release;
    s->release_ctx = r;
    s->pinned = false;
    return AMPC_OK;
}

bool ampc_storage_is_shared(const ampc_storage *s) { return s->release == shared_release; }

int ampc_storage_shared_fd(const ampc_storage *s) {
    return ampc_storage_is_shared(s) ? ((const shared_region *)s->release_ctx)->fd : -1;
}

ampc_storage *ampc_storage_from_shared_fd(int fd, size_t nbytes) {
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < (nbytes ? nbytes : 1)) {
        ampc_set_error(AMPC_E_RUNTIME, "shared storage: fd %d holds %lld bytes, %zu expected", fd,
                       (long long)st.st_size, nbytes);
        close(fd);
        return NULL;
    }
    shared_region *r = map_region(fd, nbytes, "shared storage");
    if (!r) return NULL;
    ampc_storage *s = ampc_storage_wrap(ampc_cpu_device(), r->addr, nbytes, shared_release, r);
    if (!s) shared_release(r);
    return s;
}
