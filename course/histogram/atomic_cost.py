"""What one shared-memory warp instruction costs against the number k of distinct keys among its
32 lanes: the kernels `scripts/gpu_facts_histogram.py` (section 6) times on a GPU, and the totals
each launch must leave (the check that the timed kernels did their work; tested on the emulator).

Review 2026-11-27c H201/H202: the match alone, the agreement with its `ATOMS.ADD`
(`add_aggregated`), the course's +1 (`ATOMS.POPC.INC.32`), an add of a per-lane value (a weight:
`ATOMS.ADD`) and a +1 into 64-bit words (a compare-and-swap loop on sm_90).
"""

from __future__ import annotations

# Each lane of a warp holds key lane % k: k distinct words, in k different banks (1-way), moved 32
# words (same banks) each round so the compiler cannot hoist the match. ROUNDS rounds a thread.
SOURCE = r"""
#ifndef ROUNDS
#define ROUNDS 4096
#endif
__device__ __forceinline__ unsigned int key_of(unsigned int lane, int k, int r) {
    return lane % k + ((r & 7) << 5);
}
// the merge of a block's 256 words into out (64-bit, so every kernel's totals fit)
template <typename T>
__device__ __forceinline__ void merge(T* s, unsigned long long* out) {
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (s[b]) atomicAdd(&out[b], (unsigned long long)s[b]);
}
extern "C" __global__ void match_only(unsigned long long* out, int k) {  // MATCH.ANY + POPC, no atomic
    const unsigned int lane = threadIdx.x & 31;
    unsigned int groups = 0;
    for (int r = 0; r < ROUNDS; ++r) {
        const unsigned int peers = __match_any_sync(0xFFFFFFFFu, key_of(lane, k, r));
        groups += lane == __ffs(peers) - 1;
    }
    atomicAdd(&out[0], (unsigned long long)groups);  // the groups the warps found: k per warp round
}
extern "C" __global__ void agreed(unsigned long long* out, int k) {  // add_aggregated: MATCH.ANY + POPC + ATOMS.ADD
    __shared__ unsigned int s[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) s[b] = 0;
    __syncthreads();
    const unsigned int lane = threadIdx.x & 31;
    for (int r = 0; r < ROUNDS; ++r) {
        const unsigned int key = key_of(lane, k, r);
        const unsigned int peers = __match_any_sync(0xFFFFFFFFu, key);
        if (lane == __ffs(peers) - 1) atomicAdd(&s[key], __popc(peers));
    }
    merge(s, out);
}
extern "C" __global__ void add_one(unsigned long long* out, int k) {  // the course's +1: ATOMS.POPC.INC.32
    __shared__ unsigned int s[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) s[b] = 0;
    __syncthreads();
    const unsigned int lane = threadIdx.x & 31;
    for (int r = 0; r < ROUNDS; ++r) atomicAdd(&s[key_of(lane, k, r)], 1u);
    merge(s, out);
}
extern "C" __global__ void add_value(unsigned long long* out, int k) {  // a per-lane value (a weight): ATOMS.ADD
    __shared__ unsigned int s[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) s[b] = 0;
    __syncthreads();
    const unsigned int lane = threadIdx.x & 31;
    for (int r = 0; r < ROUNDS; ++r) atomicAdd(&s[key_of(lane, k, r)], lane + 1u);
    merge(s, out);
}
extern "C" __global__ void add_one_64(unsigned long long* out, int k) {  // +1 into 64-bit words
    __shared__ unsigned long long s[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) s[b] = 0;
    __syncthreads();
    const unsigned int lane = threadIdx.x & 31;
    for (int r = 0; r < ROUNDS; ++r) atomicAdd(&s[key_of(lane, k, r)], 1ull);
    merge(s, out);
}
"""
KERNELS = {  # kernel: what each lane does
    "match_only": "__match_any_sync alone",
    "agreed": "agreement + ATOMS.ADD (add_aggregated)",
    "add_one": "atomicAdd(&s[key], 1u)",
    "add_value": "atomicAdd(&s[key], lane + 1u)",
    "add_one_64": "atomicAdd(&s64[key], 1ull)",
}
DISTINCT = (1, 2, 4, 8, 16, 32)


def expected_total(kernel: str, k: int, threads: int, rounds: int) -> int:
    """What out.sum() must be after one launch of `threads` threads (whole warps) making `rounds`
    rounds with k distinct keys a warp."""
    if kernel not in KERNELS:
        raise ValueError(f"no kernel {kernel!r} here; the kernels are {', '.join(KERNELS)}")
    if not 1 <= k <= 32 or threads % 32:
        raise ValueError(f"k is 1 to 32 and threads a multiple of 32, not k={k}, threads={threads}")
    warps = threads // 32
    if kernel == "match_only":
        return warps * rounds * k
    if kernel == "add_value":
        return warps * rounds * sum(lane + 1 for lane in range(32))
    return threads * rounds
