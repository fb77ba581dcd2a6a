// Prefix sum (scan): the kernels of the article "CUDA prefix sum 一步一步优化" (2015) as it prints
// them, its bugs beside their fixes, and the kernels that go beyond one block. Every kernel here
// computes the INCLUSIVE scan y[i] = x[0] ⊕ x[1] ⊕ ... ⊕ x[i], except blelloch_scan and
// blelloch_scan_padded, which compute the exclusive one (y[i] = x[0] ⊕ ... ⊕ x[i-1], y[0] = identity);
// inclusive_from_exclusive turns theirs into an inclusive scan.
//
// Types and the operator come in as -D options: ELEM is the element type (float, int, unsigned
// int, double...; lookback_scan takes 4-byte types only), and -DSCAN_MAX switches ⊕ from + to max
// (any associative operator works: the kernels only ever combine an earlier value with a later
// one, in order). Integer + wraps (modulo 2^32 for int), as the GPU's add.s32 does.
#ifndef ELEM
#define ELEM float
#endif
typedef ELEM elem_t;

#include "common.cuh"  // FULL_MASK; its warp/block scans are +-only, so the ⊕ versions are below

#if defined(SCAN_MAX)
// max's identity: the lowest value of the type (-infinity for floating point)
__device__ __forceinline__ float lowest(float) { return -__int_as_float(0x7f800000); }
__device__ __forceinline__ double lowest(double) { return -__longlong_as_double(0x7ff0000000000000ll); }
__device__ __forceinline__ int lowest(int) { return -2147483647 - 1; }
__device__ __forceinline__ unsigned int lowest(unsigned int) { return 0u; }
__device__ __forceinline__ long long lowest(long long) { return -9223372036854775807ll - 1; }
__device__ __forceinline__ elem_t combine(elem_t a, elem_t b) { return b > a ? b : a; }
__device__ __forceinline__ elem_t identity() { return lowest(elem_t()); }
#else
__device__ __forceinline__ elem_t combine(elem_t a, elem_t b) { return a + b; }
__device__ __forceinline__ elem_t identity() { return elem_t(0); }
#endif

// ---- 1. Naive: one thread per output.
// Thread i reads x[0..i] and combines them in order. Every output is independent, so any n and
// any block size work, but thread i does i operations (the last thread decides the time: O(N))
// and the threads read N(N+1)/2 elements between them: x[0] is read N times.
extern "C" __global__ void naive_scan(const elem_t* x, elem_t* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    elem_t acc = x[0];
    for (int j = 1; j <= i; ++j) acc = combine(acc, x[j]);
    y[i] = acc;
}

// ---- 2. Kogge-Stone (Hillis-Steele), the article's work_inefficient_scan_kernel, as printed.
// Step d adds the element 2^d to the left, in place: log2(N) steps, N log2(N) adds, one block
// (the article: "block_size = InputSize = shared memory size"). Typo fixed so that it compiles:
// `_shared__` -> `__shared__`; float -> elem_t. The article calls it exclusive; it is inclusive.
// BUG 1: the loop runs while stride <= threadIdx.x, so thread t passes __syncthreads() 2*ceil(log2(t+1))
// times and thread 0 never: the threads of the block wait at barriers the others never reach.
// BUG 2: it never writes Y. BUG 3: with InputSize < BLOCK_SIZE, threads past the end read XY
// elements nobody loaded.
template <int BLOCK_SIZE>
__global__ void kogge_stone_scan_article(elem_t *X, elem_t *Y, int InputSize) {
  __shared__ elem_t XY[BLOCK_SIZE];
  int i = blockIdx.x*blockDim.x + threadIdx.x;
  if (i < InputSize) {XY[threadIdx.x] = X[i];}
  // the code below performs iterative scan on XY
  for (unsigned int stride = 1; stride <= threadIdx.x; stride *= 2) {
    __syncthreads();
      elem_t in1 = XY[threadIdx.x-stride];
       __syncthreads();
       XY[threadIdx.x] += in1;
  }
}

