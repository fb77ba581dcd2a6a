"""Device-API kernels that are not elementwise: warp collectives, atomics, cooperative groups.

Each `Case` is a small kernel with its launch and a NumPy reference. Blocks hold 96 threads (three
warps) so that every collective also meets several warps; divergent variants run a collective on
part of a warp with the mask that names exactly those lanes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .device_api import Case, Launch
from .device_table import exact
from .fpref import BF16, F16, to_bits

BLOCK = 96
N = 2 * BLOCK  # two blocks


def _lanes() -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(N) % BLOCK
    return t // 32, t % 32


def _ints(rng: np.random.Generator, n: int = N, lo: int = -(2**31), hi: int = 2**31 - 1) -> np.ndarray:
    return rng.integers(lo, hi, n, endpoint=True).astype(np.int32)


# ---------------------------------------------------------------- warp shuffles


def _shfl_ref(mode: str, width: int, x: np.ndarray, arg: np.ndarray) -> np.ndarray:
    """CUDA's __shfl*_sync over segments of `width` lanes: out-of-segment sources read their own value
    (shfl_xor may read an earlier segment, never a later one)."""
    g = np.arange(N)
    lane = g % BLOCK % 32
    warp0 = g - lane
    base = lane & ~(width - 1)
    if mode == "idx":
        src = base + (arg % width)
    elif mode == "up":
        src = np.where(lane - base >= arg, lane - arg, lane)
    elif mode == "down":
        src = np.where(lane - base + arg < width, lane + arg, lane)
    else:
        j = lane ^ arg
        src = np.where(j < base + width, j, lane)
    return x[warp0 + src]


SHFL_TYPES = {"int": np.int32, "unsigned": np.uint32, "long long": np.int64, "float": np.float32,
              "double": np.float64}  # fmt: skip


def _shfl_case(mode: str, width: int, ctype: str) -> Case:
    fn = {"idx": "__shfl_sync", "up": "__shfl_up_sync", "down": "__shfl_down_sync", "xor": "__shfl_xor_sync"}[
        mode
    ]
    dt = SHFL_TYPES[ctype]
    src = f"""
extern "C" __global__ void kernel(const {ctype}* x, const int* arg, {ctype}* out) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = {fn}(0xffffffffu, x[i], arg[i], {width});
}}"""
    same_arg = mode in ("up", "down", "xor")  # a per-warp constant delta / mask, as code uses them

    def make(rng: np.random.Generator) -> Launch:
        x = (
            rng.integers(-(2**31), 2**31, N).astype(np.int64).astype(dt)
            if dt != np.float32
            else rng.standard_normal(N).astype(dt)
        )
        if dt == np.float64:
            x = rng.standard_normal(N)
        if same_arg:
            arg = np.repeat(rng.integers(0, width, N // 32), 32).astype(np.int32)
        else:
            arg = rng.integers(0, 64, N).astype(np.int32)
        return Launch(2, BLOCK, [x, arg, np.zeros(N, dt)], [2])

    def ref(launch: Launch) -> list[np.ndarray]:
        x, arg, _ = launch.args
        return [_shfl_ref(mode, width, x, arg.astype(np.int64))]

    return Case(f"{fn}/{ctype}/w{width}", fn, "warp", src, make, ref)


def _packed_shfl_case(ctype: str) -> Case:
    src = f"""
