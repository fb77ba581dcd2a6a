"""Floating point (PTX ISA, "Floating-Point Instructions"), with all of its rounding in one place.

float32 and float64 results come from NumPy, then the PTX modifiers: the rounding modes .rn, .rz,
.rm, .rp round the *exact* value (a float64 pair hi + err from error-free transformations, exact
fractions where those fail), .ftz flushes subnormal inputs and results the way the GPU does, .sat
clamps to [0, 1]. float32 fma rounds once. Conversions and 16-bit floats round with the same code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import UnsupportedInstruction
from ..ptx import Instr
from .contract import Builder, Op
from .operands import UINT, arr, builds, dtype, itype, reader, simple, writer

# ---------------------------------------------------------------- the instructions


def float_arith(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Floating-Point Instructions: add, sub, mul, div, fma, mad, min, max on f32 and f64.
    div.approx (__fdividef) flushes to zero for divisors above 2^126, as the GPU's a * (1/b) does;
    min/max return the number when one side is NaN (.NaN: the NaN)."""
    op = instr.parts[0]
    f: Callable[..., Any]
    if op in ("add", "sub", "mul", "div"):
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
        ex = {"add": exact_add, "sub": exact_sub, "mul": exact_mul, "div": _exact_div}[op]
        if op == "div" and "approx" in instr.parts:
            f, ex = _div_approx(f), _div_approx_exact
        return float_op(instr, ctx, f, ex)
    if op in ("fma", "mad"):
        return float_op(instr, ctx, _fma, exact_fma)
    if op in ("min", "max"):
        nan = "NaN" in instr.parts  # .NaN propagates NaNs; the default returns the other operand
        f = {(0, 0): np.fmax, (0, 1): np.maximum, (1, 0): np.fmin, (1, 1): np.minimum}[(op == "min", nan)]
        return float_op(instr, ctx, _signed_zeros_ordered(f, op))
    raise UnsupportedInstruction(f"{instr.opcode} on floats")


def _signed_zeros_ordered(f: Callable[..., Any], op: str) -> Callable[..., Any]:
    """min/max with -0 below +0, whichever operand comes first, as a GPU orders them
    (tests/emulator/ptx_truth.json: min(-0, +0) and min(+0, -0) are -0, max of them +0)."""

    def g(a: Any, b: Any) -> Any:
        a, b = arr(a), arr(b)
        r = arr(f(a, b))
        zeros = (a == 0) & (b == 0)
        if not zeros.any():
            return r
        neg = (np.signbit(a) | np.signbit(b)) if op == "min" else (np.signbit(a) & np.signbit(b))
        return np.where(zeros, np.where(neg, -r.dtype.type(0), r.dtype.type(0)), r).astype(r.dtype)

    return g


