"""How accurate is a float32 dot product? NumPy models of the kernels' ways of adding.

    from course.dot import accuracy
    rows = accuracy.error_table([2**10, 2**14, 2**18, 2**22], seeds=5)
    # one row per N: the median relative error of each way of adding, against the exact dot

Each way of adding is the one a kernel of `course/kernels/dot.cu` uses, done in NumPy on the
same float32 inputs (standard normal a and b, as the benchmarks use):

- "sequential float32": one running float32 sum, products rounded first (dot1's thread 0).
- "GPU tree": `lanes` threads, each adding every lanes-th product in float32 with an fma
  (dot3's and dot_vec4's grid-stride loop), then the lanes added pairwise (the block trees
  and the sum of the blocks).
- "pairwise float32": products rounded, then added in halving steps (error ~ log2 N).
- "Kahan float32": per lane, compensated sums of the rounded products (classic Kahan/TwoSum;
  the products' own rounding stays), lanes merged with compensation.
- "compensated (Dot2)": as Kahan, and each product's rounding error kept too (dot_compensated);
  the result is the pair's value in float64.
- "float64 accumulation": the exact products added in float64 (dot_f64).
- "float32 rounding of the exact": the floor of any float32 result, for reference.

The exact value is a double-double (TwoSum) sum of the float64 products, which are exact:
its error is ~1e-30 relative, far below every line of the plot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

F32, F64 = np.float32, np.float64
METHODS = (
    "sequential float32",
    "GPU tree",
    "pairwise float32",
    "Kahan float32",
    "compensated (Dot2)",
    "float64 accumulation",
    "float32 rounding of the exact",
)


def gpu_lanes() -> int:
    """The threads of a grid that fills the active device once (SMs x threads an SM holds: 132 x
    2048 on an H100 or H200, 40 x 1024 on a T4): the `lanes` of the "GPU tree" by default."""
    from ..backend import device

    dev = device()
    return dev.sm_count * dev.threads_per_sm


def _two_sum(s: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """t + e == s + p exactly, elementwise (Knuth's TwoSum; any dtype)."""
    t = s + p
    z = t - s
    e = (s - (t - z)) + (p - z)
    return t, e


def _lanes(x: np.ndarray, lanes: int) -> np.ndarray:
    """x as rows of `lanes` columns (zero padded): element i in column i % lanes, row i // lanes."""
    lanes = max(1, min(lanes, len(x)))
    rows = -(-len(x) // lanes)
    out = np.zeros(rows * lanes, x.dtype)
    out[: len(x)] = x
    return out.reshape(rows, lanes)


def _merge_pairs(s: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    """Merge compensated lanes (s, c) pairwise, with TwoSum at every step."""
    while len(s) > 1:
        if len(s) % 2:
            s, c = np.append(s, s.dtype.type(0)), np.append(c, c.dtype.type(0))
        t, e = _two_sum(s[0::2], s[1::2])
        s, c = t, c[0::2] + c[1::2] + e
    return s[0], c[0]


def _compensated(p: np.ndarray, err: np.ndarray | None, lanes: int) -> tuple[float, float]:
    """Sum p (plus the exact errors `err`, if given) in `lanes` compensated lanes, then merge."""
    rows = _lanes(p, lanes)
    errs = _lanes(err, lanes) if err is not None else None
    s = np.zeros(rows.shape[1], p.dtype)
    c = np.zeros(rows.shape[1], p.dtype)
    for r in range(rows.shape[0]):
        s, e = _two_sum(s, rows[r])
        c += e if errs is None else e + errs[r]
    return _merge_pairs(s, c)


def exact(a: np.ndarray, b: np.ndarray) -> float:
    """The dot product of float32 a and b to ~1e-30 relative: products are exact in float64,
    and their sum is kept as a double-double."""
    p = a.astype(F64) * b.astype(F64)
    s, c = _compensated(p, None, 65536)
    return float(s) + float(c)


def pairwise(x: np.ndarray) -> np.generic:
    """Sum by halving steps (pairs, then pairs of pairs ...) in x's dtype."""
    s = x.copy()
    while len(s) > 1:
        if len(s) % 2:
            s = np.append(s, s.dtype.type(0))
        s = s[0::2] + s[1::2]
    return s[0] if len(s) else x.dtype.type(0)


def lane_sums(a: np.ndarray, b: np.ndarray, lanes: int) -> np.ndarray:
    """What each thread of a grid-stride loop with `lanes` threads holds at the end of the loop:
    a float32 running sum updated with an fma, sum = fma(a[i], b[i], sum), emulated as the exact
    product added in float64 and rounded once to float32."""
    ra, rb = _lanes(np.asarray(a, F32), lanes), _lanes(np.asarray(b, F32), lanes)
    s = np.zeros(ra.shape[1], F32)
    for r in range(ra.shape[0]):
        s = (s.astype(F64) + ra[r].astype(F64) * rb[r].astype(F64)).astype(F32)
    return s


def gpu_tree(a: np.ndarray, b: np.ndarray, lanes: int | None = None) -> np.float32:
    """What a grid-stride kernel with `lanes` threads computes: lane_sums, then added pairwise
    (the block trees, then the blocks' sums); `lanes` None: `gpu_lanes()`."""
    return np.float32(pairwise(lane_sums(a, b, lanes or gpu_lanes())))


def sums(
    a: np.ndarray, b: np.ndarray, *, lanes: int | None = None, exact_value: float | None = None
) -> dict[str, float]:
    """The dot product of float32 a and b by every method of METHODS (as Python floats); `lanes`:
    the GPU tree's threads (None: `gpu_lanes()`)."""
    lanes = lanes or gpu_lanes()
    a, b = np.asarray(a, F32), np.asarray(b, F32)
    p64 = a.astype(F64) * b.astype(F64)  # exact
    p32 = p64.astype(F32)  # what a * b gives in float32
    p_err = (p64 - p32.astype(F64)).astype(F32)  # exact too: the rounding error of each product
    kahan_lanes = min(lanes, 16384)  # enough lanes that the NumPy loop stays short
    ks, kc = _compensated(p32, None, kahan_lanes)
    ds, dc = _compensated(p32, p_err, kahan_lanes)
    ex = exact(a, b) if exact_value is None else exact_value
    return {
        "sequential float32": float(np.cumsum(p32, dtype=F32)[-1]) if len(a) else 0.0,
        "GPU tree": float(gpu_tree(a, b, lanes)),
        "pairwise float32": float(pairwise(p32)),
        "Kahan float32": float(F32(F64(ks) + F64(kc))),
        "compensated (Dot2)": float(F64(ds) + F64(dc)),
        "float64 accumulation": float(np.sum(p64)),
        "float32 rounding of the exact": float(F32(ex)),
    }


def relative_errors(a: np.ndarray, b: np.ndarray, *, lanes: int | None = None) -> dict[str, float]:
    """|method - exact| / |exact| for every method."""
    ex = exact(np.asarray(a, F32), np.asarray(b, F32))
    return {k: abs(v - ex) / abs(ex) for k, v in sums(a, b, lanes=lanes, exact_value=ex).items()}


def error_table(
    ns: Iterable[int], seeds: int = 5, *, lanes: int | None = None, methods: Sequence[str] = METHODS
) -> list[dict[str, float]]:
    """Per N, the median relative error of each method over `seeds` pairs of standard-normal
    float32 vectors (seed k: numpy.random.default_rng(k), a then b)."""
    rows = []
    for n in ns:
        errs: dict[str, list[float]] = {m: [] for m in methods}
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            a = rng.standard_normal(n, dtype=F32)
            b = rng.standard_normal(n, dtype=F32)
            for m, e in relative_errors(a, b, lanes=lanes).items():
                if m in errs:
                    errs[m].append(e)
        rows.append({"N": n, **{m: float(np.median(v)) for m, v in errs.items()}})
    return rows


def warp_sum(v: np.ndarray) -> np.ndarray:
    """common.cuh's warp_sum over the last axis (32 lanes) in v's dtype: offsets 16, 8, 4, 2, 1 of
    __shfl_down_sync, each lane adding the value `offset` lanes above it (lanes past 31 get their
    own); what lane 0 ends with."""
    v = np.array(v)
    for offset in (16, 8, 4, 2, 1):
        down = np.concatenate([v[..., offset:], v[..., 32 - offset :]], axis=-1)
        v = v + down
    return v[..., 0]


def shuffle_block_sums(a: np.ndarray, b: np.ndarray, grid: int, block: int) -> np.ndarray:
    """The float32 sum each block of dot_shfl hands to its atomicAdd, bit for bit: every thread's
    grid-stride loop (`lane_sums`), then common.cuh's block_sum (warp_sum in each warp, the warps'
    sums into 32 slots with zeros past the last warp, warp_sum over those)."""
    lanes = lane_sums(a, b, grid * block)
    if lanes.size < grid * block:  # threads past N add nothing
        lanes = np.concatenate([lanes, np.zeros(grid * block - lanes.size, F32)])
    warps = block // 32
    per_warp = warp_sum(lanes.reshape(grid, warps, 32))
    slots = np.zeros((grid, 32), F32)
    slots[:, :warps] = per_warp
    return warp_sum(slots)


def in_orders(values: np.ndarray, orders: int, seed: int = 0) -> np.ndarray:
    """`values` added one after another in float32, as atomicAdds onto a zeroed word land, in
    `orders` random orders: one answer per order."""
    values = np.asarray(values, F32)
    rng = np.random.default_rng(seed)
    perms = np.argsort(rng.random((orders, values.size)), axis=1)
    shuffled = values[perms]
    total = np.zeros(orders, F32)
    for k in range(values.size):
        total = total + shuffled[:, k]
    return total
