"""Exact IEEE reference arithmetic for the device-API table, written without the emulator's code.

Values are exact `Fraction`s; `round_to` rounds one to a binary format in a PTX rounding mode
(rn: nearest-even, rz, rd: toward -inf, ru: toward +inf), with or without flush-to-zero, and
returns the result's bits. Slow (pure Python, one element at a time) but obviously right: the
point of a reference is to be independent of what it checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Fmt:
    name: str
    bits: int  # total width
    p: int  # significand bits, the hidden one included
    emin: int  # exponent of the smallest normal number
    emax: int
    dtype: Any  # NumPy storage of the bits

    @property
    def ebits(self) -> int:
        return self.bits - self.p

    @property
    def bias(self) -> int:
        return self.emax

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def inf_bits(self) -> int:
        return ((1 << self.ebits) - 1) << (self.p - 1)

    @property
    def qnan_bits(self) -> int:
        return self.inf_bits | (1 << (self.p - 2))

    @property
    def max_bits(self) -> int:
        return self.inf_bits - 1


F16 = Fmt("f16", 16, 11, -14, 15, np.uint16)
BF16 = Fmt("bf16", 16, 8, -126, 127, np.uint16)
F32 = Fmt("f32", 32, 24, -126, 127, np.uint32)
F64 = Fmt("f64", 64, 53, -1022, 1023, np.uint64)
FORMATS = {f.name: f for f in (F16, BF16, F32, F64)}


def decode(fmt: Fmt, bits: int) -> float:
    """The value of `bits` as a Python float (every format here fits in a double exactly)."""
    sign = -1.0 if bits & fmt.sign_bit else 1.0
    e = (bits >> (fmt.p - 1)) & ((1 << fmt.ebits) - 1)
    m = bits & ((1 << (fmt.p - 1)) - 1)
    if e == (1 << fmt.ebits) - 1:
        return sign * math.inf if m == 0 else math.nan
    if e == 0:
        return sign * math.ldexp(m, fmt.emin - fmt.p + 1)
    return sign * math.ldexp(m | (1 << (fmt.p - 1)), e - fmt.bias - fmt.p + 1)


def is_nan(fmt: Fmt, bits: int) -> bool:
    return (bits & fmt.inf_bits) == fmt.inf_bits and bits & ((1 << (fmt.p - 1)) - 1) != 0


def round_to(
    q: Fraction, fmt: Fmt, mode: str = "rn", *, negative_zero: bool = False, ftz: bool = False
) -> int:
    """The bits of exact value q rounded to `fmt`. A zero q is -0 if `negative_zero`.

    ftz: round with an unbounded exponent, then flush what is below the smallest normal to a
    zero of q's sign (what the GPU's .ftz does: it never rounds up from the subnormal grid).
    """
    if q == 0:
        return fmt.sign_bit if negative_zero else 0
    neg = q < 0
    a = -q if neg else q
    sign = fmt.sign_bit if neg else 0
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1  # now 2**e <= a < 2**(e+1)
    if not ftz:
        e = max(e, fmt.emin)
    qe = e - (fmt.p - 1)  # the exponent of one unit in the last place
    scaled = a / Fraction(2) ** qe
    n = scaled.numerator // scaled.denominator
    rem = scaled - n
    up = False
    if rem:
        if mode == "rn":
            up = rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1)
        elif mode == "ru":
            up = not neg
        elif mode == "rd":
            up = neg
    n += up
    if n == 1 << fmt.p:
        n >>= 1
        qe += 1
    if ftz and qe + fmt.p - 1 < fmt.emin:
        return sign
    top = qe + fmt.p - 1  # exponent of the result's leading bit (when normal)
    if top > fmt.emax:
        toward_zero = mode == "rz" or (mode == "ru" and neg) or (mode == "rd" and not neg)
        return sign | (fmt.max_bits if toward_zero else fmt.inf_bits)
    if n < 1 << (fmt.p - 1):  # subnormal (qe is then emin - p + 1)
        return sign | n
    return sign | ((top + fmt.bias) << (fmt.p - 1)) | (n - (1 << (fmt.p - 1)))


def to_bits(fmt: Fmt, values: Any) -> np.ndarray:
    """Python floats (or float64 array) -> bits, rounding to nearest (NumPy's casts are correctly
    rounded; bfloat16 rounds to odd at float32 first, which makes the second rounding exact)."""
    v = np.asarray(values, np.float64).reshape(-1)
    with np.errstate(all="ignore"):
        if fmt is F64:
            return v.view(np.uint64).copy()
        if fmt is F32:
            return v.astype(np.float32).view(np.uint32)
        if fmt is F16:
            return v.astype(np.float16).view(np.uint16)
        r = v.astype(np.float32)
        over = np.isfinite(v) & (np.abs(r.astype(np.float64)) > np.abs(v))
        r = np.where(over, np.nextafter(r, np.float32(0)), r)
        odd = np.isfinite(v) & (r.astype(np.float64) != v)
        u = r.view(np.uint32) | odd.astype(np.uint32)
        top, low = u >> 16, u & 0xFFFF
        up = (low > 0x8000) | ((low == 0x8000) & (top & 1 == 1))
        out = (top + up).astype(np.uint16)
        return np.where(np.isnan(v), np.uint16(fmt.qnan_bits), out).astype(np.uint16)


def to_bits_exact(fmt: Fmt, values: Any) -> np.ndarray:
    """to_bits through exact fractions (slow; checks the fast one)."""
    out = []
    for v in np.asarray(values, np.float64).reshape(-1).tolist():
        if math.isnan(v):
            out.append(fmt.qnan_bits)
        elif math.isinf(v):
            out.append(fmt.inf_bits | (fmt.sign_bit if v < 0 else 0))
        else:
            out.append(round_to(Fraction(v), fmt, negative_zero=math.copysign(1, v) < 0))
    return np.array(out, dtype=fmt.dtype)


def values(fmt: Fmt, bits: Any) -> list[float]:
    return [decode(fmt, int(b)) for b in np.asarray(bits).reshape(-1).tolist()]


def flush(fmt: Fmt, x: float) -> float:
    """A subnormal becomes a zero of its sign (what -ftz=true does to float inputs)."""
    if x != 0 and math.isfinite(x) and abs(x) < math.ldexp(1, fmt.emin):
        return math.copysign(0.0, x)
    return x


# ---------------------------------------------------------------- one correctly rounded operation


def exact_op(
    op: str, xs: Sequence[float], fmt: Fmt, mode: str = "rn", *, ftz: bool = False, sat: bool = False,
    relu: bool = False,
) -> int:  # fmt: skip
    """The bits of op(xs) rounded once to `fmt`: add, sub, mul, div, fma, sqrt, rcp."""
    if ftz:
        xs = [flush(fmt, x) for x in xs]
    special = _special(op, xs)
    if special is not None:
        bits = _float_bits(fmt, special)
    else:
        q = _exact(op, xs)
        if q is None:  # irrational: sqrt
            bits = _round_sqrt(Fraction(xs[0]), fmt, mode, ftz)
        else:
            bits = round_to(q, fmt, mode, negative_zero=_zero_sign(op, xs, mode), ftz=ftz)
    if sat:
        v = decode(fmt, bits)
        bits = 0 if math.isnan(v) or v <= 0 else (_float_bits(fmt, 1.0) if v >= 1 else bits)
    if relu:
        v = decode(fmt, bits)
        bits = fmt.qnan_bits if math.isnan(v) else (0 if v < 0 or v == 0 else bits)
    return bits


def _float_bits(fmt: Fmt, v: float) -> int:
    return int(to_bits(fmt, [v])[0])


def _special(op: str, xs: Sequence[float]) -> float | None:
    """The IEEE result where an input is not finite or the result is (a division by zero)."""
    finite = all(math.isfinite(x) for x in xs)
    with np.errstate(all="ignore"):
        a = [np.float64(x) for x in xs]
        if op == "add":
            r = a[0] + a[1]
        elif op == "sub":
            r = a[0] - a[1]
        elif op == "mul":
            r = a[0] * a[1]
        elif op == "div":
            r = a[0] / a[1]
        elif op == "rcp":
            r = np.float64(1) / a[0]
        elif op == "sqrt":
            r = np.sqrt(a[0])
        elif op == "fma":
            if not finite:
                p = a[0] * a[1]
                r = p + a[2]
                if math.isfinite(xs[0]) and math.isfinite(xs[1]) and math.isinf(xs[2]):
                    r = a[2]
            else:
                r = np.float64(0)
        else:
            raise ValueError(op)
    if not finite:
        return float(r)
    if op in ("div", "rcp") and xs[-1] == 0:
        return float(r)
    if op == "sqrt" and xs[0] < 0:
        return math.nan
    if op == "sqrt" and xs[0] == 0:
        return xs[0]
    return None


def _exact(op: str, xs: Sequence[float]) -> Fraction | None:
    f = [Fraction(x) for x in xs]
    if op == "add":
        return f[0] + f[1]
    if op == "sub":
        return f[0] - f[1]
    if op == "mul":
        return f[0] * f[1]
    if op == "div":
        return f[0] / f[1]
    if op == "rcp":
        return 1 / f[0]
    if op == "fma":
        return f[0] * f[1] + f[2]
    return None


def _zero_sign(op: str, xs: Sequence[float], mode: str) -> bool:
    """The sign of an exact zero result (IEEE 754 section 6.3)."""
    neg = [math.copysign(1, x) < 0 for x in xs]
    if op in ("mul", "div", "rcp"):
        return (neg[0] != neg[1]) if op != "rcp" else neg[0]
    if op == "fma":
        terms = [(xs[0] * xs[1] == 0, neg[0] != neg[1]), (xs[2] == 0, neg[2])]
    elif op == "add":
        terms = [(xs[0] == 0, neg[0]), (xs[1] == 0, neg[1])]
    else:  # sub
        terms = [(xs[0] == 0, neg[0]), (xs[1] == 0, not neg[1])]
    if all(z for z, _ in terms):  # a sum of zeros: -0 only if all are -0 (or rounding down)
        return all(s for _, s in terms) or (mode == "rd" and any(s for _, s in terms))
    return mode == "rd"  # an exact cancellation


def _round_sqrt(a: Fraction, fmt: Fmt, mode: str, ftz: bool) -> int:
    """sqrt(a) rounded: an integer square root of a scaled far enough to decide every rounding."""
    k = 2 * (fmt.p + 4) - (a.numerator.bit_length() - a.denominator.bit_length())
    k += k % 2
    scaled = a * Fraction(2) ** k
    n = scaled.numerator // scaled.denominator
    r = math.isqrt(n)
    exact = r * r == n and scaled.denominator == 1
    scale = Fraction(2) ** (k // 2)
    q = Fraction(r) / scale
    if not exact:  # sqrt lies strictly between r and r + 1 scaled: nudge so the rounding sees it
        q += 1 / (4 * scale)
    return round_to(q, fmt, mode, ftz=ftz)


# ---------------------------------------------------------------- vectorised helpers


def elementwise(fmt_out: Fmt, f: Callable[..., int], *arrays: Any) -> np.ndarray:
    """Apply f to decoded Python floats element by element; f returns output bits."""
    cols = [a if isinstance(a, list) else np.asarray(a).reshape(-1).tolist() for a in arrays]
    return np.array([f(*row) for row in zip(*cols)], dtype=fmt_out.dtype)


def ordered(fmt: Fmt, bits: Any) -> np.ndarray:
    """Bits mapped to integers that count ulps: neighbouring floats differ by 1, -0 == +0."""
    b = np.asarray(bits).astype(np.int64) if fmt.bits < 64 else np.asarray(bits).view(np.int64)
    if fmt.bits < 64:
        mag = b & (fmt.sign_bit - 1)
        return np.where(b & fmt.sign_bit, -mag, mag)
    mag = b & np.int64(0x7FFFFFFFFFFFFFFF)
    return np.where(b < 0, -mag, mag)
