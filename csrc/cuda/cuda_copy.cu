/* cuda_copy.cu: COPY and FILL for CUDA tensors: casting, strided, broadcasting copies on one GPU,
 * transfers between host and device and between GPUs, and fills.
 *
 * Casts convert exactly as cpu_copy.c's loops (AMPC_LOAD_<src> then AMPC_STORE_<dst>), bit for
 * bit: fp16/bf16 round to nearest even with overflow to inf and NaN payloads kept (half.h's
 * rules; the hardware conversion is used where it gives the same bits). Where C leaves the result
 * to the machine (NaN payloads through float <-> double, NaN or out-of-range float -> integer),
 * the GPU reproduces what the x86-64 CPU backend gives (quietened payloads; INT64_MIN, then
 * wrapped to the integer's width).
 *
 * Transfers never copy a strided view's storage span through the host. A host <-> device copy
 * that is not one contiguous block of the same dtype is staged: host -> device uploads the
 * source's elements contiguously (made contiguous on the host first if needed) into a device
 * temporary and lets the device kernel cast, broadcast and scatter them; device -> host runs the
 * device kernel into a contiguous temporary of the destination's dtype, downloads it, and lets
 * the CPU kernel broadcast/stride it into the destination. Every device step runs on the current
 * stream; transfers wait as cuda_backend.h's host<->device rules say (PyTorch's): a copy to the
 * host synchronises and raises deferred kernel errors, and only non_blocking copies from or to
 * pinned memory are left running. Between GPUs: cudaMemcpyPeerAsync, ordered by events. */
#include <type_traits>

#include "../core/kernel_args.h"
#include "cuda_elementwise.cuh"

namespace {

/* ------------------------------------------------------------------ element conversion */

/* AMPC_LOAD_<src>: the source element in its opmath type. fp16 -> float in hardware is exact
 * except for NaN payloads, which half.h keeps as they are. */
template <typename S> __device__ __forceinline__ S cast_load(S v) { return v; }
__device__ __forceinline__ float cast_load(__half h) {
    unsigned short bits = __half_as_ushort(h);
    return (bits & 0x7fffu) > 0x7c00u ? ampc_half_to_f32(bits) : __half2float(h);
}
__device__ __forceinline__ float cast_load(__nv_bfloat16 h) { return ampc_bf16_to_f32(__bfloat16_as_ushort(h)); }

/* (int64_t)v as the CPU backend computes it: C leaves NaN and out-of-range values undefined;
 * x86-64 (cvttss2si/cvttsd2si) gives INT64_MIN for them, where the GPU would saturate. */
template <typename V> __device__ __forceinline__ int64_t cast_to_int64(V v) {
    if constexpr (std::is_floating_point<V>::value)
        return (v >= (V)-9223372036854775808.0 && v < (V)9223372036854775808.0) ? (int64_t)v : INT64_MIN;
    else
        return (int64_t)v;
}

/* (float)v and (double)v as the x86-64 CPU converts NaNs (cvtsd2ss/cvtss2sd): quietened, sign
 * and the top payload bits kept; the GPU would return its canonical NaN instead. */
template <typename V> __device__ __forceinline__ float cast_to_float(V v) { return (float)v; }
__device__ __forceinline__ float cast_to_float(double v) {
    if (!isnan(v)) return (float)v;
    uint64_t u = (uint64_t)__double_as_longlong(v);
    return __uint_as_float((uint32_t)(u >> 32 & 0x80000000u) | 0x7fc00000u | (uint32_t)(u >> 29 & 0x3fffffu));
}
template <typename V> __device__ __forceinline__ double cast_to_double(V v) { return (double)v; }
__device__ __forceinline__ double cast_to_double(float v) {
    if (!isnan(v)) return (double)v;
    uint64_t u = __float_as_uint(v);
    return __longlong_as_double((long long)((u & 0x80000000u) << 32 | 0x7ff8000000000000ull | (u & 0x3fffffu) << 29));
}

/* AMPC_STORE_<dst>: any opmath value rounded once to the destination type (fp16/bf16 through
 * float, as the CPU does). */
template <typename D> struct cast_store;
template <> struct cast_store<float> {
    template <typename V> __device__ __forceinline__ static float from(V v) { return cast_to_float(v); }
};
template <> struct cast_store<double> {
    template <typename V> __device__ __forceinline__ static double from(V v) { return cast_to_double(v); }
};
template <> struct cast_store<__half> {
    template <typename V> __device__ __forceinline__ static __half from(V v) {
        float f = cast_to_float(v);
        return isnan(f) ? __ushort_as_half(ampc_f32_to_half(f)) : __float2half_rn(f);
    }
};
template <> struct cast_store<__nv_bfloat16> {
    template <typename V> __device__ __forceinline__ static __nv_bfloat16 from(V v) {
        return __ushort_as_bfloat16(ampc_f32_to_bf16(cast_to_float(v)));
    }
};
template <> struct cast_store<int64_t> {
    template <typename V> __device__ __forceinline__ static int64_t from(V v) { return cast_to_int64(v); }
};
template <> struct cast_store<int32_t> {
    template <typename V> __device__ __forceinline__ static int32_t from(V v) { return (int32_t)cast_to_int64(v); }
};
template <> struct cast_store<uint8_t> {
    template <typename V> __device__ __forceinline__ static uint8_t from(V v) { return (uint8_t)cast_to_int64(v); }
};
template <> struct cast_store<bool> {
    template <typename V> __device__ __forceinline__ static bool from(V v) { return v != (V)0; }
};

template <typename D, typename S> __device__ __forceinline__ D cast(S v) { return cast_store<D>::from(cast_load(v)); }

/* ------------------------------------------------------------------ copy kernels */

/* Any strides, the source broadcast (stride 0). D == S copies bits (W-sized words). */
template <typename D, typename S>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS) copy_strided_kernel(ampc_cuda_indexer ix, D *dst, const S *src) {
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t off[2];
        ampc_cuda_offsets<2>(ix, i, off);
        if constexpr (std::is_same<D, S>::value)
            dst[off[0]] = src[off[1]];
        else
            dst[off[0]] = cast<D>(src[off[1]]);
    }
}

