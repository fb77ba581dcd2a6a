// Warp- and block-level building blocks that several topics share (reduction, dot, scan).
//
// Built small to large, as CUB builds them: a warp-level function works in registers through
// shuffles; a block-level one stands on it and takes its shared-memory scratch from the caller
// (one T per warp, 32 slots cover any block), so the caller decides where that memory lives and
// when it may be reused. Blocks are 1-D and their size a multiple of 32: every lane of every
// warp takes part in each *_sync call.
#pragma once

#define FULL_MASK 0xffffffffu

// The sum of v over the 32 lanes of the warp, in lane 0 (other lanes hold partial sums).
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

// Inclusive prefix sum over the lanes of the warp: lane k gets v[0] + ... + v[k].
template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T v) {
    const unsigned int lane = threadIdx.x & 31;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        T up = __shfl_up_sync(FULL_MASK, v, offset);
        if (lane >= offset) v += up;
    }
    return v;
}

// The sum of v over the block, in thread 0. `scratch`: 32 slots of shared memory; it may be
// written again only after a __syncthreads() that follows this call.
template <typename T>
__device__ T block_sum(T v, T* scratch) {
    const unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_sum(lane < (blockDim.x >> 5) ? scratch[lane] : T(0));
    return v;
}

// Inclusive prefix sum over the block: thread t gets v[0] + ... + v[t], and `total` the block's
// sum in every thread. `scratch`: 32 slots, as for block_sum.
template <typename T>
__device__ T block_inclusive_scan(T v, T* scratch, T& total) {
    const unsigned int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_inclusive_scan(v);
    if (lane == 31) scratch[warp] = v;  // each warp's total
    __syncthreads();
    if (warp == 0) {
        T w = lane < warps ? scratch[lane] : T(0);
        w = warp_inclusive_scan(w);
        __syncwarp();  // every lane has read its warp total before any lane overwrites one
        if (lane < warps) scratch[lane] = w;  // totals of warps 0..lane
    }
    __syncthreads();
    if (warp > 0) v += scratch[warp - 1];
    total = scratch[warps - 1];
    return v;
}
