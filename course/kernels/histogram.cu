// Histogram: how many times each byte value 0..255 occurs in x (the article: 100 MiB of random
// bytes into 256 bins). Every version counts in unsigned int bins that the host must zero before
// the launch (course.zeros(256, np.uint32)); a launch ADDS to `hist`. The lesson is contention, and
// where an atomic is done: in L2 (global) one line's updates queue, same-bin lanes cost most; in the SM a
// shared +1 into a 32-bit word (ATOMS.POPC.INC.32, sm_90) combines same-word lanes, bank conflicts cost.
//
// Limits shared by all versions: n counts bytes (uint8 keys); a uint32 bin wraps at 2^32, so the
// counts are exact for n <= 2^32 - 1 (the fixed versions index with 64 bits; the article's kernels
// index with int and need n < 2^31 - gridDim*blockDim). Grid-stride loops: any grid covers any n,
// the launcher picks a multiple of the SM count.
//
// LOAD_BYTES (a -D option, 4, 8 or 16; default 16) is the width of each thread's loads in the
// vectorised kernels 3-6 and hist_wide: a tuning knob.
#include "common.cuh"  // FULL_MASK

#ifndef LOAD_BYTES
#define LOAD_BYTES 16
#endif
#if LOAD_BYTES != 4 && LOAD_BYTES != 8 && LOAD_BYTES != 16
#error "LOAD_BYTES must be 4, 8 or 16"
#endif
#define BINS 256

// ---- 1. Global-memory atomics with a grid-stride loop (the article's code, as published).
// Every byte is one atomicAdd on the 1 KiB histogram in global memory: the atomics are done in L2,
// and lanes that hit the same bin are serialised -- all-equal data puts all 32 lanes of every warp
// on one bin. The article launches it with blocks = SM count (its text says twice that).
// BUG (for huge n only): `int index` overflows once index + stride passes 2^31 - 1.
extern "C" __global__ void hist1_article(unsigned char* buffer, unsigned int* hist, long data_size)
{
    int index = threadIdx.x + blockDim.x * blockIdx.x;
    int stride = blockDim.x * gridDim.x;
    while (index < data_size)
    {
        atomicAdd(&(hist[buffer[index]]), 1);
        index += stride;
    }
}

// 1, fixed: 64-bit indices (any n the bins can count), the input read through the read-only path.
// Any block size (1..1024), any grid.
extern "C" __global__ void hist1(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&hist[x[i]], 1u);
    }
}

// ---- 2. Shared-memory privatised histogram (the article's code, as published: 29.22 ms).
// Each block counts into its own 256 bins in shared memory (fast on-chip atomics, contention only
// within the block), then adds them to the global histogram: 256 global atomics per block instead
// of one per byte. BUG: it assumes blockDim.x == 256 -- one thread per bin. With fewer threads,
// bins blockDim.x..255 are never zeroed (the counts start from garbage) and never added to `hist`;
// with more, temp[threadIdx.x] writes past the 256-entry array.
extern "C" __global__ void hist2_article(unsigned char* buffer, unsigned int* hist, long data_size)
{
    // init
    __shared__ unsigned int temp[256];
    temp[threadIdx.x] = 0;
    __syncthreads();

    int index = threadIdx.x + blockIdx.x * blockDim.x;
    int stride = blockDim.x * gridDim.x;
    while (index < data_size)
    {
        atomicAdd(&temp[buffer[index]], 1);
        index += stride;
    }
    __syncthreads();

    atomicAdd(&(hist[threadIdx.x]), temp[threadIdx.x]);
}

// 2, fixed: the block zeroes and merges all 256 bins whatever its size (each thread takes bins
// threadIdx.x, threadIdx.x + blockDim.x, ...), and skips the global atomic for an empty bin.
// Any block size (1..1024), any grid; 1 KiB of static shared memory.
extern "C" __global__ void hist2(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) temp[b] = 0;
    __syncthreads();
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&temp[x[i]], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        if (temp[b]) atomicAdd(&hist[b], temp[b]);
    }
}

// ---- Beyond the article: loads of LOAD_BYTES (16) bytes.
// One load brings 16 keys (bytes) or 8 (16-bit keys) instead of one: a warp asks for 512
// contiguous bytes per instruction, so far fewer load instructions and more bytes in flight.
// Vector loads must be aligned, so keys before the first aligned address (the head: none for an
// array the course or CuPy allocated, some for a view such as x[3:]) and after the last whole
// vector (the tail) are read one by one, each by a grid-stride loop of its own.
struct __align__(LOAD_BYTES) Vec {
    unsigned int w[LOAD_BYTES / 4];
};

struct Split {
    const Vec* v;    // the aligned middle, as vectors
    long long nvec;  // how many whole vectors
    long long head;  // keys before v
    long long tail;  // keys after the last vector
    long long tail_start;
};