// 2, fixed: every thread runs every step (the test moves inside the loop), elements past the end
// hold the identity, and the result is stored. Each step still needs two barriers: one between
// the previous step's writes and this step's reads, one between this step's reads and writes.
// Launch with blockDim.x == BLOCK_SIZE; covers N <= BLOCK_SIZE (more blocks: one scan per block).
template <int BLOCK_SIZE>
__global__ void kogge_stone_scan(const elem_t* X, elem_t* Y, int InputSize) {
    __shared__ elem_t XY[BLOCK_SIZE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    XY[threadIdx.x] = (i < InputSize) ? X[i] : identity();
    for (unsigned int stride = 1; stride < BLOCK_SIZE; stride *= 2) {
        __syncthreads();
        elem_t in1 = identity();
        if (threadIdx.x >= stride) in1 = XY[threadIdx.x - stride];
        __syncthreads();
        if (threadIdx.x >= stride) XY[threadIdx.x] = combine(in1, XY[threadIdx.x]);
    }
    if (i < InputSize) Y[i] = XY[threadIdx.x];  // a thread reads back what it wrote itself
}

// ---- 3. Kogge-Stone with double buffering.
// Each step reads one shared array and writes the other, so no thread overwrites an element
// another thread still has to read: one barrier per step instead of two, for twice the shared
// memory. The same log2(N) steps and N log2(N) adds.
template <int BLOCK_SIZE>
__global__ void kogge_stone_scan_double_buffer(const elem_t* X, elem_t* Y, int InputSize) {
    __shared__ elem_t XY[2][BLOCK_SIZE];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int in = 0;  // which buffer this step reads
    XY[0][threadIdx.x] = (i < InputSize) ? X[i] : identity();
    for (unsigned int stride = 1; stride < BLOCK_SIZE; stride *= 2) {
        __syncthreads();
        elem_t v = XY[in][threadIdx.x];
        if (threadIdx.x >= stride) v = combine(XY[in][threadIdx.x - stride], v);
        XY[1 - in][threadIdx.x] = v;
        in = 1 - in;
    }
    if (i < InputSize) Y[i] = XY[in][threadIdx.x];
}

// ---- 4. Brent-Kung, the article's work_efficient_scan_kernel, as printed.
// An up-sweep (a reduction tree: after it, XY[2^k - 1] holds the sum of its 2^k elements) and a
// down-sweep that adds the tree's partial sums into the elements the up-sweep skipped: 2 log2(N)
// steps and about 2N adds, in a 2*BLOCK_SIZE array. Typo fixed: `_shared__` -> `__shared__`.
// BUG 1: it loads only BLOCK_SIZE inputs (one per thread) into the 2*BLOCK_SIZE array, then scans
// all of it: the up-sweep reads the unloaded upper half. BUG 2: the down-sweep checks
// index < 2*BLOCK_SIZE but writes XY[index + stride] (the separate listing checked
// index + stride): each step, one thread writes past the end of XY.
template <int BLOCK_SIZE>
__global__ void brent_kung_scan_article(elem_t *X, elem_t *Y, int InputSize) {
// XY[2*BLOCK_SIZE] is in shared memory
  __shared__ elem_t XY[BLOCK_SIZE * 2];
  int i = blockIdx.x*blockDim.x + threadIdx.x;
  if (i < InputSize) {XY[threadIdx.x] = X[i];}

  // the code below performs iterative scan on XY
  for (unsigned int stride = 1; stride <= BLOCK_SIZE; stride *= 2) {
     __syncthreads();
    int index = (threadIdx.x+1)*stride*2 - 1;
    if(index < 2*BLOCK_SIZE)
        XY[index] += XY[index - stride];//index is alway bigger than stride
    __syncthreads();
  }
  // threadIdx.x+1 = 1,2,3,4....
  // stridek index = 1,3,5,7...


  for (unsigned int stride = BLOCK_SIZE/2; stride > 0 ; stride /= 2) {
    __syncthreads();
    int index = (threadIdx.x+1)*stride*2 - 1;
    if(index < 2*BLOCK_SIZE)
        XY[index + stride] += XY[index];

  }
  __syncthreads();
  if (i < InputSize) Y[i] = XY[threadIdx.x];
}

// 4, the article's two separate listings (reduction phase, then reverse phase) verbatim, inside
// kernel 4-fixed's load and store. BUG: the reduction phase stops at stride < BLOCK_SIZE, one
// step short for a 2*BLOCK_SIZE array: the root XY[2*BLOCK_SIZE-1] never receives the lower
// half's sum, and no down-sweep step writes it, so the last element of every block is wrong.
template <int BLOCK_SIZE>
__global__ void brent_kung_scan_phases_article(const elem_t* X, elem_t* Y, int InputSize) {
    __shared__ elem_t XY[2 * BLOCK_SIZE];
    int i = 2 * blockIdx.x * BLOCK_SIZE + threadIdx.x;
    XY[threadIdx.x] = (i < InputSize) ? X[i] : identity();
    XY[threadIdx.x + BLOCK_SIZE] = (i + BLOCK_SIZE < InputSize) ? X[i + BLOCK_SIZE] : identity();
  for (unsigned int stride = 1; stride < BLOCK_SIZE; stride *= 2) {
     __syncthreads();
    int index = (threadIdx.x+1)*stride*2 - 1;
    if(index < 2*BLOCK_SIZE)
        XY[index] += XY[index - stride];//index is alway bigger than stride
    __syncthreads();
  }
 for (unsigned int stride = BLOCK_SIZE/2; stride > 0 ; stride /= 2) {
    __syncthreads();
    int index = (threadIdx.x+1)*stride*2 - 1;
    if((index+stride)< 2*BLOCK_SIZE)
        XY[index + stride] += XY[index];
  }
    __syncthreads();
    if (i < InputSize) Y[i] = XY[threadIdx.x];
    if (i + BLOCK_SIZE < InputSize) Y[i + BLOCK_SIZE] = XY[threadIdx.x + BLOCK_SIZE];
}

// 4, fixed: each thread loads (and stores) two elements, so the 2*BLOCK_SIZE array is all input,
// padded with the identity past the end; the up-sweep runs to stride BLOCK_SIZE (the root) and
// the down-sweep checks the element it writes. One barrier per step (the article's second one
// in the up-sweep is redundant). Launch with blockDim.x == BLOCK_SIZE (a power of two);
// covers N <= 2*BLOCK_SIZE (more blocks: one scan per 2*BLOCK_SIZE elements).
template <int BLOCK_SIZE>
__global__ void brent_kung_scan(const elem_t* X, elem_t* Y, int InputSize) {
    __shared__ elem_t XY[2 * BLOCK_SIZE];
    int i = 2 * blockIdx.x * BLOCK_SIZE + threadIdx.x;
    XY[threadIdx.x] = (i < InputSize) ? X[i] : identity();
    XY[threadIdx.x + BLOCK_SIZE] = (i + BLOCK_SIZE < InputSize) ? X[i + BLOCK_SIZE] : identity();
    for (unsigned int stride = 1; stride <= BLOCK_SIZE; stride *= 2) {  // up-sweep
        __syncthreads();
        int index = (threadIdx.x + 1) * stride * 2 - 1;
        if (index < 2 * BLOCK_SIZE) XY[index] = combine(XY[index - stride], XY[index]);
    }
    for (unsigned int stride = BLOCK_SIZE / 2; stride > 0; stride /= 2) {  // down-sweep
        __syncthreads();
        int index = (threadIdx.x + 1) * stride * 2 - 1;
        if (index + stride < 2 * BLOCK_SIZE) XY[index + stride] = combine(XY[index], XY[index + stride]);
    }
    __syncthreads();
    if (i < InputSize) Y[i] = XY[threadIdx.x];
    if (i + BLOCK_SIZE < InputSize) Y[i + BLOCK_SIZE] = XY[threadIdx.x + BLOCK_SIZE];
}

// ---- 5. Blelloch: the work-efficient scan as GPU Gems 3 (ch. 39, 2007) writes it, EXCLUSIVE.
// The same up-sweep; then the root is replaced by the identity and each down-sweep step passes
// a node's value to its left child and (value + left child) to its right child. The tree's
// addresses are 2*offset apart, so at offset 16 a warp's 32 lanes hit the same bank: up to
// 32-way bank conflicts, and more than half the steps have them.
#ifndef LOG_NUM_BANKS
#define LOG_NUM_BANKS 5  // 32 banks since Fermi; GPU Gems 3 wrote this for 16 banks (4)
#endif
#define NUM_BANKS (1 << LOG_NUM_BANKS)
#if defined(GEMS_ZERO_BANK_CONFLICTS)
// GPU Gems 3's "zero bank conflicts" offset, as printed: `>>` binds looser than `+`, so this is
// n >> (NUM_BANKS + n) >> (2 * LOG_NUM_BANKS): always 0. Meant: (n >> LOG) + (n >> 2*LOG).
#define CONFLICT_FREE_OFFSET(n) ((n) >> NUM_BANKS + (n) >> (2 * LOG_NUM_BANKS))
#else
#define CONFLICT_FREE_OFFSET(n) ((n) >> LOG_NUM_BANKS)  // one padding word per NUM_BANKS
#endif
#define PADDED_LENGTH(n) ((n) + ((n) >> LOG_NUM_BANKS) + ((n) >> (2 * LOG_NUM_BANKS)))  // room for either

template <int BLOCK_SIZE, bool PADDED>
__device__ void blelloch_block(const elem_t* x, elem_t* y, int n, elem_t* temp) {
    const int N = 2 * BLOCK_SIZE;  // elements per block
    int thid = threadIdx.x, base = blockIdx.x * N;
    int ai = thid, bi = thid + BLOCK_SIZE;
    int bankOffsetA = PADDED ? CONFLICT_FREE_OFFSET(ai) : 0;
    int bankOffsetB = PADDED ? CONFLICT_FREE_OFFSET(bi) : 0;
    temp[ai + bankOffsetA] = (base + ai < n) ? x[base + ai] : identity();
    temp[bi + bankOffsetB] = (base + bi < n) ? x[base + bi] : identity();
    int offset = 1;
    for (int d = N >> 1; d > 0; d >>= 1) {  // up-sweep
        __syncthreads();
        if (thid < d) {
            int a = offset * (2 * thid + 1) - 1, b = offset * (2 * thid + 2) - 1;
            if (PADDED) a += CONFLICT_FREE_OFFSET(a), b += CONFLICT_FREE_OFFSET(b);
            temp[b] = combine(temp[a], temp[b]);
        }
        offset *= 2;
    }
    if (thid == 0) temp[N - 1 + (PADDED ? CONFLICT_FREE_OFFSET(N - 1) : 0)] = identity();
    for (int d = 1; d < N; d *= 2) {  // down-sweep
        offset >>= 1;
        __syncthreads();
        if (thid < d) {
            int a = offset * (2 * thid + 1) - 1, b = offset * (2 * thid + 2) - 1;
            if (PADDED) a += CONFLICT_FREE_OFFSET(a), b += CONFLICT_FREE_OFFSET(b);
            elem_t left = temp[a], right = temp[b];
            temp[a] = right;                  // the left child gets the parent's prefix
            temp[b] = combine(right, left);  // the right child: parent's prefix, then the left sum
        }
    }
    __syncthreads();
    if (base + ai < n) y[base + ai] = temp[ai + bankOffsetA];
    if (base + bi < n) y[base + bi] = temp[bi + bankOffsetB];
}

// Launch with blockDim.x == BLOCK_SIZE (a power of two); covers N <= 2*BLOCK_SIZE (more blocks:
// one exclusive scan per 2*BLOCK_SIZE elements).
template <int BLOCK_SIZE>
__global__ void blelloch_scan(const elem_t* x, elem_t* y, int n) {
    __shared__ elem_t temp[2 * BLOCK_SIZE];
    blelloch_block<BLOCK_SIZE, false>(x, y, n, temp);
}

// ---- 6. Blelloch with padding: one unused word after every 32, so element i lives at
// i + i/32. Addresses 2*offset apart now drift by one bank every 32 words and the tree's
// conflicts mostly vanish; the trace counts what is left. Same results, 2N/32 more words.
template <int BLOCK_SIZE>
__global__ void blelloch_scan_padded(const elem_t* x, elem_t* y, int n) {
    __shared__ elem_t temp[PADDED_LENGTH(2 * BLOCK_SIZE)];
    blelloch_block<BLOCK_SIZE, true>(x, y, n, temp);
}

// Converting between the two scans. Inclusive from exclusive needs the input:
// incl[i] = excl[i] ⊕ x[i]. Exclusive from inclusive is a shift: excl[0] = identity,
// excl[i] = incl[i-1] (the article: put the identity in front and drop the last element).
extern "C" __global__ void inclusive_from_exclusive(const elem_t* x, elem_t* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = combine(y[i], x[i]);
}

extern "C" __global__ void exclusive_from_inclusive(const elem_t* incl, elem_t* excl, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) excl[i] = i > 0 ? incl[i - 1] : identity();
}