/* Contiguous cast with packs of VEC elements (16 bytes on the wider side). */
template <int VEC, typename D, typename S>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS) cast_contiguous_kernel(int64_t n, D *dst, const S *src) {
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t n_packs = n / VEC;
    for (int64_t v = first; v < n_packs; v += stride) {
        ampc_cuda_pack<S, VEC> in = reinterpret_cast<const ampc_cuda_pack<S, VEC> *>(src)[v];
        ampc_cuda_pack<D, VEC> out;
#pragma unroll
        for (int j = 0; j < VEC; j++) out.v[j] = cast<D>(in.v[j]);
        reinterpret_cast<ampc_cuda_pack<D, VEC> *>(dst)[v] = out;
    }
    for (int64_t i = n_packs * VEC + first; i < n; i += stride) dst[i] = cast<D>(src[i]);
}

/* Unsigned word of an item size: same-dtype copies and fills move bits. */
template <int BYTES> struct word_of;
template <> struct word_of<1> { typedef uint8_t type; };
template <> struct word_of<2> { typedef uint16_t type; };
template <> struct word_of<4> { typedef uint32_t type; };
template <> struct word_of<8> { typedef uint64_t type; };

static cudaStream_t stream_of(const ampc_tensor *t) { return ampc_cuda_stream_of(t); }