template <typename Key>
__device__ __forceinline__ Split split(const Key* x, long long n) {
    const long long per = LOAD_BYTES / sizeof(Key);
    const unsigned long long misalign = (unsigned long long)x & (LOAD_BYTES - 1);
    long long head = (long long)(((LOAD_BYTES - misalign) & (LOAD_BYTES - 1)) / sizeof(Key));
    if (head > n) head = n;
    Split s;
    s.v = reinterpret_cast<const Vec*>(x + head);
    s.nvec = (n - head) / per;
    s.head = head;
    s.tail_start = head + s.nvec * per;
    s.tail = n - s.tail_start;
    return s;
}

// Call vector(p) for each of this thread's whole vectors of a grid-stride loop, then add(key) for its
// share of the head and the tail keys. Any block size.
template <typename Key, typename OnVector, typename Add>
__device__ __forceinline__ void for_each_vector(const Key* __restrict__ x, long long n, OnVector vector, Add add) {
    const Split s = split(x, n);
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = first; i < s.nvec; i += stride) {
        const Vec p = s.v[i];  // one LOAD_BYTES-wide load, into registers
        vector(p);
    }
    for (long long i = first; i < s.head; i += stride) add(x[i]);  // fewer than LOAD_BYTES keys each,
    for (long long i = first; i < s.tail; i += stride) add(x[s.tail_start + i]);  // so one trip for most grids
}

// Call add(key) for every key of x (this thread's share).
template <typename Key, typename Add>
__device__ __forceinline__ void for_each_key(const Key* __restrict__ x, long long n, Add add) {
    for_each_vector(x, n, [&](Vec p) {
#pragma unroll
        for (int k = 0; k < LOAD_BYTES / 4; ++k) {
#pragma unroll
            for (int j = 0; j < 4 / (int)sizeof(Key); ++j) add((p.w[k] >> (8 * sizeof(Key) * j)) & (Key)~0u);
        }
    }, add);
}

// ---- 3. hist2 with 16-byte loads.
// Same shared histogram and merge as hist2; only the loads change. Any block size, any grid.
extern "C" __global__ void hist3_vec(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) temp[b] = 0;
    __syncthreads();
    for_each_key(x, n, [&](unsigned int key) { atomicAdd(&temp[key], 1u); });
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        if (temp[b]) atomicAdd(&hist[b], temp[b]);
    }
}

// ---- Warp-aggregated atomics.
// __match_any_sync groups the lanes of a warp that hold the same key; the lowest lane of each
// group adds the group's size in ONE atomic. All-equal data: one atomic per warp instruction
// instead of 32. That pays for global atomics (hist1_agg: L2 queues same-word updates); a shared
// atomicAdd(&temp[key], 1u) already combines same-word lanes in one instruction (sm_90:
// ATOMS.POPC.INC.32), so there the agreement (MATCH.ANY + POPC + ATOMS.ADD) only adds work, more of it
// the more distinct keys a warp holds (uniform data: ~30 groups, least to combine). Every lane of the
// warp must call it (FULL_MASK), so the loop below runs the same number of times in every lane of
// a warp, and lanes past the end pass valid = false.
__device__ __forceinline__ void add_aggregated(unsigned int* h, unsigned int key, bool valid) {
    const unsigned int peers = __match_any_sync(FULL_MASK, valid ? key : 0xFFFFFFFFu);
    const unsigned int lane = threadIdx.x & 31;
    if (valid && lane == __ffs(peers) - 1) atomicAdd(&h[key], __popc(peers));
}

// Call add(key, valid) for every key of x, with every lane of every warp taking part in every call
// (lanes with nothing to add pass valid = false). Blocks must be a multiple of 32 threads.
template <typename Key, typename Add>
__device__ __forceinline__ void for_each_key_warp(const Key* __restrict__ x, long long n, Add add) {
    const Split s = split(x, n);
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long lane = threadIdx.x & 31;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long base = first - lane; base < s.nvec; base += stride) {  // the same trips for a whole warp
        const bool valid = base + lane < s.nvec;
        Vec p = {};
        if (valid) p = s.v[base + lane];
#pragma unroll
        for (int k = 0; k < LOAD_BYTES / 4; ++k) {
#pragma unroll
            for (int j = 0; j < 4 / (int)sizeof(Key); ++j) add((p.w[k] >> (8 * sizeof(Key) * j)) & (Key)~0u, valid);
        }
    }
    for (long long base = first - lane; base < s.head; base += stride) {
        const long long i = base + lane;
        add(i < s.head ? x[i] : 0, i < s.head);
    }
    for (long long base = first - lane; base < s.tail; base += stride) {
        const long long i = base + lane;
        add(i < s.tail ? x[s.tail_start + i] : 0, i < s.tail);
    }
}

