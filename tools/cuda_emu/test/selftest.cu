/* Self-test of the CUDA emulator: `tools/cuda_emu/test/run_selftest.sh`. Each case prints OK or
 * FAIL; the reports the bad kernels must trigger go to stderr. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <vector>

static int failures = 0;
#define EXPECT(c, what)                                              \
    do {                                                             \
        bool ok_ = (c);                                              \
        printf("%s %s\n", ok_ ? "OK  " : "FAIL", what);              \
        if (!ok_) failures++;                                        \
    } while (0)

__global__ void block_sum(const float *x, float *out, int n) {
    __shared__ float warp_sums[32];
    float v = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) out[blockIdx.x] = v;
    }
}

__global__ void scan_up(int *out) {
    int v = threadIdx.x + 1;
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, v, o);
        if ((threadIdx.x & 31) >= o) v += u;
    }
    out[threadIdx.x] = v;
}

__global__ void divergent_barrier(int *out) {
    if (threadIdx.x < 16) __syncthreads();
    else __syncthreads();
    out[threadIdx.x] = 1;
}

__global__ void deadlock(int *out) {
    if (threadIdx.x < 16) __syncthreads(); /* the others never arrive: exit counts as arrived */
    if (threadIdx.x >= 16) { int v = __shfl_xor_sync(0xffffffffu, 1, 1); out[threadIdx.x] = v; }
}

__global__ void exited_lanes_shuffle(float *out) {
    if (threadIdx.x >= 20) return;
    float v = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
    out[threadIdx.x] = v;
}

__global__ void __launch_bounds__(128) bounded(int *out) { out[threadIdx.x] = 1; }

__global__ void atomics(int *cnt, float *sum, __half *h) {
    atomicAdd(cnt, 1);
    atomicAdd(sum, 0.5f);
    atomicAdd(h, __float2half(1.0f));
}

template <typename T> __global__ void fill(T *p, T v, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = v;
}

int main() {
    const int n = 1000;
    float *x, *out;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&out, 64 * sizeof(float));
    std::vector<float> h(n);
    double want = 0;
    for (int i = 0; i < n; i++) h[i] = (float)(i % 7) - 2.5f, want += h[i];
    cudaMemcpy(x, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    block_sum<<<2, 256>>>(x, out, n);
    float got[2];
    cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost);
    EXPECT(cudaGetLastError() == cudaSuccess && got[0] == (float)want && got[1] == (float)want, "block sum with shuffles");

    int *iv;
    cudaMalloc(&iv, 1024 * sizeof(int));
    scan_up<<<1, 64>>>(iv);
    int s[64];
    cudaMemcpy(s, iv, sizeof s, cudaMemcpyDeviceToHost);
    bool ok = true;
    for (int t = 0; t < 64; t++) {
        int l = t & 31, base = t - l, w = 0;
        for (int k = 0; k <= l; k++) w += base + k + 1;
        ok = ok && s[t] == w;
    }
    EXPECT(cudaGetLastError() == cudaSuccess && ok, "warp inclusive scan with __shfl_up_sync");

    fill<int><<<4, 128>>>(iv, 7, 1000);
    int f[1000];
    cudaMemcpy(f, iv, sizeof f, cudaMemcpyDeviceToHost);
    ok = true;
    for (int i = 0; i < 1000; i++) ok = ok && f[i] == 7;
    EXPECT(cudaGetLastError() == cudaSuccess && ok, "grid-stride fill");

    divergent_barrier<<<1, 64>>>(iv);
    EXPECT(cudaGetLastError() == cudaErrorLaunchFailure, "divergent __syncthreads is reported");
    deadlock<<<1, 32>>>(iv);
    EXPECT(cudaGetLastError() == cudaErrorLaunchFailure, "deadlock is reported");
    exited_lanes_shuffle<<<1, 32>>>(out);
    EXPECT(cudaGetLastError() == cudaErrorLaunchFailure, "full-mask shuffle with exited lanes is reported");
    exited_lanes_shuffle<<<1, 20>>>(out);
    EXPECT(cudaGetLastError() == cudaErrorLaunchFailure, "full-mask shuffle in a partial warp is reported");
    bounded<<<1, 256>>>(iv);
    EXPECT(cudaGetLastError() == cudaErrorLaunchFailure, "launch above __launch_bounds__ is reported");
    bounded<<<0, 128>>>(iv);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration, "empty grid is refused");
    bounded<<<1, 2048>>>(iv);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration, "2048 threads per block are refused");
    bounded<<<dim3(1, 70000), 32>>>(iv);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration, "gridDim.y > 65535 is refused");
    int host_buf[256];
    bounded<<<1, 32>>>(host_buf);
    EXPECT(cudaGetLastError() == cudaErrorLaunchFailure, "host pointer kernel argument is reported");

    int *cnt;
    float *sum;
    __half *hh;
    cudaMalloc(&cnt, 4);
    cudaMalloc(&sum, 4);
    cudaMalloc(&hh, 2);
    cudaMemset(cnt, 0, 4);
    cudaMemset(sum, 0, 4);
    cudaMemset(hh, 0, 2);
    atomics<<<3, 100>>>(cnt, sum, hh);
    int c;
    float sm;
    __half hv;
    cudaMemcpy(&c, cnt, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&sm, sum, 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hv, hh, 2, cudaMemcpyDeviceToHost);
    EXPECT(c == 300 && sm == 150.0f && __half2float(hv) == 300.0f, "atomics (int, float, half)");

    EXPECT(cudaMemcpy(got, x + n - 1, 8, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue,
           "a copy beyond the allocation is refused");
    size_t fr, tot;
    cudaMemGetInfo(&fr, &tot);
    void *big = nullptr;
    EXPECT(cudaMalloc(&big, tot + 1) == cudaErrorMemoryAllocation, "allocation beyond the capacity fails");
    cudaGetLastError();
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