template <typename D, typename S> static ampc_status cast_launch(ampc_tensor *dst, const ampc_tensor *src) {
    int64_t n = ampc_numel(dst);
    const ampc_tensor *ins[1] = {src};
    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &dst, 1, ins));
    D *d = (D *)ampc_data_ptr(dst);
    const S *s = (const S *)ampc_data_ptr(src);
    constexpr int VEC = 16 / (sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
    if (ix.contiguous && ampc_cuda_pack_aligned<D, VEC>(d) && ampc_cuda_pack_aligned<S, VEC>(s))
        cast_contiguous_kernel<VEC, D, S><<<ampc_cuda_grid(n / VEC), AMPC_CUDA_THREADS, 0, stream_of(dst)>>>(n, d, s);
    else
        copy_strided_kernel<D, S><<<ampc_cuda_grid(n), AMPC_CUDA_THREADS, 0, stream_of(dst)>>>(ix, d, s);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

template <typename W> static ampc_status bits_launch(ampc_tensor *dst, const ampc_tensor *src) {
    const ampc_tensor *ins[1] = {src};
    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &dst, 1, ins));
    copy_strided_kernel<W, W><<<ampc_cuda_grid(ix.numel), AMPC_CUDA_THREADS, 0, stream_of(dst)>>>(
        ix, (W *)ampc_data_ptr(dst), (const W *)ampc_data_ptr(src));
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* The 8 x 8 (destination, source) pairs. */
template <typename S> static ampc_status cast_from(ampc_tensor *dst, const ampc_tensor *src) {
    AMPC_CUDA_SWITCH_ALL(dst->dtype, "copy_", return cast_launch<scalar_t, S>(dst, src););
}

static ampc_status cast_any(ampc_tensor *dst, const ampc_tensor *src) {
    AMPC_CUDA_SWITCH_ALL(src->dtype, "copy_", return cast_from<scalar_t>(dst, src););
}

/* ------------------------------------------------------------------ copies, by where the tensors live */

/* A new reference, released at the end of the scope. */
struct tensor_ref {
    ampc_tensor *t;
    explicit tensor_ref(ampc_tensor *p) : t(p) {}
    ~tensor_ref() { ampc_tensor_decref(t); }
    tensor_ref(const tensor_ref &) = delete;
    tensor_ref &operator=(const tensor_ref &) = delete;
};

/* One contiguous block of the same bytes: same dtype, same element count (no broadcast), both
 * dense in row-major order. */
static bool same_block(const ampc_tensor *dst, const ampc_tensor *src) {
    return dst->dtype == src->dtype && ampc_numel(dst) == ampc_numel(src) && ampc_is_contiguous(dst) &&
           ampc_is_contiguous(src);
}

static ampc_device cpu_device() { return ampc_cpu_device(); }

/* The CPU COPY kernel (both tensors on the host), without the frontend's autograd or version
 * bump: those belong to the copy_ this kernel serves. */
static ampc_status host_copy(ampc_tensor *dst, const ampc_tensor *src) {
    ampc_copy_args args = {};
    args.dst = dst;
    args.src = src;
    return ampc_dispatch_copy(AMPC_OP_COPY, &args);
}

/* Both on GPU dst->device (current device set by the caller). */
static ampc_status copy_on_device(ampc_tensor *dst, const ampc_tensor *src) {
    if (ampc_numel(dst) == 0) return AMPC_OK;
    if (same_block(dst, src)) {
        if (ampc_data_ptr(dst) != ampc_data_ptr(src))
            AMPC_CUDA_TRY(cudaMemcpyAsync(ampc_data_ptr(dst), ampc_data_ptr(src), ampc_nbytes(dst),
                                          cudaMemcpyDeviceToDevice, stream_of(dst)));
        return AMPC_OK;
    }
    if (dst->dtype != src->dtype) return cast_any(dst, src);
    AMPC_CUDA_SWITCH_BITS(dst->dtype, "copy_", return bits_launch<bits_t>(dst, src););
}

/* A contiguous tensor of t's shape and dtype on `device` (t itself when it already is one). */
static ampc_tensor *contiguous_on(const ampc_tensor *t, ampc_device device) {
    if (ampc_is_contiguous(t) && ampc_device_eq(t->device, device)) {
        ampc_tensor_incref((ampc_tensor *)t);
        return (ampc_tensor *)t;
    }
    ampc_tensor *c = ampc_empty(t->ndim, t->shape, t->dtype, device);
    if (!c) return NULL;
    ampc_status st = device.type == AMPC_CPU ? host_copy(c, t) : copy_on_device(c, t);
    if (st != AMPC_OK) {
        ampc_tensor_decref(c);
        return NULL;
    }
    return c;
}