extern "C" __global__ void kernel(const {ctype}* x, const int* arg, {ctype}* out) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __shfl_xor_sync(0xffffffffu, x[i], arg[i] & 31);
}}"""
    dt = np.uint32 if ctype.endswith("2") else np.uint16

    def make(rng: np.random.Generator) -> Launch:
        arg = np.repeat(rng.integers(0, 32, N // 32), 32).astype(np.int32)
        return Launch(2, BLOCK, [rng.integers(0, 2**16, N).astype(dt) * (1 + (dt == np.uint32) * 65537), arg,
                                 np.zeros(N, dt)], [2])  # fmt: skip

    return Case(f"__shfl_xor_sync/{ctype}", "__shfl_xor_sync", "warp", src, make,
                lambda L: [_shfl_ref("xor", 32, L.args[0], L.args[1].astype(np.int64))])  # fmt: skip


# ---------------------------------------------------------------- votes, matches, reductions


def _per_warp(f: Callable[[np.ndarray, np.ndarray], np.ndarray], *cols: np.ndarray, active: np.ndarray | None = None
              ) -> np.ndarray:  # fmt: skip
    """Apply f(values of the active lanes, their lane ids) per warp; inactive lanes keep 0."""
    out = np.zeros(N, np.int64)
    active = np.ones(N, bool) if active is None else active
    for w in range(N // 32):
        sl = slice(32 * w, 32 * w + 32)
        on = active[sl]
        lanes = np.flatnonzero(on)
        res = f(*[c[sl][on] for c in cols], lanes)
        out[32 * w + lanes] = res
    return out


def _vote_cases() -> list[Case]:
    cases = []
    odd = (np.arange(N) % 2) == 1

    def mk(id_: str, func: str, body: str, ref: Callable[[np.ndarray], np.ndarray], outdt: Any = np.uint32,
           divergent: bool = False) -> Case:  # fmt: skip
        guard = "if (threadIdx.x & 1) " if divergent else ""
        src = f"""
extern "C" __global__ void kernel(const int* x, unsigned* out) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned mask = {"0xaaaaaaaau" if divergent else "0xffffffffu"};
    int v = x[i];
    {guard}{{ {body} }}
}}"""

        def make(rng: np.random.Generator) -> Launch:
            x = rng.integers(0, 4, N).astype(np.int32)
            x[64:96] = 3  # one warp agrees everywhere
            return Launch(2, BLOCK, [x, np.zeros(N, np.uint32)], [1])

        return Case(id_, func, "warp", src, make, lambda L: [ref(L.args[0]).astype(outdt)])

    bit = lambda lanes: (1 << lanes).astype(np.int64)  # noqa: E731
    for div in (False, True):
        act = odd if div else None
        tag = "/divergent" if div else ""
        cases += [
            mk(f"__ballot_sync{tag}", "__ballot_sync", "out[i] = __ballot_sync(mask, v > 1);",
               lambda x, a=act: _per_warp(lambda v, ln: np.full(len(ln), bit(ln[v > 1]).sum()), x, active=a), divergent=div),
            mk(f"__any_sync{tag}", "__any_sync", "out[i] = __any_sync(mask, v == 0);",
               lambda x, a=act: _per_warp(lambda v, ln: np.full(len(ln), (v == 0).any()), x, active=a), divergent=div),
            mk(f"__all_sync{tag}", "__all_sync", "out[i] = __all_sync(mask, v > 0);",
               lambda x, a=act: _per_warp(lambda v, ln: np.full(len(ln), (v > 0).all()), x, active=a), divergent=div),
            mk(f"__uni_sync{tag}", "__uni_sync", "out[i] = __uni_sync(mask, v > 1);",
               lambda x, a=act: _per_warp(lambda v, ln: np.full(len(ln), len(set((v > 1).tolist())) == 1), x, active=a),
               divergent=div),
            mk(f"__activemask{tag}", "__activemask", "out[i] = __activemask();",
               lambda x, a=act: _per_warp(lambda v, ln: np.full(len(ln), bit(ln).sum()), x, active=a), divergent=div),
            mk(f"__match_any_sync{tag}", "__match_any_sync", "out[i] = __match_any_sync(mask, v);",
               lambda x, a=act: _per_warp(lambda v, ln: np.array([bit(ln[v == e]).sum() for e in v]), x, active=a),
               divergent=div),
            mk(f"__match_all_sync{tag}", "__match_all_sync",
               "int p; unsigned r = __match_all_sync(mask, v, &p); out[i] = r ^ (p << 31);",
               lambda x, a=act: _per_warp(lambda v, ln: np.full(len(ln), (bit(ln).sum() ^ (1 << 31))
                                                                if (v == v[0]).all() else 0), x, active=a),
               divergent=div),
        ]  # fmt: skip
    for how, f in (("add", np.sum), ("min", np.min), ("max", np.max)):
        for t in ("unsigned", "int"):
            cases.append(mk(f"__reduce_{how}_sync/{t}", f"__reduce_{how}_sync",
                            f"out[i] = __reduce_{how}_sync(mask, ({t})(v * 1000003 - 2000000));",
                            lambda x, f=f, t=t: _per_warp(lambda v, ln: np.full(len(ln), f((v.astype(np.int64) * 1000003
                                                          - 2000000).astype(np.int32).astype(np.uint32 if t == "unsigned"
                                                          else np.int64).astype(np.int64))), x)))  # fmt: skip
    for how, f in (
        ("and", np.bitwise_and.reduce),
        ("or", np.bitwise_or.reduce),
        ("xor", np.bitwise_xor.reduce),
    ):
        cases.append(mk(f"__reduce_{how}_sync", f"__reduce_{how}_sync",
                        f"out[i] = __reduce_{how}_sync(mask, (unsigned)(v * 0x9E3779B1u));",
                        lambda x, f=f: _per_warp(lambda v, ln: np.full(len(ln), f((v.astype(np.int64) * 0x9E3779B1)
                                                                                  & 0xFFFFFFFF)), x)))  # fmt: skip
    cases.append(
        mk(
            "__syncwarp/divergent",
            "__syncwarp",
            "__syncwarp(mask); out[i] = v + 1;",
            lambda x, a=odd: np.where(a, x + 1, 0),
            divergent=True,
        )
    )
    cases.append(
        mk(
            "__shfl_sync/divergent",
            "__shfl_sync",
            "out[i] = __shfl_sync(mask, v, 31);",
            lambda x, a=odd: np.where(a, x[(np.arange(N) // 32) * 32 + 31], 0),
            divergent=True,
        )
    )
    return cases


# ---------------------------------------------------------------- atomics

SLOTS = 12


def _atomic_case(fn: str, ctype: str, space: str, values: str = "small") -> Case:
    """Every thread applies fn to slot idx[i] (a few threads per slot); the final slots are compared."""
    dt = {"int": np.int32, "unsigned": np.uint32, "unsigned long long": np.uint64, "long long": np.int64,
          "float": np.float32, "double": np.float64, "__half": np.uint16, "__half2": np.uint32,
          "__nv_bfloat16": np.uint16, "__nv_bfloat162": np.uint32}[ctype]  # fmt: skip
    if space == "shared":
        body = f"""
    __shared__ {ctype} s[{SLOTS}];
    if (threadIdx.x < {SLOTS}) s[threadIdx.x] = slots[blockIdx.x * {SLOTS} + threadIdx.x];
    __syncthreads();
    {fn}(&s[idx[i]], v[i]);
    __syncthreads();
    if (threadIdx.x < {SLOTS}) slots[blockIdx.x * {SLOTS} + threadIdx.x] = s[threadIdx.x];"""
    else:
        body = f"    {fn}(&slots[blockIdx.x * {SLOTS} + idx[i]], v[i]);"
    src = f"""
