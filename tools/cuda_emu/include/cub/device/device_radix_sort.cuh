/* Fake cub/device/device_radix_sort.cuh of the CUDA emulator: DeviceRadixSort::SortPairs as a
 * host-side stable sort on the bits [begin_bit, end_bit) of the keys, with cub's two-call
 * temporary-storage protocol (a NULL d_temp_storage asks for the size). */
#pragma once
#include <algorithm>
#include <vector>

#include "../../cuda_runtime.h"

namespace emu {
void device_access(bool on); /* opens the device arena to host code (emu_runtime.cpp) */
}

namespace cub {
struct DeviceRadixSort {
    template <typename K, typename V, typename N>
    static cudaError_t SortPairs(void *d_temp_storage, size_t &temp_storage_bytes, const K *keys_in, K *keys_out,
                                 const V *values_in, V *values_out, N num_items, int begin_bit = 0,
                                 int end_bit = (int)sizeof(K) * 8, cudaStream_t stream = 0) {
        (void)stream;
        const size_t need = 256 + (size_t)num_items;
        if (!d_temp_storage) {
            temp_storage_bytes = need;
            return cudaSuccess;
        }
        if (temp_storage_bytes < need) return cudaErrorInvalidValue;
        if (num_items <= 0) return cudaSuccess;
        if (!ampc_emu_is_device_ptr(d_temp_storage, temp_storage_bytes) ||
            !ampc_emu_is_device_ptr(keys_in, sizeof(K) * num_items) ||
            !ampc_emu_is_device_ptr(keys_out, sizeof(K) * num_items) ||
            !ampc_emu_is_device_ptr(values_in, sizeof(V) * num_items) ||
            !ampc_emu_is_device_ptr(values_out, sizeof(V) * num_items))
            return cudaErrorInvalidValue;
        typedef typename std::make_unsigned<K>::type U;
        const U mask = (U)((end_bit - begin_bit >= (int)sizeof(U) * 8) ? ~(U)0 : (((U)1 << (end_bit - begin_bit)) - 1));
        device_access_scope scope;
        std::vector<std::pair<U, int64_t>> v((size_t)num_items);
        for (int64_t i = 0; i < (int64_t)num_items; i++) v[i] = {(U)(((U)keys_in[i] >> begin_bit) & mask), i};
        std::stable_sort(v.begin(), v.end(), [](const std::pair<U, int64_t> &a, const std::pair<U, int64_t> &b) {
            return a.first < b.first;
        });
        std::vector<K> k2((size_t)num_items);
        std::vector<V> v2((size_t)num_items);
        for (int64_t i = 0; i < (int64_t)num_items; i++) {
            k2[i] = keys_in[v[i].second];
            v2[i] = values_in[v[i].second];
        }
        memcpy(keys_out, k2.data(), sizeof(K) * num_items);
        memcpy(values_out, v2.data(), sizeof(V) * num_items);
        return cudaSuccess;
    }

  private:
    struct device_access_scope {
        device_access_scope() { emu::device_access(true); }
        ~device_access_scope() { emu::device_access(false); }
    };
};
} // namespace cub