/* Host -> device. Only the source's own elements cross the bus (a broadcast source once); a cast,
 * broadcast or strided destination is then done by the device kernel from a dense stage. */
static ampc_status copy_host_to_device(ampc_tensor *dst, const ampc_tensor *src, bool non_blocking) {
    int dev = dst->device.index;
    if (same_block(dst, src))
        return ampc_cuda_upload(ampc_data_ptr(dst), ampc_data_ptr(src), ampc_nbytes(dst), dev, src->storage, non_blocking);
    tensor_ref host(contiguous_on(src, cpu_device())); /* src itself when already dense */
    if (!host.t) return ampc_last_status();
    if (same_block(dst, host.t))
        return ampc_cuda_upload(ampc_data_ptr(dst), ampc_data_ptr(host.t), ampc_nbytes(dst), dev, host.t->storage,
                                non_blocking);
    tensor_ref stage(ampc_empty(src->ndim, src->shape, src->dtype, dst->device));
    if (!stage.t) return ampc_last_status();
    AMPC_TRY(ampc_cuda_upload(ampc_data_ptr(stage.t), ampc_data_ptr(host.t), ampc_nbytes(stage.t), dev,
                              host.t->storage, non_blocking));
    return copy_on_device(dst, stage.t);
}

/* Device -> host. The device kernel casts into a dense temporary of the destination's dtype, in
 * the source's own shape (a broadcast is left to the host, so no more bytes than the source's
 * cross the bus); the CPU kernel then scatters it into a strided destination. */
static ampc_status copy_device_to_host(ampc_tensor *dst, const ampc_tensor *src, bool non_blocking) {
    int dev = src->device.index;
    if (same_block(dst, src))
        return ampc_cuda_download(ampc_data_ptr(dst), ampc_data_ptr(src), ampc_nbytes(dst), dev, dst->storage,
                                  non_blocking);
    ampc_tensor *dense = NULL;
    if (src->dtype == dst->dtype && ampc_is_contiguous(src)) {
        ampc_tensor_incref((ampc_tensor *)src);
        dense = (ampc_tensor *)src;
    } else {
        dense = ampc_empty(src->ndim, src->shape, dst->dtype, src->device);
        if (!dense) return ampc_last_status();
        ampc_status st = copy_on_device(dense, src);
        if (st != AMPC_OK) {
            ampc_tensor_decref(dense);
            return st;
        }
    }
    tensor_ref dense_ref(dense);
    if (same_block(dst, dense))
        return ampc_cuda_download(ampc_data_ptr(dst), ampc_data_ptr(dense), ampc_nbytes(dst), dev, dst->storage,
                                  non_blocking);
    tensor_ref host(ampc_empty(src->ndim, src->shape, dst->dtype, cpu_device()));
    if (!host.t) return ampc_last_status();
    AMPC_TRY(ampc_cuda_download(ampc_data_ptr(host.t), ampc_data_ptr(dense), ampc_nbytes(host.t), dev, NULL, false));
    return host_copy(dst, host.t);
}

/* A contiguous same-dtype block from GPU src_dev to GPU dst_dev, on dst's current stream, ordered
 * after the work already queued on src's current stream, and src's stream then waits for the copy
 * (so memory the source's stream frees is not reused under it), as PyTorch orders peer copies. */
