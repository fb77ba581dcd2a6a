// Dot product: the three kernels of the article "[CUDA]CUDA编程实战五——dot向量点积运算"
// (wildkid1024, 2021) as it prints them, its bugs beside their fixes, and the kernels that go
// beyond it: the whole sum on the device, 16-byte loads, and two ways to make the float32 sum
// accurate (a float64 accumulator; a compensated float32 one).
//
// Every kernel computes sum_i a[i] * b[i]. The article's kernels are float only and take the
// length as the compile-time constant N (-DARTICLE_N=..., 1024 by default), as the article's
// `const int N = 1024;` does. The other kernels take n as an argument; their types come in as
// -D options: ELEM is the input element, ACC the accumulator (float and float by default;
// double and double work too). Blocks are 1-D.
//
// The article's code is reproduced as printed, with only its names changed (dot_simple ->
// dot1_article, dot2 -> dot2_article, dot3 -> dot3_article) and its comments in English.
#ifndef ELEM
#define ELEM float
#endif
#ifndef ACC
#define ACC ELEM
#endif
#ifndef ARTICLE_N
#define ARTICLE_N 1024
#endif
typedef ELEM elem_t;
typedef ACC acc_t;

#include "common.cuh"

const int N = ARTICLE_N;  // the article's vector length, fixed at compile time

// ---- 1. One block, a product per thread, thread 0 adds them up (the article's code).
// Each thread writes a[i] * b[i] to shared memory; after the barrier, thread 0 adds all N
// products one after another. BUG 1: `sum` is an int: every `sum += temp[i]` adds in float and
// truncates back to int, so fractions are lost (random data gives nonsense), and from 2^24 on
// the float add rounds. BUG 2: temp is indexed with the global index i: with more than one
// block, thread 0 of block 0 reads products that other blocks wrote into *their* shared
// memory (here: uninitialised). There is no bounds check either: grid * block must equal N.
#if ARTICLE_N <= 12288  // temp[N] must fit in 48 KiB of static shared memory, or no kernel of the module loads
extern "C" __global__ void dot1_article(float* a, float* b, float* c) {
    __shared__ float temp[N];
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    temp[i] = a[i] * b[i];
    __syncthreads();

    if (0 == i) {
        int sum = 0;
        for (int i = 0; i < N; i++) {
            sum += temp[i];
        }
        *c = sum;
        printf("sum Calculated on Device: %.6g\n", *c);
    }
}
#endif

// 1, fixed: shared memory indexed by threadIdx.x (one slot per thread of *this* block), threads
// past n contribute 0, a float accumulator, and one partial sum per block in c[blockIdx.x], so
// any number of blocks works. Thread 0 still adds blockDim.x values one by one (warps 1.. have
// left, lanes 1-31 of warp 0 sit masked; the block holds its place on the SM until it is done):
// the slow part of the kernel, and a sequential float sum whose partial sums grow big: on the
// article's data (1024 products, one block) it loses 768 of 714779648, as the article's int does.
extern "C" __global__ void dot1(const elem_t* a, const elem_t* b, acc_t* c, int n) {
    extern __shared__ acc_t temp[];
    unsigned int i = threadIdx.x + blockIdx.x * blockDim.x;
    temp[threadIdx.x] = (i < n) ? (acc_t)a[i] * b[i] : (acc_t)0;
    __syncthreads();

    if (threadIdx.x == 0) {
        acc_t sum = 0;
        for (unsigned int k = 0; k < blockDim.x; k++) {
            sum += temp[k];
        }
        c[blockIdx.x] = sum;
    }
}

// ---- 2. Grid-stride loop, one atomicAdd per thread (the article's code).
// Thread t of every block adds a[i] * b[i] for i = t, t + (all threads), ...; then adds its sum
// into c[threadIdx.x] with atomicAdd, so the grid's blocks do not overwrite each other (`+=`
// would race); the host adds the blockDim.x words of c. The kernel is right; its HOST is not:
// c comes from cudaMalloc and is never zeroed, so the atomics add to whatever it held. The
// __syncthreads() at the end orders nothing. Launched with N/256 blocks (the article), every
// thread gets one element: the loop never loops and all N threads do an atomic.
extern "C" __global__ void dot2_article(float* a, float* b, float* c) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int cacheIdx = threadIdx.x;
    float sum = 0.0;

    while (i < N) {
        sum += a[i] * b[i];
        i += blockDim.x * gridDim.x;
    }
    // c[cacheIdx] += sum;  // not synchronised: blocks would race
    atomicAdd(&c[cacheIdx], sum);
    __syncthreads();
}