// ---- Beyond one block: tiles of BLOCK*ITEMS elements.
// PMPP's coarsened three-phase scan, in registers: (1) each thread scans its ITEMS consecutive
// elements one after another; (2) the block scans the threads' totals with warp shuffles
// (Kogge-Stone across a warp's 32 lanes: log2(32) steps, no barrier, no shared memory; then
// one shared word per warp and a second warp scan over the warps' totals); (3) each thread adds
// the total of the threads before it to its elements. Most adds are sequential and cheap, and a
// block handles a tile far bigger than itself.

// ⊕-generic versions of common.cuh's warp_inclusive_scan and block scan.
// warp_scan: Kogge-Stone with the warp's 32 lanes for threads and their registers for the shared
// array. __shfl_up_sync hands lane l the v of lane l - offset (lanes below offset get their own
// back); the lanes of a warp execute each step together, so no barrier separates the steps, and
// the extra adds of Kogge-Stone's lanes cost nothing: the instruction issues once for all 32.
__device__ __forceinline__ elem_t warp_scan(elem_t v) {
    const unsigned int lane = threadIdx.x & 31;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        elem_t up = __shfl_up_sync(FULL_MASK, v, offset);
        if (lane >= offset) v = combine(up, v);
    }
    return v;
}

// block_exclusive_scan: a warp scan in every warp, then the warps' totals scanned through a
// word of shared memory per warp, so that each thread can add the total of the warps before its
// own. Only those BLOCK/32 words cross warps, where Kogge-Stone over BLOCK threads in shared
// memory moves every element through shared memory at every step.
// Exclusive scan of v over the block (thread 0 gets the identity); `total` gets the block's
// ⊕ of all v in every thread. `warp_totals`: BLOCK/32 shared slots, free again after the next
// __syncthreads() that follows this call.
template <int BLOCK>
__device__ elem_t block_exclusive_scan(elem_t v, elem_t* warp_totals, elem_t& total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, WARPS = BLOCK / 32;
    elem_t inc = warp_scan(v);
    elem_t exc = __shfl_up_sync(FULL_MASK, inc, 1);
    if (lane == 31) warp_totals[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        elem_t w = lane < WARPS ? warp_totals[lane] : identity();
        w = warp_scan(w);
        __syncwarp();  // every lane has read its slot before any lane overwrites one
        if (lane < WARPS) warp_totals[lane] = w;
    }
    __syncthreads();
    elem_t before = warp > 0 ? warp_totals[warp - 1] : identity();
    total = warp_totals[WARPS - 1];
    return lane > 0 ? combine(before, exc) : before;
}

