/* real/nccl/nccl_kernels.cu - the GPU engine's kernels: the spin kernel
 * that models compute for an exact duration (so compute really overlaps
 * NCCL's communication), and the elementwise reduction used when a
 * custom core/ schedule runs through ncclSend/ncclRecv. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include <herd/types.h>
}

__device__ static uint64_t globaltimer_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* One thread spins on the global timer: the kernel occupies the stream for
 * `ns` nanoseconds and nothing else, like a compute kernel of that length
 * as far as stream ordering and overlap are concerned. */
__global__ static void spin_kernel(uint64_t ns)
{
    uint64_t start = globaltimer_ns();
    while (globaltimer_ns() - start < ns) {
    }
}

extern "C" cudaError_t nccl_spin_launch(uint64_t ns, cudaStream_t stream)
{
    spin_kernel<<<1, 1, 0, stream>>>(ns);
    return cudaGetLastError();
}

template <typename T> struct acc_type { typedef T type; };
template <> struct acc_type<__half> { typedef float type; };
template <> struct acc_type<__nv_bfloat16> { typedef float type; };

template <typename T, typename A> __device__ static T from_acc(A v)
{
    return (T)v;
}
template <> __device__ __half from_acc<__half, float>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __nv_bfloat16 from_acc<__nv_bfloat16, float>(float v)
{
    return __float2bfloat16_rn(v);
}

template <typename T>
__global__ static void reduce_kernel(T *dst, const T *a, const T *b,
                                     size_t n, int op)
{
    typedef typename acc_type<T>::type A;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        A x = (A)a[i], y = (A)b[i], r;
        switch (op) {
        case HERD_PRODUCT: r = x * y; break;
        case HERD_MIN: r = y < x ? y : x; break;
        case HERD_MAX: r = y > x ? y : x; break;
        default: r = x + y; break; /* SUM, AVG (divided at the end) */
        }
        dst[i] = from_acc<T, A>(r);
    }
}

template <typename T>
static cudaError_t launch(void *d, const void *a, const void *b, size_t n,
                          int op, cudaStream_t s)
{
    if (n == 0)
        return cudaSuccess;
    unsigned blocks = (unsigned)((n + 255) / 256);
    if (blocks > 1024)
        blocks = 1024;
    reduce_kernel<T><<<blocks, 256, 0, s>>>((T *)d, (const T *)a,
                                            (const T *)b, n, op);
    return cudaGetLastError();
}

extern "C" cudaError_t nccl_reduce_launch(void *dst, const void *a,
                                          const void *b, size_t n,
                                          herd_dtype_t dt, herd_op_t op,
                                          cudaStream_t s)
{
    switch (dt) {
    case HERD_INT8: return launch<int8_t>(dst, a, b, n, op, s);
    case HERD_UINT8: return launch<uint8_t>(dst, a, b, n, op, s);
    case HERD_INT32: return launch<int32_t>(dst, a, b, n, op, s);
    case HERD_INT64: return launch<int64_t>(dst, a, b, n, op, s);
    case HERD_FLOAT16: return launch<__half>(dst, a, b, n, op, s);
    case HERD_BFLOAT16: return launch<__nv_bfloat16>(dst, a, b, n, op, s);
    case HERD_FLOAT32: return launch<float>(dst, a, b, n, op, s);
    case HERD_FLOAT64: return launch<double>(dst, a, b, n, op, s);
    default: return cudaErrorInvalidValue;
    }
}