// 2, fixed: the length is an argument and the useless barrier is gone. The fix that matters is
// on the host: c (blockDim.x words) must be zeroed before every launch. With a grid of a few
// blocks per SM, each thread now sums many products in a register and only grid x block
// atomics reach c: gridDim.x of them on each word.
extern "C" __global__ void dot2(const elem_t* a, const elem_t* b, acc_t* c, int n) {
    unsigned int i = threadIdx.x + blockIdx.x * blockDim.x;
    acc_t sum = 0;
    while (i < n) {
        sum += (acc_t)a[i] * b[i];
        i += blockDim.x * gridDim.x;
    }
    atomicAdd(&c[threadIdx.x], sum);
}

// ---- 3. Grid-stride loop, then a shared-memory tree per block (the article's code).
// Each block halves its 256 partial sums log2(256) = 8 times, and writes one sum per block to
// c[blockIdx.x]; the host adds gridDim.x of them. The kernel is right for blocks of 256 (or any
// power of two up to 256); a bigger block writes past cache[255]. The article's host code
// launches dot2 instead of this kernel, and then adds c[0 .. N/256): a wrong answer.
extern "C" __global__ void dot3_article(float* a, float* b, float* c) {
    const int threadsPerBlock = 256;
    __shared__ float cache[threadsPerBlock];
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int cacheIdx = threadIdx.x;

    float sum = 0;
    while (i < N) {
        sum += a[i] * b[i];
        i += blockDim.x * gridDim.x;
    }
    cache[cacheIdx] = sum;
    __syncthreads();

    int num = blockDim.x / 2;
    while (num != 0) {
        if (cacheIdx < num) cache[cacheIdx] = cache[cacheIdx] + cache[cacheIdx + num];

        __syncthreads();
        num /= 2;
    }

    if (cacheIdx == 0) c[blockIdx.x] = cache[0];
}

// 3, fixed: the length is an argument and cache is dynamic shared memory, one slot per thread,
// so any power-of-two block up to 1024 works. No more atomics: each block writes its own word.
// The tree adds pairs of partial sums: its rounding error grows with log2(block), not block.
extern "C" __global__ void dot3(const elem_t* a, const elem_t* b, acc_t* c, int n) {
    extern __shared__ acc_t cache[];
    unsigned int i = threadIdx.x + blockIdx.x * blockDim.x;
    unsigned int cacheIdx = threadIdx.x;

    acc_t sum = 0;
    while (i < n) {
        sum += (acc_t)a[i] * b[i];
        i += blockDim.x * gridDim.x;
    }
    cache[cacheIdx] = sum;
    __syncthreads();

    unsigned int num = blockDim.x / 2;
    while (num != 0) {
        if (cacheIdx < num) cache[cacheIdx] = cache[cacheIdx] + cache[cacheIdx + num];

        __syncthreads();
        num /= 2;
    }

    if (cacheIdx == 0) c[blockIdx.x] = cache[0];
}

// The article warns that the tree's __syncthreads() must stay outside the `if`. Here it is
// inside: only the threads with cacheIdx < num reach it, the others go on to the next step or
// leave. A barrier that part of the block never reaches is undefined behaviour: it may hang,
// or pass with a wrong sum. The emulator stops it (BarrierError) and Kernel.check names it.
extern "C" __global__ void dot3_sync_in_if(const elem_t* a, const elem_t* b, acc_t* c, int n) {
    extern __shared__ acc_t cache[];
    unsigned int i = threadIdx.x + blockIdx.x * blockDim.x;
    unsigned int cacheIdx = threadIdx.x;

    acc_t sum = 0;
    while (i < n) {
        sum += (acc_t)a[i] * b[i];
        i += blockDim.x * gridDim.x;
    }
    cache[cacheIdx] = sum;
    __syncthreads();

    unsigned int num = blockDim.x / 2;
    while (num != 0) {
        if (cacheIdx < num) {
            cache[cacheIdx] = cache[cacheIdx] + cache[cacheIdx + num];
            __syncthreads();  // WRONG: threads with cacheIdx >= num never get here
        }
        num /= 2;
    }

    if (cacheIdx == 0) c[blockIdx.x] = cache[0];
}

// ---- Beyond the article: the answer as one number on the device.