// How a tile travels between global memory and registers (CUB's BLOCK_LOAD_WARP_TRANSPOSE).
// Warp w owns the 32*ITEMS consecutive elements from start = tile base + w*32*ITEMS. It reads
// them striped -- element k*32 + lane by lane `lane`, so every warp load is 128 contiguous
// bytes -- into its own slice of shared memory, and each lane reads back ITEMS consecutive
// elements, lane*ITEMS ... lane*ITEMS + ITEMS-1 (blocked), to scan them in registers. The store
// goes the same way back. Only the warp touches its slice, so __syncwarp() orders the exchange:
// no warp waits for another. With -DVEC=4 a full run of a 4-byte type moves as 16-byte vectors
// (vector k*32 + lane: 512 contiguous bytes per warp load, a quarter of the instructions); x and
// y must then be 16-byte aligned (fresh arrays are).
// In a slice, element j lives at j + j/32: the blocked reads of a power-of-two ITEMS hit 32
// different banks (any other ITEMS below 31: at most 2 lanes per bank), the striped ones too.
#ifndef VEC
#define VEC 1
#endif
struct __align__(16) Vec4 {
    elem_t v[4];
};

__host__ __device__ constexpr int padded(int j) { return j + (j >> 5); }

template <int BLOCK, int ITEMS>
struct TileShared {
    elem_t runs[BLOCK / 32][33 * ITEMS];  // one slice per warp: padded(32*ITEMS - 1) < 33*ITEMS
    elem_t warp_totals[BLOCK / 32];
};

