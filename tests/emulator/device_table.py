"""The rows of the device-API table: CUDA's math, half, bfloat16, integer and conversion functions.

Each row is one function on one type with a reference: exact ones (`exact`, `conv`, `lanes`)
round the true result once in the PTX rounding mode through `fpref`; approximate ones (`approx`)
evaluate the function in float64 (NumPy, `math`, or a quadrature here) and allow the error the
CUDA Programming Guide documents for the GPU (its "Mathematical Functions" tables).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from .device_api import TYPES, CType, Row
from .fpref import BF16, F16, F32, F64, Fmt, decode, exact_op, flush, round_to, to_bits

# ---------------------------------------------------------------- decoding and encoding values


def as_f64(t: CType, a: np.ndarray) -> np.ndarray:
    """Storage -> float64 values ((n, lanes) for packed types); integers -> int64 / uint64 objects."""
    a = np.asarray(a)
    if t.fmt is None:
        return a
    if t.fmt is F32:
        v = a.view(np.float32).astype(np.float64)
    elif t.fmt is F64:
        v = a.view(np.float64)
    elif t.fmt is F16:
        v = a.view(np.uint16).view(np.float16).astype(np.float64)
    else:
        v = (a.view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return v.reshape(-1, t.lanes) if t.lanes > 1 else v


def from_f64(t: CType, v: np.ndarray, *, ftz: bool = False) -> np.ndarray:
    """float64 values (one rounding to nearest) -> storage of t."""
    v = np.asarray(v, np.float64)
    fmt = t.fmt
    assert fmt is not None
    with np.errstate(all="ignore"):
        if fmt is F64:
            bits = v.view(np.uint64).copy()
        elif fmt is F32:
            bits = v.astype(np.float32).view(np.uint32).copy()
        elif fmt is F16:
            bits = v.astype(np.float16).view(np.uint16).copy()
        else:
            bits = to_bits(BF16, v.reshape(-1)).reshape(v.shape)
    if ftz:
        tiny = math.ldexp(1, fmt.emin)
        sub = (np.abs(v) < tiny) & (v != 0)
        # a value rounding up onto the smallest normal is kept: it is normal after rounding
        again = as_f64(CType("x", "", fmt.dtype, fmt), bits.reshape(-1)).reshape(v.shape)
        bits = np.where(
            sub & (np.abs(again) < tiny), bits & fmt.dtype(~(fmt.sign_bit - 1) & (2**fmt.bits - 1)), bits
        )
    bits = bits.astype(fmt.dtype)
    if t.lanes > 1:
        lo, hi = bits.reshape(-1, 2).T.astype(np.uint64)
        return (lo | (hi << np.uint64(fmt.bits))).astype(t.dtype)
    return bits.view(t.dtype) if t.dtype != fmt.dtype else bits


def flush_in(t: CType, v: np.ndarray) -> np.ndarray:
    if t.fmt is None:
        return v
    tiny = math.ldexp(1, t.fmt.emin)
    return np.where((np.abs(v) < tiny) & (v != 0), np.copysign(0.0, v), v)


# ---------------------------------------------------------------- reference builders


def approx(sig: str, f: Callable[..., Any], ftz: bool = False) -> Callable[..., list[np.ndarray]]:
    """f on float64 inputs (flushed if ftz) rounded to nearest in the output type."""
    outs, ins = [TYPES[x] for x in sig.split(":")[0]], [TYPES[x] for x in sig.split(":")[1]]

    def ref(*arrays: np.ndarray) -> list[np.ndarray]:
        vals = [as_f64(t, a) for t, a in zip(ins, arrays)]
        if ftz:
            vals = [flush_in(t, v) if t.fmt is F32 else v for t, v in zip(ins, vals)]
        with np.errstate(all="ignore"):
            res = f(*vals)
        res = res if isinstance(res, tuple) else (res,)
        out = []
        for t, r in zip(outs, res):
            if t.fmt is None:
                out.append(np.asarray(r).astype(t.dtype))
            else:
                out.append(from_f64(t, np.asarray(r, np.float64), ftz=ftz and t.fmt is F32))
        return out

    return ref


def exact(sig: str, op: str, mode: str = "rn", *, ftz: bool = False, sat: bool = False,
          relu: bool = False) -> Callable[..., list[np.ndarray]]:  # fmt: skip
    """One correctly rounded operation (lane by lane for packed types)."""
    out_t, ins = TYPES[sig[0]], [TYPES[x] for x in sig.split(":")[1]]
    fmt = out_t.fmt
    assert fmt is not None

    def ref(*arrays: np.ndarray) -> list[np.ndarray]:
        vals = [as_f64(t, a).reshape(len(a), -1) for t, a in zip(ins, arrays)]
        lanes = out_t.lanes
        res = np.zeros((len(arrays[0]), lanes), np.uint64)
        for k in range(lanes):
            cols = [v[:, min(k, v.shape[1] - 1)].tolist() for v in vals]
            res[:, k] = [exact_op(op, xs, fmt, mode, ftz=ftz, sat=sat, relu=relu) for xs in zip(*cols)]
        return [pack(out_t, res)]

    return ref


def pack(t: CType, lanes: np.ndarray) -> np.ndarray:
    """(n, lanes) bits -> storage of t."""
    assert t.fmt is not None
    lanes = np.asarray(lanes).astype(np.uint64).reshape(len(lanes), -1)
    out = np.zeros(len(lanes), np.uint64)
    for k in range(lanes.shape[1]):
        out |= lanes[:, k] << np.uint64(k * t.fmt.bits)
    return out.astype(t.fmt.dtype if t.lanes == 1 else t.dtype).view(t.dtype)


def bits_of(t: CType, a: np.ndarray) -> np.ndarray:
    """Storage -> (n, lanes) int64 bits."""
    assert t.fmt is not None
    a = np.ascontiguousarray(a)
    return a.view(t.fmt.dtype).reshape(len(a), t.lanes).astype(np.int64)


def per_element(sig: str, f: Callable[..., Any]) -> Callable[..., list[np.ndarray]]:
    """f on Python values, one element at a time: floats decode to floats (packed: tuples of lane
    bits), integers stay ints; f returns output bits for float outputs, ints for integer ones."""
    outs, ins = [TYPES[x] for x in sig.split(":")[0]], [TYPES[x] for x in sig.split(":")[1]]

    def ref(*arrays: np.ndarray) -> list[np.ndarray]:
        cols = []
        for t, a in zip(ins, arrays):
            if t.fmt is None:
                cols.append([int(x) for x in np.asarray(a).tolist()])
            elif t.lanes > 1:
                cols.append([tuple(int(x) for x in r) for r in bits_of(t, a)])
            else:
                cols.append([decode(t.fmt, int(x)) for x in bits_of(t, a)[:, 0]])
        res = [f(*xs) for xs in zip(*cols)]
        res = [r if isinstance(r, tuple) and len(outs) > 1 else (r,) for r in res]
        out = []
        for k, t in enumerate(outs):
            col = [r[k] for r in res]
            if t.fmt is None:
                bits = 8 * np.dtype(t.dtype).itemsize
                out.append(np.array([v & ((1 << bits) - 1) for v in col], f"u{bits // 8}").view(t.dtype))
            else:
                out.append(pack(t, np.array([c if isinstance(c, tuple) else (c,) for c in col], np.uint64)))
        return out

    return ref


# ---------------------------------------------------------------- special functions in float64


def _trap(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, lo: float, hi: float, n: int) -> np.ndarray:
    t = np.linspace(lo, hi, n + 1)
    vals = f(t[None, :])
    w = np.full(n + 1, (hi - lo) / n)
    w[[0, -1]] /= 2
    return vals @ w


def bessel_j(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """J_n(x) = 1/pi * integral_0^pi cos(n t - x sin t) dt (the trapezoid rule is spectral here)."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    m = int(min(max(np.nanmax(np.abs(np.where(np.isfinite(x), x, 0)), initial=0) * 1.5 + 64, 64), 8192))
    out = (
        _trap(lambda t: np.cos(n.reshape(-1, 1) * t - x.reshape(-1, 1) * np.sin(t)), x, 0, math.pi, m)
        / math.pi
    )
    out = out.reshape(x.shape)
    return np.where(np.isinf(x), 0.0, np.where(np.isnan(x), np.nan, out))