extern "C" __global__ void kernel({ctype}* slots, const int* idx, const {ctype}* v) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
{body}
}}"""
    op = fn.replace("atomic", "").replace("_block", "").lower()

    def make(rng: np.random.Generator) -> Launch:
        idx = rng.integers(0, SLOTS, N).astype(np.int32)
        if ctype in ("__half", "__nv_bfloat16", "__half2", "__nv_bfloat162"):
            fmt = F16 if "half" in ctype else BF16
            lanes = 2 if ctype.endswith("2") else 1
            vals = [to_bits(fmt, rng.integers(-2, 3, N).astype(np.float64)) for _ in range(lanes)]
            init = [to_bits(fmt, rng.integers(-8, 9, 2 * SLOTS).astype(np.float64)) for _ in range(lanes)]

            def pack(ls):
                return (
                    ls[0].astype(dt)
                    if lanes == 1
                    else (ls[0].astype(np.uint32) | (ls[1].astype(np.uint32) << 16))
                )

            return Launch(2, BLOCK, [pack(init), idx, pack(vals)], [0])
        if dt in (np.float32, np.float64):
            v = rng.integers(-8, 9, N).astype(dt) / 4
            init = rng.integers(-8, 9, 2 * SLOTS).astype(dt)
        elif op in ("inc", "dec"):
            # one limit per slot and a start within it: then each inc (dec) is +1 (-1) modulo
            # limit + 1 and the final word is start +- hits whatever the order (different limits,
            # or a start above the limit, would make it depend on the order the GPU picks; the
            # single-thread cases below take those branches in program order)
            lim = rng.integers(3, 8, 2 * SLOTS).astype(dt)
            init = (rng.integers(0, 2**16, 2 * SLOTS) % (lim.astype(np.int64) + 1)).astype(dt)
            v = lim[np.arange(N) // BLOCK * SLOTS + idx]
        else:
            info = np.iinfo(dt)
            v = rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), N, endpoint=True).astype(dt)
            init = rng.integers(
                max(info.min, -(2**40)), min(info.max, 2**40), 2 * SLOTS, endpoint=True
            ).astype(dt)
        return Launch(2, BLOCK, [init, idx, v], [0])

    def ref(launch: Launch) -> list[np.ndarray]:
        slots, idx, v = (np.array(a) for a in launch.args)
        g = np.arange(N) // BLOCK * SLOTS + idx
        if ctype in ("__half", "__nv_bfloat16", "__half2", "__nv_bfloat162"):
            sig = {"__half": "h:hh", "__nv_bfloat16": "b:bb", "__half2": "H:HH", "__nv_bfloat162": "B:BB"}[
                ctype
            ]
            add = exact(sig, "add")
            for k in range(N):
                slots[g[k]] = add(slots[g[k] : g[k] + 1], v[k : k + 1])[0][0]
            return [slots]
        with np.errstate(over="ignore"):
            for k in range(N):
                slots[g[k]] = _atomic_result(op, slots[g[k]], v[k], dt)
        return [slots]

    return Case(f"{fn}/{ctype}/{space}", fn, "atomic", src, make, ref)


def _atomic_exchange_cases() -> list[Case]:
    """atomicExch and atomicCAS on distinct addresses (the order of conflicting ones is the hardware's)."""
    out = []
    for ctype, dt in (("int", np.int32), ("unsigned", np.uint32), ("unsigned long long", np.uint64),
                      ("float", np.float32), ("unsigned short", np.uint16)):  # fmt: skip
        if ctype != "unsigned short":
            src = f"""
extern "C" __global__ void kernel({ctype}* a, const {ctype}* v, {ctype}* old) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    old[i] = atomicExch(&a[i], v[i]);
}}"""

            def make(rng: np.random.Generator, dt: Any = dt) -> Launch:
                a = rng.integers(0, 2**15, N).astype(dt)
                return Launch(2, BLOCK, [a, rng.integers(0, 2**15, N).astype(dt), np.zeros(N, dt)], [0, 2])

            out.append(Case(f"atomicExch/{ctype}", "atomicExch", "atomic", src, make,
                            lambda L: [L.args[1].copy(), L.args[0].copy()]))  # fmt: skip
        if ctype == "float":
            continue
        src = f"""
extern "C" __global__ void kernel({ctype}* a, const {ctype}* cmp, const {ctype}* v, {ctype}* old) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    old[i] = atomicCAS(&a[i], cmp[i], v[i]);
}}"""

        def make_cas(rng: np.random.Generator, dt: Any = dt) -> Launch:
            a = rng.integers(0, 4, N).astype(dt)
            return Launch(2, BLOCK, [a, rng.integers(0, 4, N).astype(dt), rng.integers(0, 2**15, N).astype(dt),
                                     np.zeros(N, dt)], [0, 3])  # fmt: skip

        out.append(Case(f"atomicCAS/{ctype}", "atomicCAS", "atomic", src, make_cas,
                        lambda L: [np.where(L.args[0] == L.args[1], L.args[2], L.args[0]), L.args[0].copy()]))  # fmt: skip
    return out


def _atomic_wrap_cases() -> list[Case]:
    """atomicInc and atomicDec from one thread, so in program order: the wrap at the limit, a word
    above the limit (inc gives 0, dec the limit), 0 (dec gives the limit), and limits 0 and ~0u."""
    out = []
    for fn in ("atomicInc", "atomicDec"):
        op = fn[6:].lower()
        src = f"""
extern "C" __global__ void kernel(unsigned* w, const unsigned* lim, unsigned* old, int n) {{
    for (int k = 0; k < n; ++k) old[k] = {fn}(&w[k % 4], lim[k]);
}}"""

        def make(rng: np.random.Generator) -> Launch:
            w = np.array([9, 0, 5, 0xFFFFFFFF], np.uint32)
            edges = [5, 5, 5, 5, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF]
            lim = np.concatenate([np.array(edges, np.uint32), rng.integers(0, 8, 52).astype(np.uint32)])
            return Launch(1, 1, [w, lim, np.zeros(len(lim), np.uint32), np.int32(len(lim))], [0, 2])

        def ref(launch: Launch, op: str = op) -> list[np.ndarray]:
            w, lim = np.array(launch.args[0]), launch.args[1]
            old = np.zeros(len(lim), np.uint32)
            for k, b in enumerate(lim):
                old[k] = w[k % 4]
                w[k % 4] = _atomic_result(op, w[k % 4], b, np.uint32)
            return [w, old]

        out.append(Case(f"{fn}/unsigned/one thread", fn, "atomic", src, make, ref))
    return out


def _atomic_cases() -> list[Case]:
    cases = []
    table = {
        "atomicAdd": ["int", "unsigned", "unsigned long long", "float", "double", "__half", "__half2",
                      "__nv_bfloat16", "__nv_bfloat162"],
        "atomicSub": ["int", "unsigned"],
        "atomicMin": ["int", "unsigned", "long long", "unsigned long long"],
        "atomicMax": ["int", "unsigned", "long long", "unsigned long long"],
        "atomicAnd": ["int", "unsigned", "unsigned long long"], "atomicOr": ["int", "unsigned", "unsigned long long"],
        "atomicXor": ["int", "unsigned", "unsigned long long"], "atomicInc": ["unsigned"], "atomicDec": ["unsigned"],
    }  # fmt: skip
    for fn, types in table.items():
        for t in types:
            for space in ("global", "shared"):
                cases.append(_atomic_case(fn, t, space))
    cases.append(_atomic_case("atomicAdd_block", "int", "global"))
    return cases + _atomic_wrap_cases() + _atomic_exchange_cases()


# ---------------------------------------------------------------- cooperative groups


def _tiles(width: int) -> np.ndarray:
    g = np.arange(N)
    return g - (g % BLOCK) % width  # the first thread of each thread's tile


def _cg_cases() -> list[Case]:
    cases = []
    for w in (4, 8, 16, 32):
        ops: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
            "shfl": ("t.shfl(v, 3 % t.size())", lambda x, w=w: x[_tiles(w) + 3 % w]),
            "shfl_down": ("t.shfl_down(v, 1)", lambda x, w=w: np.where((np.arange(N) % BLOCK) % w < w - 1, np.roll(x, -1), x)),
            "shfl_up": ("t.shfl_up(v, 2)", lambda x, w=w: np.where((np.arange(N) % BLOCK) % w >= 2, np.roll(x, 2), x)),
            "shfl_xor": ("t.shfl_xor(v, 1)", lambda x: x[np.arange(N) ^ 1]),
            "ballot": ("(int)t.ballot(v & 1)", lambda x, w=w: _seg(x, w, lambda s: np.full(w, sum(((s & 1) != 0) << np.arange(w))))),
            "any": ("t.any(v == 5)", lambda x, w=w: _seg(x, w, lambda s: np.full(w, (s == 5).any()))),
            "all": ("t.all(v > 0)", lambda x, w=w: _seg(x, w, lambda s: np.full(w, (s > 0).all()))),
            "match_any": ("(int)t.match_any(v & 3)", lambda x, w=w: _seg(x, w, lambda s: np.array(
                [sum(((s & 3) == e) << np.arange(w)) for e in (s & 3)]))),
            "reduce_plus": ("cg::reduce(t, v, cg::plus<int>())", lambda x, w=w: _seg(x, w, lambda s: np.full(w, s.sum()))),
            "reduce_max": ("cg::reduce(t, v, cg::greater<int>())", lambda x, w=w: _seg(x, w, lambda s: np.full(w, s.max()))),
            "reduce_min": ("cg::reduce(t, v, cg::less<int>())", lambda x, w=w: _seg(x, w, lambda s: np.full(w, s.min()))),
            "reduce_and": ("cg::reduce(t, v, cg::bit_and<int>())", lambda x, w=w: _seg(x, w, lambda s: np.full(w, np.bitwise_and.reduce(s)))),
            "inclusive_scan": ("cg::inclusive_scan(t, v)", lambda x, w=w: _seg(x, w, np.cumsum)),
            "exclusive_scan": ("cg::exclusive_scan(t, v)", lambda x, w=w: _seg(x, w, lambda s: np.cumsum(s) - s)),
            "rank": ("(int)(t.thread_rank() * 100 + t.meta_group_rank() * 10000 + t.meta_group_size())",
                     lambda x, w=w: (np.arange(N) % BLOCK) % w * 100 + (np.arange(N) % BLOCK) // w * 10000 + BLOCK // w),
        }  # fmt: skip
        for name, (expr, ref) in ops.items():
            src = f"""
extern "C" __global__ void kernel(const int* x, int* out) {{
    cg::thread_block_tile<{w}> t = cg::tiled_partition<{w}>(cg::this_thread_block());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    out[i] = {expr};
}}"""

            def make(rng: np.random.Generator) -> Launch:
                return Launch(2, BLOCK, [rng.integers(-6, 7, N).astype(np.int32), np.zeros(N, np.int32)], [1])

            cases.append(Case(f"cg::{name}/tile{w}", f"thread_block_tile::{name}" if not name.startswith(("reduce", "inc", "exc"))
                              else f"cg::{name.split('_')[0]}", "cooperative groups", src, make,
                              lambda L, ref=ref: [np.asarray(ref(L.args[0].astype(np.int64))).astype(np.int32)]))  # fmt: skip
    src = """
extern "C" __global__ void kernel(const int* x, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = x[i];
    out[i] = -1;
    if (v & 1) {
        cg::coalesced_group g = cg::coalesced_threads();
        out[i] = (int)(g.thread_rank() * 1000 + g.size()) + g.shfl(v, 0) * 100000;
    }
}"""

    def make_c(rng: np.random.Generator) -> Launch:
        return Launch(2, BLOCK, [rng.integers(0, 9, N).astype(np.int32), np.zeros(N, np.int32)], [1])

    def ref_c(L: Launch) -> list[np.ndarray]:
        x = L.args[0]
        out = np.full(N, -1, np.int64)
        for wp in range(N // 32):
            lanes = np.flatnonzero(x[32 * wp : 32 * wp + 32] & 1) + 32 * wp
            for r, g in enumerate(lanes):
                out[g] = r * 1000 + len(lanes) + x[lanes[0]] * 100000
        return [out.astype(np.int32)]

    cases.append(Case("cg::coalesced_threads", "coalesced_group", "cooperative groups", src, make_c, ref_c))
    return cases


def _seg(x: np.ndarray, w: int, f: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    out = np.empty(N, np.int64)
    for s in range(0, N, w):
        out[s : s + w] = f(x[s : s + w])
    return out


def all_cases() -> list[Case]:
    cases: list[Case] = []
    for mode in ("idx", "up", "down", "xor"):
        for width in (32, 16, 8, 4, 2):
            cases.append(_shfl_case(mode, width, "int"))
        for ctype in ("unsigned", "long long", "float", "double"):
            cases.append(_shfl_case(mode, 32 if mode == "idx" else 8, ctype))
    cases += [_packed_shfl_case(t) for t in ("__half", "__half2", "__nv_bfloat16", "__nv_bfloat162")]
    cases += _vote_cases() + _atomic_cases() + _cg_cases()
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases


CASES = all_cases()


def _atomic_result(op: str, old: Any, x: Any, dt: Any) -> Any:
    """What an atomic `op` leaves in a word holding `old`, given operand `x`."""
    if op == "inc":
        return dt(0) if old >= x else old + dt(1)
    if op == "dec":
        return x if old == 0 or old > x else old - dt(1)
    return _ATOMIC_OPS[op](old, x)


_ATOMIC_OPS: dict[str, Any] = {
    "add": operator.add, "sub": operator.sub, "min": min, "max": max,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
}  # fmt: skip