template <int ITEMS>
__device__ __forceinline__ bool vector_run(long long start, int n) {
    return VEC == 4 && sizeof(elem_t) == 4 && ITEMS % 4 == 0 && start + 32 * ITEMS <= n;
}

// The warp's run [start, start + 32*ITEMS) into v, ITEMS consecutive elements per lane
// (the identity past n), through the warp's slice s.
template <int ITEMS>
__device__ void load_run(const elem_t* x, long long start, int n, elem_t* s, elem_t (&v)[ITEMS]) {
    const int lane = threadIdx.x & 31;
    if (vector_run<ITEMS>(start, n)) {
        const Vec4* xv = reinterpret_cast<const Vec4*>(x + start);
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) {
            Vec4 p = xv[k * 32 + lane];
#pragma unroll
            for (int c = 0; c < 4; ++c) v[4 * k + c] = p.v[c];
        }
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k)
#pragma unroll
            for (int c = 0; c < 4; ++c) s[padded(4 * (k * 32 + lane) + c)] = v[4 * k + c];
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            long long j = start + k * 32 + lane;
            v[k] = j < n ? x[j] : identity();  // all ITEMS loads issued before any is used
        }
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) s[padded(k * 32 + lane)] = v[k];
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) v[k] = s[padded(lane * ITEMS + k)];
}

// The way back: blocked registers -> the warp's slice -> striped, coalesced stores of the
// elements < n.
template <int ITEMS>
__device__ void store_run(elem_t* y, long long start, int n, elem_t* s, const elem_t (&v)[ITEMS]) {
    const int lane = threadIdx.x & 31;
    __syncwarp();  // every lane has read the slice (load_run) before any lane writes it again
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) s[padded(lane * ITEMS + k)] = v[k];
    __syncwarp();
    if (vector_run<ITEMS>(start, n)) {
        Vec4* yv = reinterpret_cast<Vec4*>(y + start);
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) {
            Vec4 p;
#pragma unroll
            for (int c = 0; c < 4; ++c) p.v[c] = s[padded(4 * (k * 32 + lane) + c)];
            yv[k * 32 + lane] = p;
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            long long j = start + k * 32 + lane;
            if (j < n) y[j] = s[padded(k * 32 + lane)];
        }
    }
}