def bessel_y(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Y_n(x) for x > 0: the integral form (Watson 6.21) by the trapezoid rule."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    xs, ns = x.reshape(-1, 1), n.reshape(-1, 1)
    safe = np.where(xs > 0, xs, 1.0)
    m = int(min(np.nanmax(np.where(np.isfinite(x), np.abs(x), 0), initial=0) * 1.5 + 256, 8192))
    nodes, weights = np.polynomial.legendre.leggauss(400)
    del m
    th = (nodes[None, :] + 1) * math.pi / 2
    first = (np.sin(safe * np.sin(th) - ns * th) @ weights) / 2
    top = np.arcsinh(60.0 / safe)  # exp(-x sinh t) < e**-60 beyond
    t = (nodes[None, :] + 1) * top / 2
    with np.errstate(all="ignore"):
        vals = (np.exp(ns * t) + np.cos(ns * math.pi) * np.exp(-ns * t)) * np.exp(-safe * np.sinh(t))
    second = (vals @ weights) * top[:, 0] / 2 / math.pi
    out = (first - second).reshape(x.shape)
    return np.where(x == 0, -np.inf, np.where(x < 0, np.nan, np.where(np.isinf(x), 0.0, out)))


def bessel_i(n: int, x: np.ndarray) -> np.ndarray:
    """I_n(x) = 1/pi * integral_0^pi exp(x cos t) cos(n t) dt."""
    x = np.asarray(x, np.float64)
    xs = x.reshape(-1, 1)
    with np.errstate(all="ignore"):
        out = _trap(lambda t: np.exp(xs * np.cos(t)) * np.cos(n * t), x, 0, math.pi, 512) / math.pi
    out = out.reshape(x.shape)
    if n % 2:
        out = np.where(np.isinf(x), x, out)
    return np.where(np.isinf(x), np.inf if n % 2 == 0 else x, out)


def _newton(f: Callable[[float], float], df: Callable[[float], float], y: float, steps: int = 60) -> float:
    for _ in range(steps):
        d = df(y)
        if d == 0 or not math.isfinite(d):
            break
        step = f(y) / d
        y -= step
        if abs(step) <= 1e-17 * abs(y):
            break
    return y


def erfinv(x: np.ndarray) -> np.ndarray:
    def one(v: float) -> float:
        if math.isnan(v) or abs(v) > 1:
            return math.nan
        if abs(v) == 1:
            return math.copysign(math.inf, v)
        if v == 0:
            return v
        y = math.copysign(math.sqrt(-math.log((1 - abs(v)) / 2)), v) * 0.8
        return _newton(lambda y: math.erf(y) - v, lambda y: 2 / math.sqrt(math.pi) * math.exp(-y * y), y)

    return np.array([one(v) for v in np.asarray(x).reshape(-1).tolist()]).reshape(np.shape(x))


def erfcinv(x: np.ndarray) -> np.ndarray:
    def one(v: float) -> float:
        if math.isnan(v) or v < 0 or v > 2:
            return math.nan
        if v == 0:
            return math.inf
        if v == 2:
            return -math.inf
        if 0.5 <= v <= 1.5:  # 1 - v is exact here: invert erf near 0, where it is well conditioned
            return float(erfinv(np.array([1 - v]))[0])
        if v > 1:
            return -one(2 - v) if 2 - v > 0 else -math.inf
        y = math.sqrt(max(-math.log(v / 2), 0.0)) * 0.9
        return _newton(lambda y: math.erfc(y) - v, lambda y: -2 / math.sqrt(math.pi) * math.exp(-y * y), y)

    return np.array([one(v) for v in np.asarray(x).reshape(-1).tolist()]).reshape(np.shape(x))


def erfcx(x: np.ndarray) -> np.ndarray:
    def one(v: float) -> float:
        if math.isnan(v):
            return v
        if v < 26:
            return math.exp(v * v) * math.erfc(v) if v > -27 else math.inf
        s, term = 1.0, 1.0
        for k in range(1, 12):
            term *= -(2 * k - 1) / (2 * v * v)
            s += term
        return s / v / math.sqrt(math.pi)

    return np.array([one(v) for v in np.asarray(x).reshape(-1).tolist()]).reshape(np.shape(x))


def _vec(f: Callable[[float], float]) -> Callable[[np.ndarray], np.ndarray]:
    def g(x: np.ndarray) -> np.ndarray:
        out = []
        for v in np.asarray(x).reshape(-1).tolist():
            try:
                out.append(f(v))
            except (ValueError, OverflowError):
                out.append(_limit(f, v))
        return np.array(out, np.float64).reshape(np.shape(x))

    return g


def _limit(f: Callable[[float], float], v: float) -> float:
    if f is math.gamma:
        if v == 0:
            return math.copysign(math.inf, v)
        if (v < 0 and v == int(v)) or v == -math.inf or math.isnan(v):
            return math.nan
        return math.inf
    if f is math.lgamma:
        return math.nan if math.isnan(v) else math.inf
    return math.nan


def _reduce_pi(x: np.ndarray) -> np.ndarray:
    """x - 2k in [-1, 1] (exact), then folded to |s| <= 1/2 with sinpi(s) == sinpi(x)."""
    r = np.fmod(x, 2.0)
    r = np.where(r > 1, r - 2, np.where(r < -1, r + 2, r))
    return np.where(r > 0.5, 1 - r, np.where(r < -0.5, -1 - r, r))


def sinpi(x: np.ndarray) -> np.ndarray:
    s = _reduce_pi(x)
    out = np.sin(math.pi * s)
    return np.where(s == 0, np.copysign(0.0, x), np.where(np.isfinite(x), out, np.nan))


def cospi(x: np.ndarray) -> np.ndarray:
    r = np.fmod(np.abs(x), 2.0)
    r = np.where(r > 1, 2 - r, r)  # cospi(r) on [0, 1]
    out = np.where(r <= 0.25, np.cos(math.pi * r), np.where(r >= 0.75, -np.cos(math.pi * (1 - r)),
                   np.sin(math.pi * (0.5 - r))))  # fmt: skip
    return np.where(np.isfinite(x), np.where(r == 0.5, 0.0, out), np.nan)


def _rint_away(x: np.ndarray) -> np.ndarray:
    """Halfway cases away from zero (C's round); values from 2**52 up are integers already."""
    t = np.trunc(x)
    away = np.abs(x - t) >= 0.5
    r = np.where(np.isfinite(x) & (np.abs(x) < 2.0**52), t + np.where(away, np.sign(x), 0), x)
    return np.copysign(r, x)  # round(-0.3) is -0, as round(-0) is


def _zeros_ordered(f: Callable[..., Any], smaller: bool) -> Callable[..., Any]:
    """fmin/fmax with -0 below +0 (C leaves their order open; a GPU's min/max order them, and
    tests/emulator/ptx_truth.json records it)."""

    def g(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        neg = (np.signbit(a) | np.signbit(b)) if smaller else (np.signbit(a) & np.signbit(b))
        return np.where((a == 0) & (b == 0), np.where(neg, -0.0, 0.0), f(a, b))

    return g


# ---------------------------------------------------------------- float and double math

# (float name, double name, float64 function, ulp float, ulp double, domain, note)
UNARY_MATH: list[tuple[str, str, Callable[..., Any], float, float, str]] = [
    ("sinf", "sin", np.sin, 2, 2, ""), ("cosf", "cos", np.cos, 2, 2, ""), ("tanf", "tan", np.tan, 4, 2, ""),
    ("sinpif", "sinpi", sinpi, 1, 2, ""), ("cospif", "cospi", cospi, 1, 2, ""),
    ("asinf", "asin", np.arcsin, 2, 2, "range:-1.2:1.2"), ("acosf", "acos", np.arccos, 2, 2, "range:-1.2:1.2"),
    ("atanf", "atan", np.arctan, 2, 2, ""), ("sinhf", "sinh", np.sinh, 3, 2, ""),
    ("coshf", "cosh", np.cosh, 2, 1, ""), ("tanhf", "tanh", np.tanh, 2, 1, ""),
    ("asinhf", "asinh", np.arcsinh, 3, 3, ""), ("acoshf", "acosh", np.arccosh, 4, 3, ""),
    ("atanhf", "atanh", np.arctanh, 3, 2, "range:-1.2:1.2"), ("expf", "exp", np.exp, 2, 1, ""),
    ("exp2f", "exp2", np.exp2, 2, 1, ""), ("exp10f", "exp10", lambda x: np.power(10.0, x), 2, 1, ""),
    ("expm1f", "expm1", np.expm1, 1, 1, ""), ("logf", "log", np.log, 1, 1, ""),
    ("log2f", "log2", np.log2, 1, 1, ""), ("log10f", "log10", np.log10, 2, 1, ""),
    ("log1pf", "log1p", np.log1p, 1, 1, ""), ("sqrtf", "sqrt", np.sqrt, 0, 0, ""),
    ("rsqrtf", "rsqrt", lambda x: 1 / np.sqrt(x), 2, 1, ""), ("cbrtf", "cbrt", np.cbrt, 1, 1, ""),
    ("rcbrtf", "rcbrt", lambda x: 1 / np.cbrt(x), 1, 1, ""), ("erff", "erf", _vec(math.erf), 2, 2, ""),
    ("erfcf", "erfc", _vec(math.erfc), 4, 5, ""), ("erfinvf", "erfinv", erfinv, 2, 5, "range:-1.05:1.05"),
    ("erfcinvf", "erfcinv", erfcinv, 4, 6, "range:-0.05:2.05"), ("erfcxf", "erfcx", erfcx, 4, 4, ""),
    ("normcdff", "normcdf", lambda x: 0.5 * _vec(math.erfc)(-x / math.sqrt(2)), 5, 5, ""),
    ("normcdfinvf", "normcdfinv", lambda x: -math.sqrt(2) * erfcinv(2 * x), 5, 8, "range:-0.05:1.05"),
    ("lgammaf", "lgamma", _vec(math.lgamma), 6, 4, "range:-2.2:60"),
    ("tgammaf", "tgamma", _vec(math.gamma), 5, 10, "range:-3.5:40"),
    ("j0f", "j0", lambda x: bessel_j(0, x), 9, 7, "range:-40:40"),
    ("j1f", "j1", lambda x: bessel_j(1, x), 9, 7, "range:-40:40"),
    ("y0f", "y0", lambda x: bessel_y(0, x), 9, 7, "range:0.05:40"),
    ("y1f", "y1", lambda x: bessel_y(1, x), 9, 7, "range:0.05:40"),
    ("cyl_bessel_i0f", "cyl_bessel_i0", lambda x: bessel_i(0, x), 6, 6, "range:-80:80"),
    ("cyl_bessel_i1f", "cyl_bessel_i1", lambda x: bessel_i(1, x), 6, 6, "range:-80:80"),
    ("logbf", "logb", lambda x: np.where(x == 0, -np.inf, np.where(np.isfinite(x), np.frexp(x)[1] - 1.0, np.abs(x))), 0, 0, ""),
    ("truncf", "trunc", np.trunc, 0, 0, ""), ("roundf", "round", _rint_away, 0, 0, ""),
    ("rintf", "rint", np.rint, 0, 0, ""), ("nearbyintf", "nearbyint", np.rint, 0, 0, ""),
    ("ceilf", "ceil", np.ceil, 0, 0, ""), ("floorf", "floor", np.floor, 0, 0, ""),
    ("fabsf", "fabs", np.abs, 0, 0, ""),
]  # fmt: skip

BINARY_MATH: list[tuple[str, str, Callable[..., Any], float, float]] = [
    ("atan2f", "atan2", np.arctan2, 3, 2), ("hypotf", "hypot", np.hypot, 3, 2),
    ("rhypotf", "rhypot", lambda a, b: _rnorm(a, b), 2, 1), ("powf", "pow", np.power, 4, 2),
    ("fmodf", "fmod", np.fmod, 0, 0), ("remainderf", "remainder", lambda a, b: _remainder(a, b), 0, 0),
    ("fdimf", "fdim", lambda a, b: np.where(a > b, a - b, np.where(np.isnan(a) | np.isnan(b), np.nan, 0.0)), 0, 0),
    ("fmaxf", "fmax", _zeros_ordered(np.fmax, False), 0, 0), ("fminf", "fmin", _zeros_ordered(np.fmin, True), 0, 0),
    ("copysignf", "copysign", np.copysign, 0, 0), ("nextafterf", "nextafter", None, 0, 0),  # type: ignore[list-item]
]  # fmt: skip


def _remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = []
    for x, y in zip(np.asarray(a).tolist(), np.asarray(b).tolist()):
        try:
            out.append(math.remainder(x, y))
        except ValueError:
            out.append(math.nan)
    return np.array(out)


# where a float64 reference is not good to a few double ulps: a wider tolerance, or a narrower range
DOUBLE_REF: dict[str, dict[str, Any]] = {
    # libdevice tests the high word of a negative subnormal as a float, which -ftz reads as 0: -inf
    "log": {"ref_where": lambda x: not (x < 0 and abs(x) < 2.0**-1022)},
    "log2": {"ref_where": lambda x: not (x < 0 and abs(x) < 2.0**-1022)},
    "log10": {"ref_where": lambda x: not (x < 0 and abs(x) < 2.0**-1022)},
    "normcdf": {"ref_ulp": 64, "ref_where": lambda x: x > -8},  # erfc amplifies x/sqrt(2)'s rounding
    "erfcx": {"ref_ulp": 64, "ref_where": lambda x: abs(x) < 6},  # exp(x*x) amplifies x*x's rounding
    "erfinv": {"ref_ulp": 64}, "erfcinv": {"ref_ulp": 64}, "normcdfinv": {"ref_ulp": 64}, "rcbrt": {"ref_ulp": 4},
    "cyl_bessel_i0": {"ref_ulp": 64}, "cyl_bessel_i1": {"ref_ulp": 64},
    "tgamma": {"ref_ulp": 64}, "lgamma": {"ref_ulp": 64, "ref_abs": 1e-13},
    "j0": {"ref_abs": 5e-12}, "j1": {"ref_abs": 5e-12}, "y0": {"ref_abs": 5e-12}, "y1": {"ref_abs": 5e-12},
}  # fmt: skip


def _float_math_rows() -> list[Row]:
    rows = []
    for fname, dname, f, uf, ud, dom in UNARY_MATH:
        where = ("range:-3.5:3.5",) if fname == "tgammaf" else ()
        rows.append(Row(fname, fname, "float", "f:f", f"o0 = {fname}(a);", approx("f:f", f, ftz=True), uf,
                        dom=(dom,) if dom else where, abs_tol=2.2e-6 if fname[0] in "jy" else 0.0))  # fmt: skip
        rows.append(Row(dname, dname, "double", "d:d", f"o0 = {dname}(a);", approx("d:d", f), ud,
                        dom=(dom,) if dom else (), abs_tol=5e-12 if dname[0] in "jy" else 0.0,
                        **DOUBLE_REF.get(dname, {})))  # fmt: skip
    for fname, dname, f, uf, ud in BINARY_MATH:
        where = None
        if f is None:  # nextafter: the neighbour of a toward b
            rf = per_element("f:ff", lambda a, b: _nextafter(F32, a, b, ftz=True))
            rd = per_element("d:dd", lambda a, b: _nextafter(F64, a, b))
            # with -ftz the step off zero (or onto the subnormals) is the library's choice
            where = lambda a, b: abs(a) >= 2.0**-125 or math.isnan(a) or a == b  # noqa: E731
        elif fname == "copysignf":  # bit operations: a subnormal magnitude is kept
            rf, rd = approx("f:ff", f), approx("d:dd", f)
        else:
            rf, rd = approx("f:ff", f, ftz=True), approx("d:dd", f)
        rows.append(Row(fname, fname, "float", "f:ff", f"o0 = {fname}(a, b);", rf, uf, ref_where=where))
        rows.append(Row(dname, dname, "double", "d:dd", f"o0 = {dname}(a, b);", rd, ud))
    for s, t in (("f", "float"), ("", "double")):
        L = "f" if s else "d"
        rows += [
            Row(f"fma{s}", f"fma{s}", t, f"{L}:{L}{L}{L}", f"o0 = fma{s}(a, b, c);",
                exact(f"{L}:{L}{L}{L}", "fma", ftz=bool(s))),
            Row(f"ldexp{s}", f"ldexp{s}", t, f"{L}:{L}i", f"o0 = ldexp{s}(a, b);",
                approx(f"{L}:{L}i", np.ldexp, ftz=bool(s)), dom=("", "range:-1100:1100")),
            Row(f"scalbn{s}", f"scalbn{s}", t, f"{L}:{L}i", f"o0 = scalbn{s}(a, b);",
                approx(f"{L}:{L}i", np.ldexp, ftz=bool(s)), dom=("", "range:-1100:1100")),
            Row(f"frexp{s}", f"frexp{s}", t, f"{L}i:{L}", f"o0 = frexp{s}(a, &o1);",
                approx(f"{L}i:{L}", _frexp, ftz=bool(s))),
            Row(f"modf{s}", f"modf{s}", t, f"{L}{L}:{L}", f"o0 = modf{s}(a, &o1);",
                approx(f"{L}{L}:{L}", _modf, ftz=bool(s))),
            Row(f"remquo{s}", f"remquo{s}", t, f"{L}i:{L}{L}", f"o0 = remquo{s}(a, b, &o1);",
                approx(f"{L}i:{L}{L}", _remquo, ftz=bool(s))),
            Row(f"sincos{s}", f"sincos{s}", t, f"{L}{L}:{L}", f"sincos{s}(a, &o0, &o1);",
                approx(f"{L}{L}:{L}", lambda x: (np.sin(x), np.cos(x)), ftz=bool(s)), 2),
            Row(f"sincospi{s}", f"sincospi{s}", t, f"{L}{L}:{L}", f"sincospi{s}(a, &o0, &o1);",
                approx(f"{L}{L}:{L}", lambda x: (sinpi(x), cospi(x)), ftz=bool(s)), 1 if s else 2),
            Row(f"ilogb{s}", f"ilogb{s}", t, f"i:{L}", f"o0 = ilogb{s}(a);", approx(f"i:{L}", _ilogb, ftz=bool(s))),
            Row(f"lrint{s}", f"lrint{s}", t, f"l:{L}", f"o0 = lrint{s}(a);", approx(f"l:{L}", _to_ll(np.rint))),
            Row(f"llrint{s}", f"llrint{s}", t, f"l:{L}", f"o0 = llrint{s}(a);", approx(f"l:{L}", _to_ll(np.rint))),
            Row(f"lround{s}", f"lround{s}", t, f"l:{L}", f"o0 = lround{s}(a);", approx(f"l:{L}", _to_ll(_rint_away))),
            Row(f"llround{s}", f"llround{s}", t, f"l:{L}", f"o0 = llround{s}(a);", approx(f"l:{L}", _to_ll(_rint_away))),
            Row(f"norm3d{s}", f"norm3d{s}", t, f"{L}:{L}{L}{L}", f"o0 = norm3d{s}(a, b, c);",
                approx(f"{L}:{L}{L}{L}", lambda a, b, c: _norm(a, b, c), ftz=bool(s)), 3 if s else 2),
            Row(f"rnorm3d{s}", f"rnorm3d{s}", t, f"{L}:{L}{L}{L}", f"o0 = rnorm3d{s}(a, b, c);",
                approx(f"{L}:{L}{L}{L}", lambda a, b, c: _rnorm(a, b, c), ftz=bool(s)), 2 if s else 1),
            Row(f"jn{s}", f"jn{s}", t, f"{L}:i{L}", f"o0 = jn{s}(a, b);",
                approx(f"{L}:i{L}", lambda n, x: bessel_j(n, x), ftz=bool(s)), 9 if s else 7,
                abs_tol=2.2e-6 if s else 5e-12, dom=("range:0:6", "range:-30:30")),
            Row(f"yn{s}", f"yn{s}", t, f"{L}:i{L}", f"o0 = yn{s}(a, b);",
                approx(f"{L}:i{L}", lambda n, x: bessel_y(n, x), ftz=bool(s)), 20,
                abs_tol=2.2e-6 if s else 5e-12, dom=("range:0:4", "range:0.5:30")),
        ]  # fmt: skip
    rows += [
        Row("signbit/f", "signbit", "float", "i:f", "o0 = signbit(a) != 0;", approx("i:f", lambda x: np.signbit(x).astype(int))),
        Row("isnan/f", "isnan", "float", "i:f", "o0 = isnan(a);", approx("i:f", lambda x: np.isnan(x).astype(int))),
        Row("isinf/f", "isinf", "float", "i:f", "o0 = isinf(a);", approx("i:f", lambda x: np.isinf(x).astype(int))),
        Row("isfinite/f", "isfinite", "float", "i:f", "o0 = isfinite(a);", approx("i:f", lambda x: np.isfinite(x).astype(int))),
        Row("isnan/d", "isnan", "double", "i:d", "o0 = isnan(a);", approx("i:d", lambda x: np.isnan(x).astype(int))),
        Row("signbit/d", "signbit", "double", "i:d", "o0 = signbit(a) != 0;", approx("i:d", lambda x: np.signbit(x).astype(int))),
    ]  # fmt: skip
    return rows


def _nextafter(fmt: Fmt, a: float, b: float, ftz: bool = False) -> int:
    if ftz:
        a, b = flush(fmt, a), flush(fmt, b)
    if math.isnan(a) or math.isnan(b):
        return fmt.qnan_bits
    if a == b:
        return int(to_bits(fmt, [b])[0])
    r = float(np.nextafter(a, b)) if fmt is F64 else float(np.nextafter(np.float32(a), np.float32(b)))
    if ftz:
        r = flush(fmt, r)
    return int(to_bits(fmt, [r])[0])


def _frexp(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, e = np.frexp(x)
    return m, np.where(np.isfinite(x), e, 0)


def _modf(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    frac, whole = np.modf(x)
    return np.where(np.isinf(x), np.copysign(0.0, x), frac), whole


def _remquo(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = _remainder(a, b)
    q = []
    for x, y in zip(np.asarray(a).tolist(), np.asarray(b).tolist()):
        if not (math.isfinite(x) and math.isfinite(y)) or y == 0:
            q.append(0)
            continue
        n = round(Fraction(x) / Fraction(y))  # ties to even, as remainder
        q.append(int(math.copysign(abs(n) & 7, 1 if (x < 0) == (y < 0) else -1)))
    return r, np.array(q)


def _ilogb(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.frexp(x)[1] - 1
    return np.where(
        x == 0, -(2**31), np.where(np.isnan(x), -(2**31), np.where(np.isinf(x), 2**31 - 1, e))
    ).astype(np.int64)


def _to_ll(rnd: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """Round, then saturate as cvt does (NaN -> INT64_MIN, the GPU's 64-bit NaN; see `_nan_int`)."""

    def f(x: np.ndarray) -> np.ndarray:
        r = rnd(x)
        nan = np.isnan(r)
        out = np.clip(np.where(nan, 0, r), -(2.0**63), 2.0**63 - 1024).astype(np.int64)
        return np.where(nan, np.int64(-(2**63)), np.where(r >= 2.0**63, np.int64(2**63 - 1), out))

    return f


def _rnorm(*xs: np.ndarray) -> np.ndarray:
    """1 / sqrt(sum of squares), scaled so that neither the sum nor the quotient overflows."""
    with np.errstate(all="ignore"):
        scale = np.max(np.abs(np.stack(xs)), axis=0)
        scale = np.where((scale == 0) | ~np.isfinite(scale), 1.0, scale)
        s = sum((x / scale) ** 2 for x in xs)
        out = (1 / scale) / np.sqrt(s)
        out = np.where(out == 0, np.exp2(-np.log2(scale) - 0.5 * np.log2(s)), out)
    return np.where(np.any([np.isinf(x) for x in xs], axis=0), 0.0, out)


def _norm(*xs: np.ndarray) -> np.ndarray:
    s = np.zeros(np.shape(xs[0]))
    with np.errstate(all="ignore"):
        scale = np.max(np.abs(np.stack(xs)), axis=0)
        scale = np.where((scale == 0) | ~np.isfinite(scale), 1.0, scale)
        for x in xs:
            s = s + (x / scale) ** 2
        out = scale * np.sqrt(s)
        out = np.where(np.isinf(out), np.exp2(np.log2(scale) + 0.5 * np.log2(s)), out)
    isinf = np.any([np.isinf(x) for x in xs], axis=0)
    return np.where(isinf, np.inf, out)


# ---------------------------------------------------------------- float and double intrinsics

MODES = {"rn": "rn", "rz": "rz", "rd": "rd", "ru": "ru"}


def _intrinsic_rows() -> list[Row]:
    rows = []
    for m in MODES:
        for op, c in (("add", "__fadd"), ("sub", "__fsub"), ("mul", "__fmul"), ("div", "__fdiv")):
            rows.append(
                Row(
                    f"{c}_{m}",
                    f"{c}_{m}",
                    "float",
                    "f:ff",
                    f"o0 = {c}_{m}(a, b);",
                    exact("f:ff", op, m, ftz=True),
                )
            )
            d = c.replace("__f", "__d")
            rows.append(
                Row(f"{d}_{m}", f"{d}_{m}", "double", "d:dd", f"o0 = {d}_{m}(a, b);", exact("d:dd", op, m))
            )
        rows.append(
            Row(
                f"__fmaf_{m}",
                f"__fmaf_{m}",
                "float",
                "f:fff",
                f"o0 = __fmaf_{m}(a, b, c);",
                exact("f:fff", "fma", m, ftz=True),
            )
        )
        rows.append(
            Row(
                f"__fma_{m}",
                f"__fma_{m}",
                "double",
                "d:ddd",
                f"o0 = __fma_{m}(a, b, c);",
                exact("d:ddd", "fma", m),
            )
        )
        rows.append(
            Row(
                f"__frcp_{m}",
                f"__frcp_{m}",
                "float",
                "f:f",
                f"o0 = __frcp_{m}(a);",
                exact("f:f", "rcp", m, ftz=True),
            )
        )
        rows.append(
            Row(f"__drcp_{m}", f"__drcp_{m}", "double", "d:d", f"o0 = __drcp_{m}(a);", exact("d:d", "rcp", m))
        )
        rows.append(
            Row(
                f"__fsqrt_{m}",
                f"__fsqrt_{m}",
                "float",
                "f:f",
                f"o0 = __fsqrt_{m}(a);",
                exact("f:f", "sqrt", m, ftz=True),
            )
        )
        rows.append(
            Row(
                f"__dsqrt_{m}",
                f"__dsqrt_{m}",
                "double",
                "d:d",
                f"o0 = __dsqrt_{m}(a);",
                exact("d:d", "sqrt", m),
            )
        )
    rows += [
        Row("x+y/f", "+", "float", "f:ff", "o0 = a + b;", exact("f:ff", "add", ftz=True)),
        Row("x*y/f", "*", "float", "f:ff", "o0 = a * b;", exact("f:ff", "mul", ftz=True)),
        Row("x/y/f", "/", "float", "f:ff", "o0 = a / b;", exact("f:ff", "div", ftz=True)),
        Row("x/y/d", "/", "double", "d:dd", "o0 = a / b;", exact("d:dd", "div")),
        Row("1/x/f", "1/x", "float", "f:f", "o0 = 1.0f / a;", exact("f:f", "rcp", ftz=True)),
        Row("__frsqrt_rn", "__frsqrt_rn", "float", "f:f", "o0 = __frsqrt_rn(a);", per_element("f:f", _rsqrt_rn)),
        Row("__saturatef", "__saturatef", "float", "f:f", "o0 = __saturatef(a);",
            approx("f:f", lambda x: np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0)) + 0.0, ftz=True)),
        Row("__fdividef", "__fdividef", "float", "f:ff", "o0 = __fdividef(a, b);", approx("f:ff", _fdividef, ftz=True), 2,
            ref_where=lambda a, b: abs(b) >= 2.0**-126),
        # documented: 2 + floor(|1.173 x|) ulps, and 2 + floor(|2.97 x|) ulps
        Row("__expf", "__expf", "float", "f:f", "o0 = __expf(a);", approx("f:f", np.exp, ftz=True), 96,
            dom=("range:-80:80",)),
        Row("__exp10f", "__exp10f", "float", "f:f", "o0 = __exp10f(a);", approx("f:f", lambda x: 10.0**x, ftz=True),
            106, dom=("range:-35:35",)),
        Row("__logf", "__logf", "float", "f:f", "o0 = __logf(a);", approx("f:f", np.log, ftz=True), 3, abs_tol=2**-21.41,
            dom=("pos",)),
        Row("__log2f", "__log2f", "float", "f:f", "o0 = __log2f(a);", approx("f:f", np.log2, ftz=True), 2, abs_tol=2**-22,
            dom=("pos",)),
        Row("__log10f", "__log10f", "float", "f:f", "o0 = __log10f(a);", approx("f:f", np.log10, ftz=True), 3,
            abs_tol=2**-24, dom=("pos",)),
        Row("__sinf", "__sinf", "float", "f:f", "o0 = __sinf(a);", approx("f:f", np.sin, ftz=True), 0,
            abs_tol=2**-21.41, dom=("range:-3.14159:3.14159",)),
        Row("__cosf", "__cosf", "float", "f:f", "o0 = __cosf(a);", approx("f:f", np.cos, ftz=True), 0,
            abs_tol=2**-21.19, dom=("range:-3.14159:3.14159",)),
        Row("__tanf", "__tanf", "float", "f:f", "o0 = __tanf(a);", approx("f:f", np.tan, ftz=True), 8,
            abs_tol=2**-20, dom=("range:-1.2:1.2",)),
        Row("__sincosf", "__sincosf", "float", "ff:f", "__sincosf(a, &o0, &o1);",
            approx("ff:f", lambda x: (np.sin(x), np.cos(x)), ftz=True), 0, abs_tol=2**-21.19, dom=("range:-3.14159:3.14159",)),
        Row("__powf", "__powf", "float", "f:ff", "o0 = __powf(a, b);", approx("f:ff", np.power, ftz=True), 0,
            ref_ulp=64, dom=("range:0.01:20", "range:-8:8"), ulp_at=_powf_ulp),
        Row("__tanhf", "__tanhf", "float", "f:f", "o0 = __tanhf(a);", approx("f:f", np.tanh, ftz=True), 0,
            abs_tol=2**-10.987, dom=("range:-10:10",)),
    ]  # fmt: skip
    return rows


def _ulp32(v: float) -> float:
    """One ulp of a float32 of magnitude |v|."""
    return math.ldexp(1.0, max(math.frexp(abs(v))[1] - 24, -149))


def _powf_ulp(x: float, y: float) -> float:
    """How far __powf(x, y) on the GPU may lie from the emulator's, in ulps of the result.

    The CUDA C++ Programming Guide (Intrinsic Functions, Table 21) gives no number for __powf: its
    error is "derived from its implementation as exp2f(y * __log2f(x))" (lg2.approx, mul, ex2.approx
    in the PTX). __log2f(x) is within 2^-22 (absolute) for x in [0.5, 2], else within 2 ulp (the same
    table); the product rounds once (half an ulp); exp2f is within 2 ulp (the guide's standard
    functions). An error d in the exponent t = y log2(x) is a relative error 2^d - 1 in the result,
    so the bound grows with |y|. The emulator runs the same three steps with lg2 and ex2 correctly
    rounded (half an ulp each), so its own error adds to the GPU's.
    """
    if not (x > 0 and math.isfinite(x) and math.isfinite(y)):
        return 2.5
    lg = math.log2(x)
    t = y * lg
    if abs(t) >= 126:  # near overflow or the flushed range: the domain keeps away from it
        return math.inf
    gpu = abs(y) * (2.0**-22 if 0.5 <= x <= 2 else 2 * _ulp32(lg))
    emu = abs(y) * _ulp32(lg) / 2
    d = gpu + emu + _ulp32(abs(t) + gpu + emu)  # and each side's rounding of the product
    m = 2.0 ** (t - math.floor(t))  # the result's significand, in [1, 2)
    return math.ceil(2.5 + math.expm1(d * math.log(2)) * m * 2.0**23)


def _fdividef(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b, except that for 2^126 < |b| < 2^128 __fdividef gives zero, or NaN for an infinite a
    ("as a result of multiplying infinity by zero": CUDA C++ Programming Guide, Intrinsic Functions;
    libdevice's __nv_fast_fdividef likewise). The zero has the sign of a * b (an H200 gives -0.0)."""
    return np.where(np.abs(b) > 2.0**126, a * np.copysign(0.0, b), a / b)


def _rsqrt_rn(x: float) -> int:
    x = flush(F32, x)
    if math.isnan(x) or x < 0:
        return F32.qnan_bits
    if x == 0:
        return int(to_bits(F32, [math.copysign(math.inf, x)])[0])
    if math.isinf(x):
        return 0
    return exact_op("sqrt", [1.0], F32) if x == 1 else _round_rsqrt(Fraction(x))


def _round_rsqrt(a: Fraction) -> int:
    from .fpref import _round_sqrt

    return _round_sqrt(1 / a, F32, "rn", True)


# ---------------------------------------------------------------- conversions

INT_RANGE = {"i": (-(2**31), 2**31 - 1), "u": (0, 2**32 - 1), "l": (-(2**63), 2**63 - 1), "L": (0, 2**64 - 1),
             "s": (-(2**15), 2**15 - 1), "S": (0, 2**16 - 1), "c": (-128, 127), "C": (0, 255)}  # fmt: skip


def _round_int(q: Fraction, mode: str) -> int:
    n = math.floor(q)
    rem = q - n
    if mode == "rz":
        return math.trunc(q)
    if mode == "rd":
        return n
    if mode == "ru":
        return math.ceil(q)
    return n + (rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1))


def to_int(x: float, letter: str, mode: str, nan: int = 0) -> int:
    """A float converted to an integer type: rounded in `mode`, saturated, NaN -> `nan`."""
    lo, hi = INT_RANGE[letter]
    if math.isnan(x):
        return nan
    if math.isinf(x):
        return hi if x > 0 else lo
    return min(max(_round_int(Fraction(x), mode), lo), hi)


def conv(sig: str, mode: str = "rn", *, ftz: bool = False, nan: int = 0) -> Callable[..., list[np.ndarray]]:
    out_t, in_t = TYPES[sig[0]], TYPES[sig[2]]

    def one(x: Any) -> int:
        if out_t.fmt is None:
            if ftz and in_t.fmt is F32:
                x = flush(F32, x)
            return to_int(x, out_t.letter, mode, nan)
        fmt = out_t.fmt
        if isinstance(x, float):
            if ftz and in_t.fmt is F32:
                x = flush(F32, x)
            if math.isnan(x):
                return fmt.qnan_bits
            if math.isinf(x):
                return fmt.inf_bits | (fmt.sign_bit if x < 0 else 0)
            return round_to(
                Fraction(x), fmt, mode, negative_zero=math.copysign(1, x) < 0, ftz=ftz and fmt is F32
            )
        return round_to(Fraction(x), fmt, mode)

    return per_element(sig, one)


def _conversion_rows() -> list[Row]:
    rows = []
    names = {"i": "int", "u": "uint", "l": "ll", "L": "ull"}
    for m in MODES:
        for L, nm in names.items():
            rows.append(Row(f"__float2{nm}_{m}", f"__float2{nm}_{m}", "conversion", f"{L}:f", f"o0 = __float2{nm}_{m}(a);",
                            conv(f"{L}:f", m, ftz=True, nan=_nan_int(L, "f"))))  # fmt: skip
            rows.append(Row(f"__double2{nm}_{m}", f"__double2{nm}_{m}", "conversion", f"{L}:d", f"o0 = __double2{nm}_{m}(a);",
                            conv(f"{L}:d", m, nan=_nan_int(L, "d"))))  # fmt: skip
            rows.append(Row(f"__{nm}2float_{m}", f"__{nm}2float_{m}", "conversion", f"f:{L}", f"o0 = __{nm}2float_{m}(a);",
                            conv(f"f:{L}", m)))  # fmt: skip
            if L in "lL" or m == "rn":
                rows.append(Row(f"__{nm}2double_{m}", f"__{nm}2double_{m}", "conversion", f"d:{L}",
                                f"o0 = __{nm}2double_{m}(a);", conv(f"d:{L}", m)))  # fmt: skip
        rows.append(Row(f"__double2float_{m}", f"__double2float_{m}", "conversion", "f:d", f"o0 = __double2float_{m}(a);",
                        conv("f:d", m, ftz=True)))  # fmt: skip
    rows += [
        Row("(float)double", "(float)", "conversion", "f:d", "o0 = (float)a;", conv("f:d", "rn", ftz=True)),
        Row("(double)float", "(double)", "conversion", "d:f", "o0 = (double)a;", conv("d:f", "rn", ftz=True)),
        Row("(int)float", "(int)", "conversion", "i:f", "o0 = (int)a;", conv("i:f", "rz")),
        Row("__float_as_int", "__float_as_int", "conversion", "i:f", "o0 = __float_as_int(a);",
            lambda a: [np.asarray(a).view(np.int32)]),
        Row("__int_as_float", "__int_as_float", "conversion", "f:i", "o0 = __int_as_float(a);",
            lambda a: [np.asarray(a).view(np.float32)]),
        Row("__float_as_uint", "__float_as_uint", "conversion", "u:f", "o0 = __float_as_uint(a);",
            lambda a: [np.asarray(a).view(np.uint32)]),
        Row("__uint_as_float", "__uint_as_float", "conversion", "f:u", "o0 = __uint_as_float(a);",
            lambda a: [np.asarray(a).view(np.float32)]),
        Row("__double_as_longlong", "__double_as_longlong", "conversion", "l:d", "o0 = __double_as_longlong(a);",
            lambda a: [np.asarray(a).view(np.int64)]),
        Row("__longlong_as_double", "__longlong_as_double", "conversion", "d:l", "o0 = __longlong_as_double(a);",
            lambda a: [np.asarray(a).view(np.float64)]),
        Row("__double2hiint", "__double2hiint", "conversion", "i:d", "o0 = __double2hiint(a);",
            lambda a: [(np.asarray(a).view(np.int64) >> 32).astype(np.int32)]),
        Row("__double2loint", "__double2loint", "conversion", "i:d", "o0 = __double2loint(a);",
            lambda a: [np.asarray(a).view(np.uint64).astype(np.uint32).view(np.int32)]),
        Row("__hiloint2double", "__hiloint2double", "conversion", "d:ii", "o0 = __hiloint2double(a, b);",
            lambda a, b: [((a.astype(np.int64) << 32) | b.view(np.uint32).astype(np.int64)).view(np.float64)]),
    ]  # fmt: skip
    return rows


def _nan_int(letter: str, src: str) -> int:
    """What a float -> integer conversion gives for NaN on the GPU (an H200, sm_90; PTX leaves it
    unsaid): the sign bit alone, 0x8000000000000000, for a 64-bit destination from any float, and
    0x80000000 for a 32-bit one from a double; 0 from float, half or bfloat16 to 32 bits or fewer."""
    lo, hi = INT_RANGE[letter]
    if letter in "lL" or src == "d":
        return lo if lo < 0 else (hi + 1) // 2
    return 0


# ---------------------------------------------------------------- half and bfloat16


def _maxmin(fmt: Fmt, is_max: bool, nan: bool) -> Callable[[float, float], int]:
    def one(a: float, b: float) -> int:
        if math.isnan(a) or math.isnan(b):
            if nan or (math.isnan(a) and math.isnan(b)):
                return fmt.qnan_bits
            return int(to_bits(fmt, [b if math.isnan(a) else a])[0])
        if a == b == 0:
            neg = (math.copysign(1, a) < 0, math.copysign(1, b) < 0)
            return fmt.sign_bit if (all(neg) if is_max else any(neg)) else 0
        return int(to_bits(fmt, [max(a, b) if is_max else min(a, b)])[0])

    return one


CMP: dict[str, Callable[[float, float], bool]] = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b and not (math.isnan(a) or math.isnan(b)),
    "le": lambda a, b: a <= b, "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "gt": lambda a, b: a > b,
}  # fmt: skip


def _cmp(name: str, unordered: bool) -> Callable[[float, float], bool]:
    f = CMP[name]
    if unordered:
        return lambda a, b: math.isnan(a) or math.isnan(b) or f(a, b)
    return f


def _lanes2(fmt: Fmt, f: Callable[..., int]) -> Callable[..., tuple[int, ...]]:
    """A function of decoded lane values lifted to tuples of lane bits."""

    def g(*xs: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(f(*[decode(fmt, x[k]) for x in xs]) for k in range(2))

    return g


def _bits1(fmt: Fmt, v: float) -> int:
    return int(to_bits(fmt, [v])[0])


HALF_MATH: list[tuple[str, Callable[..., Any], float]] = [
    ("hsqrt", np.sqrt, 1), ("hrsqrt", lambda x: 1 / np.sqrt(x), 1), ("hrcp", lambda x: 1 / x, 1),
    ("hexp", np.exp, 2), ("hexp2", np.exp2, 2), ("hexp10", lambda x: 10.0**x, 2), ("hlog", np.log, 1),
    ("hlog2", np.log2, 1), ("hlog10", np.log10, 1), ("hsin", np.sin, 2), ("hcos", np.cos, 2),
    ("htanh", np.tanh, 1), ("htanh_approx", np.tanh, 2), ("hceil", np.ceil, 0), ("hfloor", np.floor, 0),
    ("hrint", np.rint, 0), ("htrunc", np.trunc, 0),
]  # fmt: skip


def _half_rows(s: str, p: str, fmt: Fmt, fam: str) -> list[Row]:
    """Rows for one 16-bit float type: scalar letter s ('h'/'b'), packed letter p ('H'/'B')."""
    tag = "" if fmt is F16 else "/bf16"
    ptag = "" if fmt is F16 else "/bf162"
    rows: list[Row] = []

    def add(
        id_: str, func: str, family: str, sig: str, body: str, ref: Any, ulp: float = 0, **kw: Any
    ) -> None:
        rows.append(Row(id_, func, family, sig, body, ref, ulp, **kw))

    for op in ("add", "sub", "mul"):
        for suffix, mode_kw in (("", {}), ("_rn", {}), ("_sat", {"sat": True})):
            add(f"__h{op}{suffix}{tag}", f"__h{op}{suffix}", fam, f"{s}:{s}{s}", f"o0 = __h{op}{suffix}(a, b);",
                exact(f"{s}:{s}{s}", op, **mode_kw))  # fmt: skip
            add(f"__h{op}2{suffix}{ptag}", f"__h{op}2{suffix}", fam + "2", f"{p}:{p}{p}", f"o0 = __h{op}2{suffix}(a, b);",
                exact(f"{p}:{p}{p}", op, **mode_kw))  # fmt: skip
    for suffix, kw in (("", {}), ("_sat", {"sat": True}), ("_relu", {"relu": True})):
        add(f"__hfma{suffix}{tag}", f"__hfma{suffix}", fam, f"{s}:{s}{s}{s}", f"o0 = __hfma{suffix}(a, b, c);",
            exact(f"{s}:{s}{s}{s}", "fma", **kw))  # fmt: skip
        add(f"__hfma2{suffix}{ptag}", f"__hfma2{suffix}", fam + "2", f"{p}:{p}{p}{p}", f"o0 = __hfma2{suffix}(a, b, c);",
            exact(f"{p}:{p}{p}{p}", "fma", **kw))  # fmt: skip
    add(f"__hdiv{tag}", "__hdiv", fam, f"{s}:{s}{s}", "o0 = __hdiv(a, b);", exact(f"{s}:{s}{s}", "div"))
    add(
        f"__h2div{ptag}",
        "__h2div",
        fam + "2",
        f"{p}:{p}{p}",
        "o0 = __h2div(a, b);",
        exact(f"{p}:{p}{p}", "div"),
    )
    sign = fmt.sign_bit
    add(f"__hneg{tag}", "__hneg", fam, f"{s}:{s}", "o0 = __hneg(a);", lambda a: [(a ^ sign).astype(a.dtype)])
    add(
        f"__habs{tag}",
        "__habs",
        fam,
        f"{s}:{s}",
        "o0 = __habs(a);",
        lambda a: [(a & (sign - 1)).astype(a.dtype)],
    )
    both = sign | (sign << 16)
    add(
        f"__hneg2{ptag}",
        "__hneg2",
        fam + "2",
        f"{p}:{p}",
        "o0 = __hneg2(a);",
        lambda a: [(a ^ both).astype(a.dtype)],
    )
    add(
        f"__habs2{ptag}",
        "__habs2",
        fam + "2",
        f"{p}:{p}",
        "o0 = __habs2(a);",
        lambda a: [(a & ~np.uint32(both)).astype(a.dtype)],
    )
    for name, is_max in (("max", True), ("min", False)):
        for nan in (False, True):
            sfx = "_nan" if nan else ""
            f = _maxmin(fmt, is_max, nan)
            add(f"__h{name}{sfx}{tag}", f"__h{name}{sfx}", fam, f"{s}:{s}{s}", f"o0 = __h{name}{sfx}(a, b);",
                per_element(f"{s}:{s}{s}", f))  # fmt: skip
            add(f"__h{name}2{sfx}{ptag}", f"__h{name}2{sfx}", fam + "2", f"{p}:{p}{p}", f"o0 = __h{name}2{sfx}(a, b);",
                per_element(f"{p}:{p}{p}", _lanes2(fmt, f)))  # fmt: skip
    one = _bits1(fmt, 1.0)
    for c in CMP:
        for u in ("", "u"):
            f = _cmp(c, bool(u))
            add(f"__h{c}{u}{tag}", f"__h{c}{u}", fam, f"i:{s}{s}", f"o0 = __h{c}{u}(a, b);",
                per_element(f"i:{s}{s}", lambda a, b, f=f: int(f(a, b))))  # fmt: skip
            add(f"__h{c}{u}2{ptag}", f"__h{c}{u}2", fam + "2", f"{p}:{p}{p}", f"o0 = __h{c}{u}2(a, b);",
                per_element(f"{p}:{p}{p}", _lanes2(fmt, lambda a, b, f=f: one if f(a, b) else 0)))  # fmt: skip
            add(f"__hb{c}{u}2{ptag}", f"__hb{c}{u}2", fam + "2", f"i:{p}{p}", f"o0 = __hb{c}{u}2(a, b);",
                per_element(f"i:{p}{p}", lambda a, b, f=f: int(all(f(decode(fmt, x), decode(fmt, y)) for x, y in zip(a, b)))))  # fmt: skip
            add(f"__h{c}{u}2_mask{ptag}", f"__h{c}{u}2_mask", fam + "2", f"u:{p}{p}", f"o0 = __h{c}{u}2_mask(a, b);",
                per_element(f"u:{p}{p}", lambda a, b, f=f: sum(0xFFFF << (16 * k) for k in range(2)
                                                               if f(decode(fmt, a[k]), decode(fmt, b[k])))))  # fmt: skip
    add(
        f"__hisnan{tag}",
        "__hisnan",
        fam,
        f"i:{s}",
        "o0 = __hisnan(a);",
        per_element(f"i:{s}", lambda a: int(math.isnan(a))),
    )
    add(
        f"__hisinf{tag}",
        "__hisinf",
        fam,
        f"i:{s}",
        "o0 = __hisinf(a);",
        per_element(f"i:{s}", lambda a: (1 if a > 0 else -1) if math.isinf(a) else 0),
    )
    add(
        f"__hisnan2{ptag}",
        "__hisnan2",
        fam + "2",
        f"{p}:{p}",
        "o0 = __hisnan2(a);",
        per_element(f"{p}:{p}", _lanes2(fmt, lambda a: one if math.isnan(a) else 0)),
    )
    for name, f, u in HALF_MATH:
        add(f"{name}{tag}", name, fam, f"{s}:{s}", f"o0 = {name}(a);", approx(f"{s}:{s}", f), u)
        add(
            f"h2{name[1:]}{ptag}",
            f"h2{name[1:]}",
            fam + "2",
            f"{p}:{p}",
            f"o0 = h2{name[1:]}(a);",
            approx(f"{p}:{p}", f),
            u,
        )
    # conversions
    cname = "half" if fmt is F16 else "bfloat16"
    for m in MODES:
        add(f"__float2{cname}_{m}", f"__float2{cname}_{m}", "conversion", f"{s}:f", f"o0 = __float2{cname}_{m}(a);",
            conv(f"{s}:f", m))  # fmt: skip
        for L, nm in (
            ("i", "int"),
            ("u", "uint"),
            ("s", "short"),
            ("S", "ushort"),
            ("l", "ll"),
            ("L", "ull"),
        ):
            add(f"__{cname}2{nm}_{m}", f"__{cname}2{nm}_{m}", "conversion", f"{L}:{s}", f"o0 = __{cname}2{nm}_{m}(a);",
                conv(f"{L}:{s}", m, nan=_nan_int(L, s)))  # fmt: skip
            add(f"__{nm}2{cname}_{m}", f"__{nm}2{cname}_{m}", "conversion", f"{s}:{L}", f"o0 = __{nm}2{cname}_{m}(a);",
                conv(f"{s}:{L}", m))  # fmt: skip
    add(
        f"__float2{cname}",
        f"__float2{cname}",
        "conversion",
        f"{s}:f",
        f"o0 = __float2{cname}(a);",
        conv(f"{s}:f", "rn"),
    )
    add(
        f"__{cname}2float",
        f"__{cname}2float",
        "conversion",
        f"f:{s}",
        f"o0 = __{cname}2float(a);",
        conv(f"f:{s}", "rn"),
    )
    add(
        f"__double2{cname}",
        f"__double2{cname}",
        "conversion",
        f"{s}:d",
        f"o0 = __double2{cname}(a);",
        conv(f"{s}:d", "rn"),
    )
    add(
        f"__{cname}2char_rz",
        f"__{cname}2char_rz",
        "conversion",
        f"c:{s}",
        f"o0 = __{cname}2char_rz(a);",
        conv(f"c:{s}", "rz"),
    )
    add(f"__{cname}2uchar_rz", f"__{cname}2uchar_rz", "conversion", f"C:{s}", f"o0 = __{cname}2uchar_rz(a);",
        conv(f"C:{s}", "rz"))  # fmt: skip
    add(f"__{cname}_as_short", f"__{cname}_as_short", "conversion", f"s:{s}", f"o0 = __{cname}_as_short(a);",
        lambda a: [a.view(np.int16)])  # fmt: skip
    add(f"__{cname}_as_ushort", f"__{cname}_as_ushort", "conversion", f"S:{s}", f"o0 = __{cname}_as_ushort(a);",
        lambda a: [a.view(np.uint16)])  # fmt: skip
    add(f"__short_as_{cname}", f"__short_as_{cname}", "conversion", f"{s}:s", f"o0 = __short_as_{cname}(a);",
        lambda a: [a.view(np.uint16)])  # fmt: skip
    add(f"__ushort_as_{cname}", f"__ushort_as_{cname}", "conversion", f"{s}:S", f"o0 = __ushort_as_{cname}(a);",
        lambda a: [a.view(np.uint16)])  # fmt: skip
    # packing
    two = "half2" if fmt is F16 else "bfloat162"
    lo = lambda a: (a & 0xFFFF).astype(np.uint32)  # noqa: E731
    hi = lambda a: (a >> 16).astype(np.uint32)  # noqa: E731
    rn = conv(f"{s}:f", "rn")
    add(f"__floats2{two}_rn", f"__floats2{two}_rn", fam + "2", f"{p}:ff", f"o0 = __floats2{two}_rn(a, b);",
        lambda a, b: [(rn(a)[0].astype(np.uint32) | (rn(b)[0].astype(np.uint32) << 16))])  # fmt: skip
    add(f"__float2{two}_rn", f"__float2{two}_rn", fam + "2", f"{p}:f", f"o0 = __float2{two}_rn(a);",
        lambda a: [(rn(a)[0].astype(np.uint32) * np.uint32(0x10001))])  # fmt: skip
    add(f"__float22{two}_rn", f"__float22{two}_rn", fam + "2", f"{p}:F", f"o0 = __float22{two}_rn(a);",
        lambda a: [(rn((a & 0xFFFFFFFF).astype(np.uint32).view(np.float32))[0].astype(np.uint32)
                    | (rn((a >> 32).astype(np.uint32).view(np.float32))[0].astype(np.uint32) << 16))],
    )  # fmt: skip
    f32 = conv(f"f:{s}", "rn")
    add(f"__{two}2float2", f"__{'half22float2' if fmt is F16 else 'bfloat1622float2'}", fam + "2", f"F:{p}",
        f"float2 v = {'__half22float2' if fmt is F16 else '__bfloat1622float2'}(a); o0 = make_float2(v.x, v.y);",
        lambda a: [(f32(lo(a).astype(np.uint16))[0].view(np.uint32).astype(np.uint64)
                    | (f32(hi(a).astype(np.uint16))[0].view(np.uint32).astype(np.uint64) << np.uint64(32)))])  # fmt: skip
    names = {"halves2": f"__halves2{two}", "low2": f"__low2{cname}", "high2": f"__high2{cname}",
             "low2float": "__low2float", "high2float": "__high2float", "lowhigh": "__lowhigh2highlow",
             "lows": f"__lows2{two}", "highs": f"__highs2{two}", "low22": f"__low2{two}", "high22": f"__high2{two}",
             "dup": f"__{cname}2{two}"}  # fmt: skip
    add(
        names["halves2"] + ptag,
        names["halves2"],
        fam + "2",
        f"{p}:{s}{s}",
        f"o0 = {names['halves2']}(a, b);",
        lambda a, b: [a.astype(np.uint32) | (b.astype(np.uint32) << 16)],
    )
    add(
        names["dup"] + ptag,
        names["dup"],
        fam + "2",
        f"{p}:{s}",
        f"o0 = {names['dup']}(a);",
        lambda a: [a.astype(np.uint32) * np.uint32(0x10001)],
    )
    add(
        names["low2"] + ptag,
        names["low2"],
        fam + "2",
        f"{s}:{p}",
        f"o0 = {names['low2']}(a);",
        lambda a: [lo(a).astype(np.uint16)],
    )
    add(
        names["high2"] + ptag,
        names["high2"],
        fam + "2",
        f"{s}:{p}",
        f"o0 = {names['high2']}(a);",
        lambda a: [hi(a).astype(np.uint16)],
    )
    add(
        "__low2float" + ptag,
        "__low2float",
        fam + "2",
        f"f:{p}",
        "o0 = __low2float(a);",
        lambda a: f32(lo(a).astype(np.uint16)),
    )
    add(
        "__high2float" + ptag,
        "__high2float",
        fam + "2",
        f"f:{p}",
        "o0 = __high2float(a);",
        lambda a: f32(hi(a).astype(np.uint16)),
    )
    add(
        "__lowhigh2highlow" + ptag,
        "__lowhigh2highlow",
        fam + "2",
        f"{p}:{p}",
        "o0 = __lowhigh2highlow(a);",
        lambda a: [hi(a) | (lo(a) << 16)],
    )
    add(
        names["lows"] + ptag,
        names["lows"],
        fam + "2",
        f"{p}:{p}{p}",
        f"o0 = {names['lows']}(a, b);",
        lambda a, b: [lo(a) | (lo(b) << 16)],
    )
    add(
        names["highs"] + ptag,
        names["highs"],
        fam + "2",
        f"{p}:{p}{p}",
        f"o0 = {names['highs']}(a, b);",
        lambda a, b: [hi(a) | (hi(b) << 16)],
    )
    add(
        names["low22"] + ptag,
        names["low22"],
        fam + "2",
        f"{p}:{p}",
        f"o0 = {names['low22']}(a);",
        lambda a: [lo(a) * np.uint32(0x10001)],
    )
    add(
        names["high22"] + ptag,
        names["high22"],
        fam + "2",
        f"{p}:{p}",
        f"o0 = {names['high22']}(a);",
        lambda a: [hi(a) * np.uint32(0x10001)],
    )
    add(
        f"__hcmadd{ptag}",
        "__hcmadd",
        fam + "2",
        f"{p}:{p}{p}{p}",
        "o0 = __hcmadd(a, b, c);",
        per_element(f"{p}:{p}{p}{p}", lambda a, b, c: _cmadd(fmt, a, b, c)),
    )
    return rows


def _cmadd(fmt: Fmt, a: tuple[int, int], b: tuple[int, int], c: tuple[int, int]) -> tuple[int, int]:
    """__hcmadd as cuda_fp16.hpp computes it: two fused steps, each rounded.
    re = fma(-a.y, b.y, fma(a.x, b.x, c.x)); im = fma(a.y, b.x, fma(a.x, b.y, c.y))."""
    ax, ay = (decode(fmt, x) for x in a)
    bx, by = (decode(fmt, x) for x in b)
    cx, cy = (decode(fmt, x) for x in c)
    re1 = decode(fmt, exact_op("fma", [ax, bx, cx], fmt))
    im1 = decode(fmt, exact_op("fma", [ax, by, cy], fmt))
    return exact_op("fma", [-ay, by, re1], fmt), exact_op("fma", [ay, bx, im1], fmt)


# ---------------------------------------------------------------- integer intrinsics


def _s(v: int, bits: int = 32) -> int:
    """Two's complement: the signed value of the low `bits` bits."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _u(v: int, bits: int = 32) -> int:
    return v & ((1 << bits) - 1)


def _brev(v: int, bits: int) -> int:
    return int(f"{_u(v, bits):0{bits}b}"[::-1], 2)


def _clz(v: int, bits: int) -> int:
    return bits - _u(v, bits).bit_length()


def _ffs(v: int, bits: int) -> int:
    v = _u(v, bits)
    return (v & -v).bit_length()


def _byte_perm(x: int, y: int, s: int) -> int:
    b = _u(x).to_bytes(4, "little") + _u(y).to_bytes(4, "little")
    return sum(b[(_u(s) >> (4 * k)) & 7] << (8 * k) for k in range(4))


def _funnel(lo: int, hi: int, sh: int, left: bool, clamp: bool) -> int:
    n = min(_u(sh), 32) if clamp else _u(sh) & 31
    wide = _u(lo) | (_u(hi) << 32)
    return _u((wide << n) >> 32) if left else _u(wide >> n)


def _fns(mask: int, base: int, offset: int) -> int:
    """__fns: the n-th set bit of mask counting from base (up for offset > 0, down for < 0)."""
    mask, base, offset = _u(mask), _u(base), _s(offset)
    if base > 31 and offset != 0:
        return 0xFFFFFFFF
    if offset == 0:
        return base if base <= 31 and (mask >> base) & 1 else 0xFFFFFFFF
    step = 1 if offset > 0 else -1
    need = abs(offset)
    pos = base
    while 0 <= pos <= 31:
        if (mask >> pos) & 1:
            need -= 1
            if need == 0:
                return pos
        pos += step
    return 0xFFFFFFFF


def _dp4a(a: int, b: int, c: int, signed: bool) -> int:
    conv = (lambda v: _s(v, 8)) if signed else (lambda v: _u(v, 8))
    return _u(c + sum(conv(a >> (8 * k)) * conv(b >> (8 * k)) for k in range(4)))


def _dp2a(a: int, b: int, c: int, signed: bool, hi: bool) -> int:
    c16 = (lambda v: _s(v, 16)) if signed else (lambda v: _u(v, 16))
    c8 = (lambda v: _s(v, 8)) if signed else (lambda v: _u(v, 8))
    return _u(c + sum(c16(a >> (16 * k)) * c8(b >> (8 * (k + 2 * hi))) for k in range(2)))


def _simd(
    bits: int, signed: bool, f: Callable[[int, int], int], sat: bool = False
) -> Callable[[int, int], int]:
    """A SIMD-in-a-word intrinsic: f on each `bits`-wide lane of the two words."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)

    def g(a: int, b: int) -> int:
        out = 0
        for k in range(32 // bits):
            x, y = (_s(v >> (bits * k), bits) if signed else _u(v >> (bits * k), bits) for v in (a, b))
            r = f(x, y)
            if sat:
                r = min(max(r, lo), hi)
            out |= _u(r, bits) << (bits * k)
        return out

    return g


def _int_rows() -> list[Row]:
    def R(
        name: str, sig: str, f: Callable[..., int], body: str | None = None, id_: str | None = None, **kw: Any
    ) -> Row:
        args = ", ".join("abc"[: len(sig) - 2])
        return Row(
            id_ or name, name, "integer", sig, body or f"o0 = {name}({args});", per_element(sig, f), **kw
        )

    rows = [
        R("__brev", "u:u", lambda a: _brev(a, 32)), R("__brevll", "L:L", lambda a: _brev(a, 64)),
        R("__byte_perm", "u:uuu", _byte_perm), R("__clz", "i:i", lambda a: _clz(a, 32)),
        R("__clzll", "i:l", lambda a: _clz(a, 64)), R("__ffs", "i:i", lambda a: _ffs(a, 32)),
        R("__ffsll", "i:l", lambda a: _ffs(a, 64)), R("__popc", "i:u", lambda a: bin(_u(a)).count("1")),
        R("__popcll", "i:L", lambda a: bin(_u(a, 64)).count("1")),
        R("__fns", "u:uui", _fns, dom=("", "range:0:31", "range:-40:40")),  # base > 31 is undefined
        R("__funnelshift_l", "u:uuu", lambda a, b, c: _funnel(a, b, c, True, False)),
        R("__funnelshift_lc", "u:uuu", lambda a, b, c: _funnel(a, b, c, True, True)),
        R("__funnelshift_r", "u:uuu", lambda a, b, c: _funnel(a, b, c, False, False)),
        R("__funnelshift_rc", "u:uuu", lambda a, b, c: _funnel(a, b, c, False, True)),
        R("__hadd", "i:ii", lambda a, b: (a + b) >> 1, id_="__hadd/int"), R("__rhadd", "i:ii", lambda a, b: (a + b + 1) >> 1),
        R("__uhadd", "u:uu", lambda a, b: (a + b) >> 1), R("__urhadd", "u:uu", lambda a, b: (a + b + 1) >> 1),
        R("__mul24", "i:ii", lambda a, b: _s(_s(a, 24) * _s(b, 24))),
        R("__umul24", "u:uu", lambda a, b: _u(_u(a, 24) * _u(b, 24))),
        R("__mulhi", "i:ii", lambda a, b: (a * b) >> 32), R("__umulhi", "u:uu", lambda a, b: (a * b) >> 32),
        R("__mul64hi", "l:ll", lambda a, b: (a * b) >> 64), R("__umul64hi", "L:LL", lambda a, b: (a * b) >> 64),
        R("__sad", "u:iiu", lambda a, b, c: _u(c + abs(a - b))), R("__usad", "u:uuu", lambda a, b, c: _u(c + abs(a - b))),
        R("__dp4a", "i:iii", lambda a, b, c: _dp4a(a, b, c, True), id_="__dp4a/int"),
        R("__dp4a", "u:uuu", lambda a, b, c: _dp4a(a, b, c, False), id_="__dp4a/unsigned"),
        R("__dp2a_lo", "i:iii", lambda a, b, c: _dp2a(a, b, c, True, False), id_="__dp2a_lo/int"),
        R("__dp2a_hi", "u:uuu", lambda a, b, c: _dp2a(a, b, c, False, True), id_="__dp2a_hi/unsigned"),
        R("abs", "i:i", lambda a: abs(a), id_="abs/int"), R("llabs", "l:l", lambda a: abs(a)),
        R("min", "i:ii", min, id_="min/int"), R("max", "i:ii", max, id_="max/int"),
        R("umin", "u:uu", min), R("umax", "u:uu", max), R("llmin", "l:ll", min), R("llmax", "l:ll", max),
        R("ullmin", "L:LL", min), R("ullmax", "L:LL", max),
        R("__vimax3_s32", "i:iii", lambda a, b, c: max(a, b, c)), R("__vimin3_u32", "u:uuu", lambda a, b, c: min(a, b, c)),
        R("__viaddmax_s32", "i:iii", lambda a, b, c: max(_s(a + b), c)),
        R("__viaddmin_u32", "u:uuu", lambda a, b, c: min(_u(a + b), c)),
        R("__vimax_s32_relu", "i:ii", lambda a, b: max(a, b, 0)),
        R("__vimax3_s16x2_relu", "u:uuu", lambda a, b, c: _simd(16, True, lambda x, y: max(x, y, 0))(
            _simd(16, True, max)(a, b), c)),
        R("__vibmax_s32", "ii:ii", lambda a, b: (max(a, b), int(a >= b)), body="bool p; o0 = __vibmax_s32(a, b, &p); o1 = p;"),
        R("__vabs2", "u:u", lambda a: _simd(16, True, lambda x, y: abs(x))(a, 0)),
        R("__vabsss4", "u:u", lambda a: _simd(8, True, lambda x, y: abs(x), sat=True)(a, 0)),
        R("__vneg4", "u:u", lambda a: _simd(8, True, lambda x, y: -x)(a, 0)),
    ]  # fmt: skip
    simd = [
        ("__vadd2", 16, True, lambda x, y: x + y, False), ("__vadd4", 8, True, lambda x, y: x + y, False),
        ("__vsub2", 16, True, lambda x, y: x - y, False), ("__vsub4", 8, True, lambda x, y: x - y, False),
        ("__vaddss2", 16, True, lambda x, y: x + y, True), ("__vaddus4", 8, False, lambda x, y: x + y, True),
        ("__vsubss4", 8, True, lambda x, y: x - y, True), ("__vsubus2", 16, False, lambda x, y: x - y, True),
        ("__vabsdiffs2", 16, True, lambda x, y: abs(x - y), False), ("__vabsdiffu4", 8, False, lambda x, y: abs(x - y), False),
        ("__vavgs2", 16, True, lambda x, y: _c_avg(x, y), False), ("__vavgu4", 8, False, lambda x, y: (x + y + 1) >> 1, False),
        ("__vhaddu2", 16, False, lambda x, y: (x + y) >> 1, False),
        ("__vcmpeq4", 8, False, lambda x, y: -(x == y), False), ("__vcmpgts2", 16, True, lambda x, y: -(x > y), False),
        ("__vcmpltu4", 8, False, lambda x, y: -(x < y), False), ("__vcmpgeu2", 16, False, lambda x, y: -(x >= y), False),
        ("__vmaxs2", 16, True, max, False), ("__vminu4", 8, False, min, False), ("__vmaxu2", 16, False, max, False),
        ("__vmins4", 8, True, min, False), ("__vsetgtu4", 8, False, lambda x, y: int(x > y), False),
        ("__vseteq2", 16, False, lambda x, y: int(x == y), False),
    ]  # fmt: skip
    for name, bits, signed, f, sat in simd:
        rows.append(R(name, "u:uu", _simd(bits, signed, f, sat)))
    rows += [
        R(
            "__vsads2",
            "u:uu",
            lambda a, b: sum(abs(_s(a >> (16 * k), 16) - _s(b >> (16 * k), 16)) for k in range(2)),
        ),
        R(
            "__vsadu4",
            "u:uu",
            lambda a, b: sum(abs(_u(a >> (8 * k), 8) - _u(b >> (8 * k), 8)) for k in range(4)),
        ),
    ]
    return rows


def _c_avg(x: int, y: int) -> int:
    """__vavgs2: (a + b) / 2 rounded away from zero? The CUDA docs: 'signed rounded average'."""
    s = x + y
    return (s + (1 if s >= 0 else 0)) >> 1 if s >= 0 else -((-s + 1) >> 1)


# ---------------------------------------------------------------- the table


def all_rows() -> list[Row]:
    rows = _float_math_rows() + _intrinsic_rows() + _conversion_rows()
    rows += _half_rows("h", "H", F16, "half") + _half_rows("b", "B", BF16, "bfloat16") + _int_rows()
    ids = [r.id for r in rows]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"duplicate row ids {sorted(dup)}"
    return rows


ROWS = all_rows()