static ampc_status peer_copy(void *dst, int dst_dev, const void *src, int src_dev, size_t nbytes) {
    cudaStream_t dst_stream = (cudaStream_t)ampc_cuda_current_stream(dst_dev);
    cudaStream_t src_stream = (cudaStream_t)ampc_cuda_current_stream(src_dev);
    cudaEvent_t src_ready, copied;
    {
        ampc_cuda_guard g(src_dev);
        AMPC_CUDA_TRY(cudaEventCreateWithFlags(&src_ready, cudaEventDisableTiming));
        cudaError_t err = cudaEventRecord(src_ready, src_stream);
        if (err != cudaSuccess) {
            cudaEventDestroy(src_ready);
            return ampc_cuda_error((int)err, "cudaEventRecord(src_ready)", __FILE__, __LINE__);
        }
    }
    ampc_cuda_guard g(dst_dev);
    cudaError_t err = cudaStreamWaitEvent(dst_stream, src_ready, 0);
    cudaEventDestroy(src_ready); /* released once recorded work completes */
    if (err != cudaSuccess) return ampc_cuda_error((int)err, "cudaStreamWaitEvent", __FILE__, __LINE__);
    AMPC_CUDA_TRY(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, nbytes, dst_stream));
    AMPC_CUDA_TRY(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    err = cudaEventRecord(copied, dst_stream);
    if (err == cudaSuccess) {
        ampc_cuda_guard gs(src_dev);
        err = cudaStreamWaitEvent(src_stream, copied, 0);
    }
    cudaEventDestroy(copied);
    if (err != cudaSuccess) return ampc_cuda_error((int)err, "cudaEventRecord/cudaStreamWaitEvent(copied)", __FILE__, __LINE__);
    return AMPC_OK;
}

static ampc_status copy_between_devices(ampc_tensor *dst, const ampc_tensor *src) {
    int dd = dst->device.index, sd = src->device.index;
    if (same_block(dst, src)) return peer_copy(ampc_data_ptr(dst), dd, ampc_data_ptr(src), sd, ampc_nbytes(dst));
    /* dense on the source GPU, across, then cast/broadcast/stride on the destination GPU */
    ampc_tensor *dense;
    {
        ampc_cuda_guard g(sd);
        dense = contiguous_on(src, src->device);
    }
    tensor_ref dense_ref(dense);
    if (!dense) return ampc_last_status();
    tensor_ref stage(ampc_empty(src->ndim, src->shape, src->dtype, dst->device));
    if (!stage.t) return ampc_last_status();
    AMPC_TRY(peer_copy(ampc_data_ptr(stage.t), dd, ampc_data_ptr(dense), sd, ampc_nbytes(stage.t)));
    ampc_cuda_guard g(dd);
    return copy_on_device(dst, stage.t);
}

static ampc_status cuda_copy(ampc_op op, const ampc_copy_args *p) {
    ampc_tensor *dst = p->dst;
    const ampc_tensor *src = p->src;
    if (ampc_numel(dst) == 0) return AMPC_OK;
    bool non_blocking = p->non_blocking;
    bool dst_gpu = dst->device.type == AMPC_CUDA, src_gpu = src->device.type == AMPC_CUDA;
    if (dst_gpu && src_gpu && dst->device.index == src->device.index) {
        ampc_cuda_guard g(dst);
        return copy_on_device(dst, src);
    }
    if (dst_gpu && src_gpu) return copy_between_devices(dst, src);
    if (dst_gpu && src->device.type == AMPC_CPU) {
        ampc_cuda_guard g(dst);
        return copy_host_to_device(dst, src, non_blocking);
    }
    if (src_gpu && dst->device.type == AMPC_CPU) {
        ampc_cuda_guard g(src);
        return copy_device_to_host(dst, src, non_blocking);
    }
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "copy_: the CUDA backend got no CUDA tensor");
}

/* ------------------------------------------------------------------ FILL */

/* Every element of a strided (possibly overlapping) view set to `value`'s bits. */
template <typename W>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS) fill_strided_kernel(ampc_cuda_indexer ix, W *data, W value) {
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t off[1];
        ampc_cuda_offsets<1>(ix, i, off);
        data[off[0]] = value;
    }
}

/* A dense, 16-byte-aligned run: 128-bit stores, then the tail. */
template <typename W>
__global__ void __launch_bounds__(AMPC_CUDA_THREADS) fill_contiguous_kernel(int64_t n, W *data, W value) {
    constexpr int VEC = 16 / sizeof(W);
    ampc_cuda_pack<W, VEC> pack;
#pragma unroll
    for (int j = 0; j < VEC; j++) pack.v[j] = value;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t n_packs = n / VEC;
    for (int64_t v = first; v < n_packs; v += stride) reinterpret_cast<ampc_cuda_pack<W, VEC> *>(data)[v] = pack;
    for (int64_t i = n_packs * VEC + first; i < n; i += stride) data[i] = value;
}