// Where this thread's warp run starts in a tile, and its slice.
template <int ITEMS>
__device__ __forceinline__ long long run_start(long long tile_base) {
    return tile_base + (threadIdx.x >> 5) * (32 * ITEMS);
}

// Scan the tile in registers: afterwards v holds the thread's inclusive scan of its ITEMS,
// `before` the ⊕ of all earlier threads' elements (the identity in thread 0), `total` the tile's
// ⊕ in every thread.
template <int BLOCK, int ITEMS>
__device__ void scan_tile(elem_t (&v)[ITEMS], elem_t* warp_totals, elem_t& total, elem_t& before) {
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) v[k] = combine(v[k - 1], v[k]);
    before = block_exclusive_scan<BLOCK>(v[ITEMS - 1], warp_totals, total);
}

// ---- 7. Scan-then-propagate, in three kinds of launch.
// (a) scan_tiles: each block scans its tile and writes its total to tile_totals[block];
// (b) the tile totals are scanned the same way (again and again while there is more than one
// tile of them); (c) add_tile_prefix adds the scanned total of all earlier tiles to every
// element of each tile. x is read once and y written twice and read once: 4N elements move
// for N of input, twice what a scan must move.
template <int BLOCK, int ITEMS = 32>
__global__ void __launch_bounds__(BLOCK) scan_tiles(const elem_t* x, elem_t* y, elem_t* tile_totals, int n) {
    __shared__ TileShared<BLOCK, ITEMS> s;
    const long long start = run_start<ITEMS>((long long)blockIdx.x * (BLOCK * ITEMS));
    elem_t* slice = s.runs[threadIdx.x >> 5];
    elem_t v[ITEMS], total, before;
    load_run<ITEMS>(x, start, n, slice, v);
    scan_tile<BLOCK, ITEMS>(v, s.warp_totals, total, before);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) v[k] = threadIdx.x > 0 ? combine(before, v[k]) : v[k];
    store_run<ITEMS>(y, start, n, slice, v);
    if (threadIdx.x == 0) tile_totals[blockIdx.x] = total;
}

// (c): block b adds scanned_totals[b] to every element of tile b + 1 (tile 0 needs nothing):
// grid = tiles - 1, any block size, `tile` elements per tile.
extern "C" __global__ void add_tile_prefix(elem_t* y, const elem_t* scanned_totals, int n, int tile) {
    const long long base = (long long)(blockIdx.x + 1) * tile;
    const long long end = base + tile < n ? base + tile : n;
    const elem_t prefix = scanned_totals[blockIdx.x];
#pragma unroll 8
    for (long long j = base + threadIdx.x; j < end; j += blockDim.x) y[j] = combine(prefix, y[j]);
}

// ---- 8. Single pass with decoupled look-back (Merrill & Garland, NVIDIA 2016).
// One launch: each tile publishes its total as soon as it has it (flag AGGREGATE), then looks
// back over its predecessors' words, combining aggregates until it meets an inclusive PREFIX,
// and publishes its own PREFIX. A tile rarely waits for more than the tiles just before it, so
// x is read once and y written once: 2N elements move, as in a copy.
//
// The status buffer (uint64, tiles + 1 words) is zeroed once when it is allocated and never
// again: word 0 counts the launch's blocks (low half) and holds the launch's epoch (high half);
// word 1 + t holds tile t's (value, epoch, flag) in one 64-bit word, so a value never travels
// without its flag and relaxed loads and stores suffice (acquire/release cost 6 % here). A launch
// accepts only words of its own epoch; the block that takes the last ticket starts the next
// epoch, so the next launch ignores this one's words. The ticket numbers tiles in the order
// blocks start: a block only ever waits for tiles that blocks already running own -- no
// deadlock, whatever order the GPU starts blocks in.
//
// What makes it fast (an H200, N = 2^28 float32, docs/tuning/scan.md: 58 % of a copy -> 88 %):
// - Tiles of 128 threads x 32 elements held in registers, and __launch_bounds__ asking for 1024
//   resident threads per SM (8 blocks of 128): the compiler must keep to 64 registers a thread.
//   The tuning run's compiler went from 72 to 56 (9 blocks, 144 KiB of tile, docs/tuning/scan.md);
//   on the H100 (CuPy's NVRTC 13, sm_90) the driver loads 56 too, 9 blocks; the emulator's NVRTC
//   13.5 allocates 64 (8 blocks, 128 KiB): scan.residency_table() prints what the kernel gets,
//   scripts/gpu_facts_scan.py what the GPU's driver loads. Loads move as 16-byte vectors (-DVEC=4), each warp through its own slice of shared
//   memory (load_run/store_run): no block-wide barrier between the loads and the scan.
// - One atomic gives the ticket and the epoch (no fence, no second round trip before the loads).
// - A pause before the first look (LOOKBACK_FIRST_SLEEP_NS): a tile that looks at once finds its
//   predecessors' aggregates but no prefix yet, and walks back window after window, one L2 round
//   trip each; a few microseconds later the prefix is there in the first window. Polls of a word
//   not yet published pause too (LOOKBACK_SLEEP_NS). Only on grids of at least
//   LOOKBACK_SLEEP_MIN_TILES tiles: on a small grid every block is resident and a pause only adds.
// - Each block asks the L2 for the tile LOOKBACK_PREFETCH tiles ahead of its own (prefetch, no
//   registers): the blocks that fit in registers keep only ~17 MB in flight, and the look-back
//   holds each block a while; the prefetch keeps the DRAM busy meanwhile (256 tiles = 4 MiB ahead;
//   16 MiB ahead evicts them again before use).
#ifndef LOOKBACK_WINDOW
#define LOOKBACK_WINDOW 32  // 32: warp 0 inspects 32 predecessors at once; 1: thread 0, one at a time
#endif
#ifndef LOOKBACK_FIRST_SLEEP_NS
#define LOOKBACK_FIRST_SLEEP_NS 3000  // pause before the first look
#endif
#ifndef LOOKBACK_SLEEP_NS
#define LOOKBACK_SLEEP_NS 400  // pause between polls of a word not yet published
#endif
#ifndef LOOKBACK_SLEEP_MIN_TILES
#define LOOKBACK_SLEEP_MIN_TILES 2048  // pause only on grids of at least this many tiles
#endif
#ifndef LOOKBACK_PREFETCH
#define LOOKBACK_PREFETCH 256  // > 0: each block asks the L2 for the tile that many tiles ahead
#endif
#define FLAG_AGGREGATE 1u
#define FLAG_PREFIX 2u