def float_unary(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Floating-Point Instructions: abs, neg, sqrt, rsqrt, rcp, sin, cos, lg2, ex2, tanh.
    sqrt and rcp round correctly in every mode; the .approx ones (and sin ... tanh, rsqrt, which
    are approximations on the GPU) are computed in float64 and rounded once."""
    op = instr.parts[0]
    fns: dict[str, Callable[..., Any]] = {
        "abs": np.abs, "neg": np.negative, "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a),
        "rcp": lambda a: np.divide(1, a), "sin": np.sin, "cos": np.cos, "lg2": np.log2, "ex2": np.exp2,
        "tanh": np.tanh,
    }  # fmt: skip
    if op not in fns:
        raise UnsupportedInstruction(instr.opcode)
    f: Callable[..., Any] = fns[op]
    if op in ("sin", "cos", "lg2", "ex2", "tanh", "rsqrt") or "approx" in instr.parts:
        g = f  # approximate on the GPU: computed in double here, then rounded
        f = lambda a: g(arr(a).astype(np.float64))  # noqa: E731
    exact = {"sqrt": _exact_sqrt, "rcp": _exact_rcp}.get(op) if "approx" not in instr.parts else None
    return float_op(instr, ctx, f, exact)


@builds("copysign")
def _copysign(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Floating-Point Instructions: copysign (d = |b| with the sign of a: a is the sign)."""
    return simple(instr, ctx, lambda a, b: np.copysign(b, a))


@builds("testp")
def _testp(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Floating-Point Instructions: testp (.finite, .infinite, .number, .notanumber,
    .normal, .subnormal)."""
    dt = dtype(itype(instr))
    tiny = np.finfo(dt).tiny
    fns: dict[str, Callable[..., Any]] = {
        "finite": np.isfinite, "infinite": np.isinf, "number": lambda a: ~np.isnan(a), "notanumber": np.isnan,
        "normal": lambda a: np.isfinite(a) & ((np.abs(a) >= tiny) | (a == 0)),  # a GPU calls ±0 normal
        "subnormal": lambda a: (np.abs(a) < tiny) & (a != 0),
    }  # fmt: skip
    f = fns[instr.parts[1]]
    dst, src = instr.operands
    w, r = writer(ctx, dst), reader(ctx, src, dt)
    return Op(instr, lambda m, idx: w(m, idx, f(arr(r(m, idx)))))


def float_op(
    instr: Instr,
    ctx: Builder,
    fn: Callable[..., Any],
    exact: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None,
) -> Op:
    """PTX ISA, Floating-Point Instructions: the rounding modifiers, .ftz and .sat, in one place.

    `exact` gives the result as a float64 pair hi + err that is exact (or exact in sign of
    err), so that .rz/.rm/.rp and float32 fma round the true value, not a rounded one.
    """
    dt = dtype(itype(instr))
    mode = rounding_mode(instr)
    ftz = "ftz" in instr.parts
    sat = "sat" in instr.parts
    directed = exact is not None and (mode != "rn" or (instr.parts[0] in ("fma", "mad") and dt == np.float32))

    flush32 = ftz and dt == np.float32
    # Where a float32 .ftz sum, difference or product could flush, float64 holds it exactly, so
    # round-to-nearest needs no exact pair (the common add.ftz.f32 of fast-math code stays cheap).
    # A sum of normal floats below 2**-126 is exact: for add and sub the rounded result decides
    # (with .sat, which clamps first, the exact value's sign picks the zero, as before).
    op = instr.parts[0]
    exact_path = directed or (flush32 and exact is not None and op not in ("add", "sub", "mul"))
    sum_only = op in ("add", "sub") and not sat

    def f(*xs: Any) -> Any:
        hi = None
        if ftz:
            xs = tuple(flush_subnormal(x) for x in xs)
        if exact_path:
            assert exact is not None
            x64 = [arr(x).astype(np.float64) for x in xs]
            hi, err = exact(*x64)
            r = round_exact(hi, err, mode, dt)
            if "approx" not in instr.parts:  # (div.approx's a * (1/b) is not the rounded quotient)
                r = _exact_where_risky(op, x64, hi, r, mode, dt)
            if mode == "rm" and op in _ADDENDS:
                x, y = _ADDENDS[op](*x64)
                exact_zero = (hi == 0) & (err == 0)
                if op in ("fma", "mad"):  # not a product lost to underflow (redone exactly above)
                    exact_zero &= ~((x64[0] != 0) & (x64[1] != 0) & (x == 0))
                r = _exact_zero_rounded_down(r, exact_zero, x, y)
        else:
            r = arr(fn(*xs)).astype(dt, copy=False)
            if flush32 and not sum_only:
                hi = arr(fn(*[arr(x).astype(np.float64) for x in xs]))
        if flush32:
            r = (
                flush_subnormal(r)
                if hi is None
                else np.where(flushes(hi), np.copysign(np.float32(0), hi), flush_subnormal(r))
            )
            r = r.astype(dt, copy=False)
        if sat:  # after the flush: NaN -> 0, and -0 + 0 is +0 as on the GPU
            r = (np.where(np.isnan(r), dt.type(0), np.clip(r, 0, 1)) + dt.type(0)).astype(dt)
        return r

    return simple(instr, ctx, f)


# the two addends of an exact sum: a + b, a - b, a * b + c (a product's zero carries the xor of signs)
_ADDENDS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "add": lambda a, b: (a, b),
    "sub": lambda a, b: (a, -b),
    "fma": lambda a, b, c: (a * b, c),
    "mad": lambda a, b, c: (a * b, c),
}


def _exact_zero_rounded_down(r: Any, exact_zero: np.ndarray, x: np.ndarray, y: np.ndarray) -> Any:
    """IEEE 754 rounding toward -inf: a sum that is exactly zero is -0, unless both addends are +0
    (the float64 pair, added in round-to-nearest, says +0)."""
    zero = exact_zero & ~((x == 0) & (y == 0) & ~np.signbit(x) & ~np.signbit(y))
    if not zero.any():
        return r
    return np.where(zero, -np.asarray(r).dtype.type(0), r).astype(np.asarray(r).dtype)


FLT_MIN = np.float32(1.1754944e-38)  # the smallest normal float32, 2**-126


def flush_subnormal(x: Any) -> Any:
    """.ftz on a float32 input or result: a subnormal becomes a zero of its sign."""
    x = arr(x)
    if x.dtype == np.float32:
        return np.where(np.abs(x) < FLT_MIN, np.copysign(np.float32(0), x), x)
    return x


def flushes(exact: np.ndarray) -> np.ndarray:
    """Where an .ftz result becomes zero: the GPU rounds to 24 bits as if the exponent had no
    lower limit and flushes what is then below 2**-126 (it never rounds up onto 2**-126 from
    the subnormal grid, as float32 rounding would)."""
    m, e = np.frexp(np.asarray(exact, np.float64))
    rounded = np.ldexp(np.round(m * 2.0**24) / 2.0**24, e)
    return np.isfinite(rounded) & (rounded != 0) & (np.abs(rounded) < float(FLT_MIN))


def rounding_mode(instr: Instr) -> str:
    for m in ("rn", "rz", "rm", "rp"):
        if m in instr.parts:
            return m
    return "rn"


# div.approx{.ftz}.f32 (__fdividef) is a * (1/b): for 2^126 < |b| < 2^128 the reciprocal is below
# the smallest normal and flushes, so the quotient is a zero with the sign of a*b, or NaN where a is
# infinite. The CUDA C++ Programming Guide ("Intrinsic Functions"): "for 2^126 < |y| < 2^128,
# __fdividef(x,y) delivers a result of zero ... if x is infinity, __fdividef(x,y) delivers a NaN (as
# a result of multiplying infinity by zero)"; libdevice's __nv_fast_fdividef says the same, and an
# H200 gives -0.0 for __fdividef(-a, 2^127). Elsewhere the correctly rounded quotient stands in (the
# documented bound is 2 ulp for |b| in [2^-126, 2^126]). div.full.f32 scales its operands to keep its
# 2 ulp bound "across the full range of inputs" (PTX ISA), so it has no such range: plain quotient.
_DIV_APPROX_FLUSH = 2.0**126


def _div_approx(f: Callable[..., Any]) -> Callable[..., Any]:
    def g(a: Any, b: Any) -> Any:
        a, b = arr(a), arr(b)
        q = arr(f(a, b))
        return np.where(np.abs(b) > _DIV_APPROX_FLUSH, a * np.copysign(q.dtype.type(0), b), q).astype(q.dtype)

    return g


def _div_approx_exact(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hi, err = _exact_div(a, b)
    flushed = np.abs(b) > _DIV_APPROX_FLUSH
    return np.where(flushed, a * np.copysign(0.0, b), hi), np.where(flushed, 0.0, err)


def _fma(a: Any, b: Any, c: Any) -> Any:
    a, b, c = arr(a), arr(b), arr(c)
    if a.dtype == np.float32:  # exact product in float64, one rounding of the sum (double rounding is rare)
        return (a.astype(np.float64) * b + c).astype(np.float32)
    return _fma64(a, b, c)


# ---------------------------------------------------------------- exact values as float64 pairs hi + err


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s, t with s = fl(a + b) and s + t == a + b exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p, e with p = fl(a * b) and p + e == a * b exactly (Dekker's split)."""
    p = a * b
    split = 134217729.0  # 2**27 + 1 cuts a double into two 26-bit halves
    ah = a * split
    ah = ah - (ah - a)
    bh = b * split
    bh = bh - (bh - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def exact_add(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return two_sum(a, b)


def exact_sub(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return two_sum(a, -b)


def exact_mul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p, e = two_prod(a, b)
    lost = (p == 0) & (a != 0) & (b != 0)  # underflow: only the sign of the lost product is left
    tiny = np.finfo(np.float64).smallest_subnormal
    return p, np.where(lost, np.sign(a) * np.sign(b) * tiny, e)


def exact_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p, e = two_prod(a, b)
    s, t = two_sum(p, c)
    rest, rest_err = two_sum(t, e)
    hi, lo = two_sum(s, rest)  # renormalised: hi is the nearest double to the exact value
    lo = lo + rest_err
    keep = ~np.isfinite(s) | (rest == 0)  # infinities, and the sign of an exact zero (-0 + -0)
    hi, lo = np.where(keep, s, hi), np.where(keep, 0.0, lo)
    # Dekker's split overflows for huge factors: IEEE's own answer for infinities, NaNs and zeros
    # (a finite product plus an infinite c is c; finite huge cases are redone exactly later)
    bad = ~np.isfinite(hi) | ~np.isfinite(lo)
    if bad.any():
        with np.errstate(all="ignore"):
            special = a * b + c
        special = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, special)
        hi, lo = np.where(bad, special, hi), np.where(bad, 0.0, lo)
    return hi, lo


def _exact_div(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = a / b
    return q, _fma64(-q, b, a) / b  # the remainder says which side of q the quotient lies


def _exact_sqrt(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = np.sqrt(a)
    return q, _fma64(-q, q, a) / (2 * q)


def _exact_rcp(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _exact_div(np.ones_like(a), a)


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a*b + c with one rounding: error-free transformations, exact fractions where they fail."""
    a, b, c = np.broadcast_arrays(
        np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64)
    )
    p, e = two_prod(a, b)
    r, t = two_sum(p, c)
    rest, rest_err = two_sum(t, e)
    fused = r + rest  # one rounding of the exact value, unless t + e itself was rounded
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    # Dekker's split is exact only away from underflow and overflow; zeros need their IEEE sign
    big = 2.0**990
    risky = finite & (
        (np.abs(p) < 2.0**-960) | (np.abs(p) > big) | (np.abs(a) > big) | (np.abs(b) > big)
        | (np.abs(c) > big) | (fused == 0) | ~np.isfinite(fused) | (rest_err != 0)
    )  # fmt: skip
    with np.errstate(all="ignore"):
        special = a * b + c
    # a finite product that overflows float64 plus an infinite c is c (the product is exact)
    special = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, special)
    out = np.where(finite, fused, special)
    for k in zip(*np.nonzero(risky)):
        out[k] = _fma_exact(float(a[k]), float(b[k]), float(c[k]))
    return out


def _fma_exact(a: float, b: float, c: float) -> float:
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # IEEE: -0 only when both the product and c are negative zeros or of that sign
        return -0.0 if math.copysign(1, a) * math.copysign(1, b) < 0 and math.copysign(1, c) < 0 else 0.0
    try:
        return float(exact)  # correctly rounded, subnormals included
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


# ---------------------------------------------------------------- one rounding of an exact value


def round_exact(hi: np.ndarray, err: Any, mode: str, dt: np.dtype) -> np.ndarray:
    """Round the exact value hi + err (float64 pair) to `dt` in rounding mode `mode`."""
    hi = np.asarray(hi, np.float64)
    finite = np.isfinite(hi)  # infinities and NaNs round to themselves
    err = np.where(finite & np.isfinite(err), err, 0.0)
    r = hi.astype(dt)
    d = np.where(finite, (r.astype(np.float64) - hi) - err, 0.0)  # the sign of (r - exact)
    exact_sign = np.where(hi != 0, np.sign(hi), np.sign(err))
    if mode == "rn":  # hi itself may be a tie that err, however small, breaks
        other = np.nextafter(r, np.where(r.astype(np.float64) > hi, dt.type(-np.inf), dt.type(np.inf)))
        dr = r.astype(np.float64) - hi  # both exact: r and other are hi's neighbours
        do = other.astype(np.float64) - hi
        tie = np.isfinite(dr) & np.isfinite(do) & (dr == -do) & (dr != 0)
        return np.where(tie & (err != 0) & (np.sign(err) == np.sign(do)), other, r)
    if mode == "rm":
        step = d > 0
        toward = dt.type(-np.inf)
    elif mode == "rp":
        step = d < 0
        toward = dt.type(np.inf)
    else:  # rz
        step = d * exact_sign > 0
        toward = dt.type(0)
    return np.where(step & finite, np.nextafter(r, toward), r)


# the exact value of an operation, in fractions (before the one rounding of a directed mode)
_EXACT: dict[str, Any] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "rcp": lambda a: 1 / a,
    "fma": lambda a, b, c: a * b + c, "mad": lambda a, b, c: a * b + c,
}  # fmt: skip


def _exact_where_risky(op: str, xs: list[np.ndarray], hi: np.ndarray, r: Any, mode: str, dt: np.dtype) -> Any:
    """Redo with exact fractions the elements where the float64 error terms cannot be trusted:
    near overflow (the pair overflows or Dekker's split does) and near underflow (the error term
    itself underflows, so the rounding direction is lost)."""
    if op not in ("add", "sub", "mul", "div", "fma", "mad", "rcp", "sqrt"):
        return r
    xs = list(np.broadcast_arrays(*xs))
    finite = np.logical_and.reduce([np.isfinite(x) for x in xs])
    big = np.logical_or.reduce([np.abs(x) > 2.0**990 for x in xs])
    small = np.logical_or.reduce([(np.abs(x) < 2.0**-960) & (x != 0) for x in xs])
    with np.errstate(all="ignore"):
        risky = finite & (big | small | ~np.isfinite(hi) | ((np.abs(hi) < 2.0**-960) & (hi != 0)))
    if op in ("mul", "fma", "mad"):  # a product too small for its error term to survive
        with np.errstate(all="ignore"):
            risky |= finite & (np.abs(xs[0] * xs[1]) < 2.0**-960) & (xs[0] != 0) & (xs[1] != 0)
    if op == "div":  # a quotient that underflows to zero: its direction decides rm and rp
        risky |= finite & (hi == 0) & (xs[0] != 0)
    if op in ("div", "rcp"):
        risky &= xs[-1] != 0
    if op in ("mul", "div", "rcp", "sqrt"):
        risky &= np.logical_and.reduce([x != 0 for x in xs])
    if op == "sqrt":
        risky &= xs[0] > 0
    if not risky.any():
        return r
    out = np.array(r, dtype=dt, copy=True)
    flat_out = out.reshape(-1)
    cols = [np.broadcast_to(x, risky.shape).reshape(-1) for x in xs]
    for k in np.flatnonzero(risky.reshape(-1)):
        f = [Fraction(float(c[k])) for c in cols]
        if op == "sqrt":
            flat_out[k] = _round_sqrt_fraction(f[0], mode, dt)
            continue
        q = _EXACT[op](*f)
        if q != 0:
            flat_out[k] = _round_fraction(q, mode, dt)
    return out


def _bracket(q: Fraction, dt: np.dtype) -> tuple[Any, Any]:
    """The neighbours lo <= q <= hi of q in the format dt (hi may be infinite)."""
    try:
        c = dt.type(float(q))
    except OverflowError:
        c = dt.type(np.inf if q > 0 else -np.inf)
    if np.isinf(c):
        big = np.finfo(dt).max
        return (dt.type(big), c) if q > 0 else (c, dt.type(-big))
    if Fraction(float(c)) == q:
        return c, c
    if Fraction(float(c)) < q:
        return c, np.nextafter(c, dt.type(np.inf))
    return np.nextafter(c, dt.type(-np.inf)), c


def _round_fraction(q: Fraction, mode: str, dt: np.dtype) -> Any:
    lo, hi = _bracket(q, dt)
    if lo == hi:
        return lo
    if mode == "rz":
        return lo if q > 0 else hi
    if mode == "rm":
        return lo
    if mode == "rp":
        return hi
    if np.isinf(hi) or np.isinf(lo):  # past the largest finite value: the overflow threshold decides
        big = Fraction(float(np.finfo(dt).max))
        half_ulp = Fraction(2) ** (np.finfo(dt).maxexp - np.finfo(dt).nmant - 2)
        return (hi if q > 0 else lo) if abs(q) >= big + half_ulp else (lo if q > 0 else hi)
    dlo, dhi = q - Fraction(float(lo)), Fraction(float(hi)) - q
    if dlo != dhi:
        return lo if dlo < dhi else hi
    even = (np.asarray(lo).view(UINT[dt.itemsize]) & 1) == 0
    return lo if even else hi


def _round_sqrt_fraction(a: Fraction, mode: str, dt: np.dtype) -> Any:
    c = dt.type(math.sqrt(float(a)))
    lo = c if Fraction(float(c)) ** 2 <= a else np.nextafter(c, dt.type(0))
    hi = lo if Fraction(float(lo)) ** 2 == a else np.nextafter(lo, dt.type(np.inf))
    if lo == hi or mode in ("rz", "rm"):
        return lo
    if mode == "rp":
        return hi
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    return lo if mid * mid > a else hi