template <typename W> static ampc_status fill_launch(ampc_tensor *t, const unsigned char *bytes) {
    W value;
    memcpy(&value, bytes, sizeof value);
    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &t, 0, NULL));
    W *data = (W *)ampc_data_ptr(t);
    if (ix.contiguous && ampc_cuda_pack_aligned<W, 16 / sizeof(W)>(data))
        fill_contiguous_kernel<W><<<ampc_cuda_grid(ix.numel / (16 / (int64_t)sizeof(W))), AMPC_CUDA_THREADS, 0,
                                    stream_of(t)>>>(ix.numel, data, value);
    else
        fill_strided_kernel<W><<<ampc_cuda_grid(ix.numel), AMPC_CUDA_THREADS, 0, stream_of(t)>>>(ix, data, value);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_fill(ampc_op op, const ampc_fill_args *p) {
    ampc_tensor *t = p->dst;
    if (ampc_numel(t) == 0) return AMPC_OK;
    /* The value's bits in the tensor's dtype, converted by the CPU FILL kernel itself (one
     * element on the host), so both devices store the same bits for every value. */
    unsigned char bytes[8] = {0};
    size_t item = ampc_dtype_itemsize(t->dtype);
    {
        ampc_tensor *one = ampc_full(0, NULL, p->value, t->dtype, cpu_device());
        if (!one) return ampc_last_status();
        memcpy(bytes, ampc_data_ptr(one), item);
        ampc_tensor_decref(one);
    }
    ampc_cuda_guard g(t);
    static const unsigned char zeros[8] = {0};
    if (ampc_is_contiguous(t) && memcmp(bytes, zeros, item) == 0) {
        AMPC_CUDA_TRY(cudaMemsetAsync(ampc_data_ptr(t), 0, ampc_nbytes(t), stream_of(t)));
        return AMPC_OK;
    }
    AMPC_CUDA_SWITCH_BITS(t->dtype, "fill_", return fill_launch<bits_t>(t, bytes););
}

} // namespace

/* ------------------------------------------------------------------ host <-> device bytes */

/* After a transfer queued on `stream`: leave it running (non_blocking with pinned host storage,
 * the pinned allocator told), or wait as the transfer rules of cuda_backend.h say. */
static ampc_status finish_transfer(bool to_host, int device, cudaStream_t stream, const ampc_storage *host,
                                   bool non_blocking) {
    if (non_blocking && host && host->pinned) {
        ampc_cuda_pinned_record_use(host, device, stream);
        return AMPC_OK;
    }
    if (to_host) return ampc_cuda_finish_to_host(device);
    AMPC_CUDA_TRY(cudaStreamSynchronize(stream)); /* pageable memory may change as soon as we return */
    return AMPC_OK;
}

extern "C" ampc_status ampc_cuda_upload(void *dst, const void *src, size_t nbytes, int device, const ampc_storage *host,
                                        bool non_blocking) {
    if (nbytes == 0) return AMPC_OK;
    ampc_cuda_guard g(device);
    cudaStream_t stream = (cudaStream_t)ampc_cuda_current_stream(device);
    AMPC_CUDA_TRY(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, stream));
    return finish_transfer(false, device, stream, host, non_blocking);
}

extern "C" ampc_status ampc_cuda_download(void *dst, const void *src, size_t nbytes, int device,
                                          const ampc_storage *host, bool non_blocking) {
    if (nbytes == 0) return AMPC_OK;
    ampc_cuda_guard g(device);
    cudaStream_t stream = (cudaStream_t)ampc_cuda_current_stream(device);
    AMPC_CUDA_TRY(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream));
    return finish_transfer(true, device, stream, host, non_blocking);
}

extern "C" void ampc_cuda_register_copy(void) {
    ampc_register_copy(AMPC_CUDA, cuda_copy);
    ampc_register_fill(AMPC_CUDA, cuda_fill);
}