// A status word is read and written whole, at GPU scope: strong accesses, so no data race.
__device__ __forceinline__ unsigned long long load_status(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store_status(unsigned long long* p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// A 4-byte value's bits and back.
__device__ __forceinline__ unsigned int bits_of(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned int bits_of(int v) { return (unsigned int)v; }
__device__ __forceinline__ unsigned int bits_of(unsigned int v) { return v; }
__device__ __forceinline__ void from_bits(unsigned int b, float& v) { v = __uint_as_float(b); }
__device__ __forceinline__ void from_bits(unsigned int b, int& v) { v = (int)b; }
__device__ __forceinline__ void from_bits(unsigned int b, unsigned int& v) { v = b; }

// A status word: the value in the high half, (epoch << 2 | flag) in the low half. (Templates,
// so that a module for 8-byte types compiles: only lookback_scan needs them.)
__device__ __forceinline__ unsigned int tag(unsigned int epoch, unsigned int flag) { return epoch << 2 | flag; }
template <typename T>
__device__ __forceinline__ unsigned long long pack(T v, unsigned int t) {
    static_assert(sizeof(T) == 4, "lookback_scan packs a 4-byte value and its flag in 64 bits");
    return (unsigned long long)bits_of(v) << 32 | t;
}
template <typename T>
__device__ __forceinline__ T value_of(unsigned long long w) {
    T v;
    from_bits((unsigned int)(w >> 32), v);
    return v;
}
__device__ __forceinline__ unsigned int flag_of(unsigned long long w, unsigned int epoch) {
    unsigned int t = (unsigned int)w;
    return (t >> 2) == epoch ? t & 3u : 0u;  // another launch's word reads as "not yet"
}

// Thread 0: one atomic on word 0 gives the block its ticket (low half) and the launch's epoch
// (high half). The block with the last ticket sets the count back to 0 and the epoch one up:
// every other block of the launch has taken its ticket by then.
__device__ __forceinline__ unsigned long long take_ticket(unsigned long long* status) {
    unsigned long long old = atomicAdd(&status[0], 1ull);
    if ((unsigned int)old == gridDim.x - 1) atomicAdd(&status[0], (1ull << 32) - gridDim.x);
    return old;
}
__device__ __forceinline__ unsigned int epoch_of(unsigned long long ticket) {
    return (unsigned int)(ticket >> 32) & 0x3fffffffu;  // 30 bits: the tag keeps 2 for the flag
}

template <typename T>
__device__ __forceinline__ void publish(unsigned long long* status, unsigned int tile, T v, unsigned int t) {
    store_status(&status[1 + tile], pack(v, t));
}

__device__ __forceinline__ void pause(unsigned int ns) {
    if (ns > 0 && gridDim.x >= LOOKBACK_SLEEP_MIN_TILES) __nanosleep(ns);
}

// Warp 0 (window 32) or thread 0 (window 1) of a tile > 0: the ⊕ of all earlier tiles.
template <typename T>
__device__ T look_back(unsigned long long* status, unsigned int tile, unsigned int epoch) {
    T running = identity();
    pause(LOOKBACK_FIRST_SLEEP_NS);
#if LOOKBACK_WINDOW == 1
    for (int j = (int)tile - 1;; --j) {
        unsigned long long w;
        while (!flag_of(w = load_status(&status[1 + j]), epoch)) pause(LOOKBACK_SLEEP_NS);
        running = combine(value_of<T>(w), running);
        if (flag_of(w, epoch) == FLAG_PREFIX) return running;
    }
#elif LOOKBACK_WINDOW == 32
    const int lane = threadIdx.x & 31;
    for (int j = (int)tile - 32 + lane;; j -= 32) {  // lane 31 looks at the nearest tile
        // tiles before 0 read as PREFIX identity, so a window that reaches past tile 0 ends the walk
        unsigned long long w = j >= 0 ? load_status(&status[1 + j]) : pack(identity(), tag(epoch, FLAG_PREFIX));
        while (__any_sync(FULL_MASK, !flag_of(w, epoch))) {
            pause(LOOKBACK_SLEEP_NS);
            if (!flag_of(w, epoch)) w = load_status(&status[1 + j]);
        }
        unsigned int prefixes = __ballot_sync(FULL_MASK, flag_of(w, epoch) == FLAG_PREFIX);
        int nearest = prefixes ? 31 - __clz(prefixes) : 0;  // tiles before the nearest PREFIX are in it
        T v = warp_scan(lane >= nearest ? value_of<T>(w) : identity());  // in tile order
        running = combine(__shfl_sync(FULL_MASK, v, 31), running);
        if (prefixes) return running;
    }
#else
#error "LOOKBACK_WINDOW is 1 or 32"
#endif
}

// Ask the L2 for the warp's run of the tile LOOKBACK_PREFETCH tiles ahead: one 128-byte line
// per lane (a prefetch fetches without waiting, and takes no register).
template <int BLOCK, int ITEMS>
__device__ __forceinline__ void prefetch_ahead(const elem_t* x, long long start, int n) {
    const long long ahead = start + (long long)LOOKBACK_PREFETCH * (BLOCK * ITEMS);
    const int per_line = 128 / sizeof(elem_t);
    for (int line = threadIdx.x & 31; line * per_line < 32 * ITEMS; line += 32)
        if (LOOKBACK_PREFETCH > 0 && ahead + line * per_line < n)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(x + ahead + line * per_line));
}

template <int BLOCK, int ITEMS = 32>
__global__ void __launch_bounds__(BLOCK, 1024 / BLOCK) lookback_scan(const elem_t* __restrict__ x,
                                                                     elem_t* __restrict__ y,
                                                                     unsigned long long* status, int n) {
    __shared__ TileShared<BLOCK, ITEMS> s;
    __shared__ unsigned int s_tile;
    __shared__ elem_t s_prefix;
    unsigned long long ticket = 0;
    if (threadIdx.x == 0) {
        ticket = take_ticket(status);
        s_tile = (unsigned int)ticket;
    }
    __syncthreads();
    const unsigned int tile = s_tile;
    const long long start = run_start<ITEMS>((long long)tile * (BLOCK * ITEMS));
    prefetch_ahead<BLOCK, ITEMS>(x, start, n);
    elem_t* slice = s.runs[threadIdx.x >> 5];
    elem_t v[ITEMS], total, before;
    load_run<ITEMS>(x, start, n, slice, v);
    scan_tile<BLOCK, ITEMS>(v, s.warp_totals, total, before);
    if (threadIdx.x < 32) {  // warp 0: the ⊕ of every earlier tile
        const unsigned int epoch = epoch_of(__shfl_sync(FULL_MASK, ticket, 0));
        if (threadIdx.x < LOOKBACK_WINDOW) {
            elem_t prefix = identity();
            if (tile > 0) {
                if (threadIdx.x == 0) publish(status, tile, total, tag(epoch, FLAG_AGGREGATE));
                prefix = look_back<elem_t>(status, tile, epoch);
            }
            if (threadIdx.x == 0) {
                publish(status, tile, tile > 0 ? combine(prefix, total) : total, tag(epoch, FLAG_PREFIX));
                s_prefix = prefix;
            }
        }
    }
    __syncthreads();
    const elem_t prefix = s_prefix;
    const elem_t mine = threadIdx.x > 0 ? combine(prefix, before) : prefix;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) v[k] = combine(mine, v[k]);
    store_run<ITEMS>(y, start, n, slice, v);
}