// ---- 1, aggregated: hist1 whose lanes agree before the global atomic.
// Global atomics are where equal bytes cost: the 256 bins are 1 KiB, eight 128-byte lines, and
// every atomic on a line is carried out one after another by the L2 slice that holds it. Here the
// lanes of a warp holding the same byte find each other (__match_any_sync) and the lowest adds the
// group's size: one global atomic per distinct byte of the warp, 1 instead of 32 on all-equal bytes.
// The loop runs the same trips in every lane of a warp (lanes past n pass valid = false), because
// every lane must take part in the match. Blocks: multiples of 32 threads; any grid.
extern "C" __global__ void hist1_agg(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    const long long lane = threadIdx.x & 31;
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x - lane; base < n; base += stride) {
        const bool valid = base + lane < n;
        add_aggregated(hist, valid ? x[base + lane] : 0u, valid);
    }
}

// ---- 4. hist3 with warp-aggregated shared atomics: hist1_agg's agreement tried in shared memory.
// Slower than hist3_vec on every kind of data: the shared atomic it replaces already combines
// same-word lanes (see add_aggregated). Blocks: multiples of 32 threads (32..1024); any grid.
extern "C" __global__ void hist4_warp_agg(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) temp[b] = 0;
    __syncthreads();
    for_each_key_warp(x, n, [&](unsigned int key, bool valid) { add_aggregated(temp, key, valid); });
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        if (temp[b]) atomicAdd(&hist[b], temp[b]);
    }
}

// ---- 5. Per-lane sub-histograms: COPIES copies of the 256 bins per block, lane l counting into
// copy l % COPIES, laid out bin-major (temp[bin * COPIES + copy]). With COPIES = 32 every lane of
// a warp has its own copy in its own bank: no two lanes ever meet on one word or one bank, whatever
// the data, so all-equal bytes cost what uniform ones do. Fewer copies: less shared memory (1 KiB a
// copy: 32 KiB at 32), more collisions. The merge adds the copies of each bin (each thread starts
// at a different copy, so a warp's reads fall in different banks).
// Any block size (1..1024), any grid. The kernel owns `temp` (BINS * COPIES words); the body is
// shared by the story's kernel (32 copies) and the tuning's template (COPIES in 1, 2, 4, 8, 16, 32).
template <int COPIES>
__device__ __forceinline__ void count_per_lane(const unsigned char* __restrict__ x, unsigned int* hist, long long n,
                                               unsigned int* temp) {
    for (int k = threadIdx.x; k < BINS * COPIES; k += blockDim.x) temp[k] = 0;
    __syncthreads();
    unsigned int* mine = temp + threadIdx.x % COPIES;
    for_each_key(x, n, [&](unsigned int key) { atomicAdd(&mine[key * COPIES], 1u); });
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned int sum = 0;
#pragma unroll 8
        for (int c = 0; c < COPIES; ++c) sum += temp[b * COPIES + (b + c) % COPIES];
        if (sum) atomicAdd(&hist[b], sum);
    }
}

extern "C" __global__ void hist5_lanes(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[BINS * 32];  // 32 KiB: at most 6 blocks per SM on Hopper
    count_per_lane<32>(x, hist, n, temp);
}

template <int COPIES>
__global__ void hist5_copies(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[BINS * COPIES];
    count_per_lane<COPIES>(x, hist, n, temp);
}

// ---- 6. hist5, counting runs of equal bytes in registers first.
// A thread walks its 16 bytes keeping (run, count) and adds `count` to the run's bin only when the
// byte changes: one atomic per run instead of one per byte. All-equal bytes: one atomic per 16
// bytes, so even the copies of one bin that every warp of the block shares are hit 16x less often.
// Uniform bytes: a run is almost always one byte long, so it costs a compare per byte for nothing.
// On the H200 and the H100 it is slower than hist5 on every kind of data, by a few per cent on
// all-equal bytes (docs/notes/histogram.md).
// Same launch rules as hist5.
template <int COPIES>
__device__ __forceinline__ void count_runs(const unsigned char* __restrict__ x, unsigned int* hist, long long n,
                                           unsigned int* temp) {
    for (int k = threadIdx.x; k < BINS * COPIES; k += blockDim.x) temp[k] = 0;
    __syncthreads();
    unsigned int* mine = temp + threadIdx.x % COPIES;
    for_each_vector(x, n, [&](Vec p) {
        unsigned int run = p.w[0] & 255, count = 0;
#pragma unroll
        for (int k = 0; k < LOAD_BYTES / 4; ++k) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const unsigned int key = (p.w[k] >> (8 * j)) & 255;
                if (key != run) {
                    atomicAdd(&mine[run * COPIES], count);
                    run = key;
                    count = 0;
                }
                ++count;
            }
        }
        atomicAdd(&mine[run * COPIES], count);
    }, [&](unsigned int key) { atomicAdd(&mine[key * COPIES], 1u); });
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned int sum = 0;
#pragma unroll 8
        for (int c = 0; c < COPIES; ++c) sum += temp[b * COPIES + (b + c) % COPIES];
        if (sum) atomicAdd(&hist[b], sum);
    }
}