// 4. Warp shuffles, and one atomic per block. block_sum (common.cuh) adds a block's partial
// sums through register shuffles: no shared-memory tree, 32 slots of scratch. Thread 0 then
// adds the block's sum into out[0] (zeroed by the host): gridDim.x atomics in all, and no
// host loop. The order the blocks' atomics land in changes from run to run, so on a GPU the
// last bits of the answer can too.
extern "C" __global__ void dot_shfl(const elem_t* a, const elem_t* b, acc_t* out, int n) {
    __shared__ acc_t scratch[32];
    acc_t sum = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        sum += (acc_t)a[i] * b[i];
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}

// Accumulators for the vectorised loop below: each adds one product x * y to its running sum.
struct Plain {  // in the accumulator type: sum = fma(x, y, sum), one rounding per element
    acc_t sum = 0;
    __device__ void add(elem_t x, elem_t y) { sum += (acc_t)x * y; }
};

struct Wide {  // in float64: a float32 product is exact in double, the sum rounds 2^29 times finer
    double sum = 0;
    __device__ void add(elem_t x, elem_t y) { sum += (double)x * (double)y; }
};

// Compensated (Ogita, Rump and Oishi's Dot2, 2005): the sum is carried as s + c. Each product
// is split into its rounded value p and its exact rounding error (fma(x, y, -p), TwoProduct);
// adding p to s splits the same way (TwoSum: t + e == s + p exactly); every error goes into c.
// The result is as accurate as a sum in twice the precision, rounded once. __fmul_rn keeps the
// compiler from fusing x * y into the add (an fma there would break the TwoSum identity).
__device__ __forceinline__ float mul_rn(float x, float y) { return __fmul_rn(x, y); }
__device__ __forceinline__ double mul_rn(double x, double y) { return __dmul_rn(x, y); }

struct Compensated {
    elem_t s = 0, c = 0;
    __device__ void add(elem_t x, elem_t y) {
        elem_t p = mul_rn(x, y);
        elem_t pe = fma(x, y, -p);  // x * y == p + pe exactly
        elem_t t = s + p;
        elem_t z = t - s;
        elem_t e = (s - (t - z)) + (p - z);  // s + p == t + e exactly
        s = t;
        c += pe + e;
    }
    __device__ void merge(elem_t s2, elem_t c2) {  // (s, c) += (s2, c2)
        elem_t t = s + s2;
        elem_t z = t - s;
        elem_t e = (s - (t - z)) + (s2 - z);
        s = t;
        c += c2 + e;
    }
};

// 5. 16-byte loads: one instruction brings four floats of a and four of b, so a warp asks for
// 512 bytes per request, and each thread issues LOADS such pairs before it uses any: the
// loads' latencies overlap and more bytes are in flight per SM. The vector part needs a and b
// 16-byte aligned (CuPy's arrays are; a view such as a[1:] is not): otherwise every element
// takes the 4-byte path. The last n % 4 elements (the tail) always do.
#ifndef LOADS
#define LOADS 2
#endif
struct __align__(16) Vec16 {
    elem_t v[16 / sizeof(elem_t)];
};

template <class Acc>
__device__ void accumulate(const elem_t* __restrict__ a, const elem_t* __restrict__ b, int n, Acc& acc) {
    const int per = 16 / sizeof(elem_t);
    const unsigned int first = blockIdx.x * blockDim.x + threadIdx.x, stride = blockDim.x * gridDim.x;
    unsigned int done = 0;  // elements covered by 16-byte loads
    if (((reinterpret_cast<size_t>(a) | reinterpret_cast<size_t>(b)) & 15) == 0) {
        const Vec16* __restrict__ av = reinterpret_cast<const Vec16*>(a);
        const Vec16* __restrict__ bv = reinterpret_cast<const Vec16*>(b);
        const unsigned int nvec = n / per;
        unsigned int j = first;
        for (; j + (LOADS - 1) * stride < nvec; j += LOADS * stride) {
            Vec16 pa[LOADS], pb[LOADS];
#pragma unroll
            for (int u = 0; u < LOADS; ++u) {
                pa[u] = av[j + u * stride];
                pb[u] = bv[j + u * stride];
            }
#pragma unroll
            for (int u = 0; u < LOADS; ++u)
#pragma unroll
                for (int k = 0; k < per; ++k) acc.add(pa[u].v[k], pb[u].v[k]);
        }
        for (; j < nvec; j += stride) {  // fewer than LOADS vectors left for this thread
            Vec16 pa = av[j], pb = bv[j];
#pragma unroll
            for (int k = 0; k < per; ++k) acc.add(pa.v[k], pb.v[k]);
        }
        done = nvec * per;
    }
    for (unsigned int i = done + first; i < n; i += stride) acc.add(a[i], b[i]);  // tail, or unaligned
}

