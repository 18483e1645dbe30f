/* test_storage_shared.c: share_memory_ moves a storage into a memfd region in place; a second
 * mapping of its fd sees the same bytes; every region and fd is released with its storage. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ctest.h"

CTEST(storage_shared_moves_in_place) {
    int64_t shape[1] = {6};
    ampc_tensor *t = ampc_arange(0, 6, 1, AMPC_FLOAT32, ampc_cpu_device());
    CHECK(t != NULL);
    ampc_tensor *view = ampc_slice(t, 0, 2, 6, 1);
    CHECK(!ampc_storage_is_shared(t->storage) && ampc_storage_shared_fd(t->storage) == -1);
    CHECK(ampc_storage_share_(t->storage) == AMPC_OK);
    CHECK(ampc_storage_is_shared(view->storage));
    CHECK(ampc_storage_share_(t->storage) == AMPC_OK); /* a no-op the second time */
    const float *v = (const float *)ampc_data_ptr(view);
    CHECK(v[0] == 2.0f && v[3] == 5.0f);

    /* a second mapping (what another process makes of the fd) shares the pages */
    int fd = dup(ampc_storage_shared_fd(t->storage));
    CHECK(fd >= 0);
    ampc_storage *other = ampc_storage_from_shared_fd(fd, t->storage->nbytes);
    CHECK(other != NULL);
    ampc_tensor *o = ampc_tensor_from_storage(other, 0, 1, shape, NULL, AMPC_FLOAT32);
    ampc_storage_decref(other);
    ((float *)ampc_data_ptr(o))[2] = -7.0f;
    CHECK(v[0] == -7.0f);
    int region_fd = ampc_storage_shared_fd(t->storage);
    ampc_tensor_decref(o);
    CHECK(fcntl(fd, F_GETFD) == -1); /* the mapping's fd closed with its storage */
    ampc_tensor_decref(t);
    CHECK(fcntl(region_fd, F_GETFD) != -1); /* the view still holds the storage */
    ampc_tensor_decref(view);
    CHECK(fcntl(region_fd, F_GETFD) == -1);

    /* an fd smaller than claimed is refused (and closed) */
    int small = dup(STDIN_FILENO);
    CHECK(ampc_storage_from_shared_fd(small, 1 << 20) == NULL);
    CHECK(fcntl(small, F_GETFD) == -1);

    ampc_storage *empty = ampc_storage_new(ampc_cpu_device(), 0);
    CHECK(ampc_storage_share_(empty) == AMPC_OK && ampc_storage_is_shared(empty));
    ampc_storage_decref(empty);
}