extern "C" __global__ void hist6_runs(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[BINS * 32];
    count_runs<32>(x, hist, n, temp);
}

template <int COPIES>
__global__ void hist6_copies(const unsigned char* __restrict__ x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[BINS * COPIES];
    count_runs<COPIES>(x, hist, n, temp);
}

// ---- More bins than a block's shared memory holds comfortably: 16-bit keys, `bins` bins
// (e.g. 4096: a 12-bit image, or RGB quantised to 16 levels a channel).
// One copy of the bins takes bins * 4 bytes of dynamic shared memory (16 KiB at 4096), so the 32
// per-lane copies of hist5 no longer fit (512 KiB); contention is rarer for uniform keys (more
// bins), and all-equal keys put 32 lanes on one word. This kernel tries warp aggregation against
// them; hist_wide_plain, below, without it, was faster on every kind of keys on an H100 (the shared
// atomic combines same-word lanes itself: see add_aggregated). The merge
// costs `bins` global atomics per block (empty bins skipped), so fewer blocks pay off.
// Keys >= bins are not counted. Blocks: multiples of 32; dynamic shared memory: bins * 4 bytes
// (bins <= 12288 in the default 48 KiB; more with the opt-in limit); any grid.
extern "C" __global__ void hist_wide(const unsigned short* __restrict__ x, unsigned int* hist, long long n, int bins) {
    extern __shared__ unsigned int counts[];
    for (int b = threadIdx.x; b < bins; b += blockDim.x) counts[b] = 0;
    __syncthreads();
    for_each_key_warp(x, n, [&](unsigned int key, bool valid) { add_aggregated(counts, key, valid && key < bins); });
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
        if (counts[b]) atomicAdd(&hist[b], counts[b]);
    }
}

// hist_wide without warp aggregation: each lane adds its own key (plain shared atomicAdd). Not a
// version: scripts/gpu_facts_histogram.py times it beside hist_wide to measure what the
// __match_any_sync per key costs on uniform keys, and hist_wide_load (the loads and the merge,
// no counting) to measure what the rest costs. Same launch rules as hist_wide.
extern "C" __global__ void hist_wide_plain(const unsigned short* __restrict__ x, unsigned int* hist, long long n,
                                           int bins) {
    extern __shared__ unsigned int counts[];
    for (int b = threadIdx.x; b < bins; b += blockDim.x) counts[b] = 0;
    __syncthreads();
    for_each_key(x, n, [&](unsigned int key) { if (key < (unsigned int)bins) atomicAdd(&counts[key], 1u); });
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
        if (counts[b]) atomicAdd(&hist[b], counts[b]);
    }
}

// The loads and the merge of hist_wide without the counting: each thread ORs its keys into one
// register and writes it to counts[threadIdx.x] once (so the loads cannot be optimised away).
extern "C" __global__ void hist_wide_load(const unsigned short* __restrict__ x, unsigned int* hist, long long n,
                                          int bins) {
    extern __shared__ unsigned int counts[];
    for (int b = threadIdx.x; b < bins; b += blockDim.x) counts[b] = 0;
    __syncthreads();
    unsigned int seen = 0;
    for_each_key(x, n, [&](unsigned int key) { seen |= key; });
    if (threadIdx.x < bins) counts[threadIdx.x] = seen & 1u;
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
        if (counts[b]) atomicAdd(&hist[b], counts[b]);
    }
}

// hist1 with its bins `spacing` words apart (hist holds 256 * spacing words; bin b is word
// b * spacing). Not a version: it measures where hist1's global atomics queue. With spacing 1 the
// 256 bins are 1 KiB, eight 128-byte lines, so every atomic of the grid goes to one of eight
// lines, held by a few L2 slices; with spacing 32 every bin has a line of its own.
extern "C" __global__ void hist1_spread(const unsigned char* __restrict__ x, unsigned int* hist, long long n,
                                        int spacing) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&hist[(unsigned int)x[i] * spacing], 1u);
    }
}

// ---- What cudaMemset does, as a kernel, so the article's host code can be replayed on either
// backend: set the first `nbytes` bytes of p to `value`. The article calls
// cudaMemset(d_hist, 0, sizeof(int)): it clears 4 bytes -- bin 0 -- of the 1024.
extern "C" __global__ void fill_bytes(void* p, int value, long long nbytes) {
    unsigned char* bytes = (unsigned char*)p;  // like cudaMemset: any array, counted in bytes
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nbytes; i += (long long)blockDim.x * gridDim.x)
        bytes[i] = (unsigned char)value;
}