extern "C" __global__ void dot_vec4(const elem_t* __restrict__ a, const elem_t* __restrict__ b, acc_t* out, int n) {
    __shared__ acc_t scratch[32];
    Plain acc;
    accumulate(a, b, n, acc);
    acc_t sum = block_sum(acc.sum, scratch);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}

// 6. A float64 accumulator: the same loop, each product widened to double (exactly) and added
// in double; one double atomic per block into out[0] (zeroed by the host). The error of the
// float32 sum is gone. It costs one FP64 add per element: free on an H100/H200 (FP64 at half
// the FP32 rate) and still under the memory time on GPUs with 1/64-rate FP64.
extern "C" __global__ void dot_f64(const elem_t* __restrict__ a, const elem_t* __restrict__ b, double* out, int n) {
    __shared__ double scratch[32];
    Wide acc;
    accumulate(a, b, n, acc);
    double sum = block_sum(acc.sum, scratch);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}

// 7. Compensated, in float32 arithmetic only: each thread carries (s, c) through the loop
// (Dot2 above), warps and blocks merge pairs with TwoSum, and the last block to finish merges
// the blocks' pairs in a fixed order (no atomics on the value: the answer is the same every
// run). out[0] = (double)s + (double)c: the pair holds about 48 bits, more than a float.
// partial: 2 * gridDim.x words, written before they are read (no zeroing needed).
__device__ void warp_merge(Compensated& v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        elem_t s2 = __shfl_down_sync(FULL_MASK, v.s, offset);
        elem_t c2 = __shfl_down_sync(FULL_MASK, v.c, offset);
        v.merge(s2, c2);
    }
}

// The block's pair in thread 0, as block_sum does for one value. `scratch`: 64 shared slots;
// write it again only after a __syncthreads() that follows this call.
__device__ Compensated block_merge(Compensated v, elem_t* scratch) {
    const unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    warp_merge(v);
    if (lane == 0) {
        scratch[2 * warp] = v.s;
        scratch[2 * warp + 1] = v.c;
    }
    __syncthreads();
    if (warp == 0) {
        Compensated w;
        if (lane < (blockDim.x >> 5)) {
            w.s = scratch[2 * lane];
            w.c = scratch[2 * lane + 1];
        }
        warp_merge(w);
        v = w;
    }
    return v;
}

__device__ unsigned int dot_blocks_done = 0;

extern "C" __global__ void dot_compensated(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                           elem_t* partial, double* out, int n) {
    __shared__ elem_t scratch[64];
    __shared__ bool last;
    Compensated acc;
    accumulate(a, b, n, acc);
    acc = block_merge(acc, scratch);
    if (threadIdx.x == 0) {
        partial[2 * blockIdx.x] = acc.s;
        partial[2 * blockIdx.x + 1] = acc.c;
        __threadfence();  // the pair is visible to every block before the ticket is taken
        last = atomicInc(&dot_blocks_done, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        Compensated w;
        const volatile elem_t* p = partial;
        for (unsigned int k = threadIdx.x; k < gridDim.x; k += blockDim.x) w.merge(p[2 * k], p[2 * k + 1]);
        __syncthreads();  // scratch is reused
        w = block_merge(w, scratch);
        if (threadIdx.x == 0) out[0] = (double)w.s + (double)w.c;
    }
}

// ---- The last step of dot1, dot2 and dot3 on the device (the course's, not the article's).
// Those kernels leave partial sums (one per block; dot2: one per slot) that the article adds on
// the host. dot_sum_partials adds n of them in one launch: a grid-stride loop and block_sum per
// block, each block's sum into partial[blockIdx.x], and the last block to finish (an atomicInc
// ticket, as in dot_compensated) adds those in a fixed order into out[0]. No atomics on values:
// the answer is the same every run. partial: gridDim.x words, written before they are read.
__device__ unsigned int sum_blocks_done = 0;

extern "C" __global__ void dot_sum_partials(const acc_t* __restrict__ x, acc_t* partial, acc_t* out, int n) {
    __shared__ acc_t scratch[32];
    __shared__ bool last;
    acc_t sum = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) sum += x[i];
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sum;
        __threadfence();  // the block's sum is visible to every block before the ticket is taken
        last = atomicInc(&sum_blocks_done, gridDim.x - 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {
        const volatile acc_t* p = partial;
        acc_t total = 0;
        for (unsigned int k = threadIdx.x; k < gridDim.x; k += blockDim.x) total += p[k];
        __syncthreads();  // scratch is reused
        total = block_sum(total, scratch);
        if (threadIdx.x == 0) out[0] = total;
    }
}
