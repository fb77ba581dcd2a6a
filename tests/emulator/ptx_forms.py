"""PTX instruction forms, one inline-asm kernel each, run on fixed inputs: the GPU's answers recorded.

A `Form` is one PTX instruction with its modifiers (`add.sat.s32`, `cvt.rpi.ftz.f32.f32`,
`setp.ltu.f64`, ...) written as a template (`{d}` the result, `{a}` `{b}` `{c}` `{e}` the
operands) and the PTX types of its operands. `kernel_source` wraps it in a CUDA C kernel whose
`asm` has the right constraint letters; predicates travel as u32 0/1 (converted inside the asm).
Every form of one input signature runs on the same lanes (`make_inputs`): the types' edge values
crossed pairwise, then seeded random values. `scripts/record_ptx_truth.py` records what the GPU
gives; `test_ptx_truth.py` asks the emulator for the same bits.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import course

from .device_api import INT_EDGES, TYPES, CType, _fit_int, values_for
from .fpref import F32, F64, Fmt, decode, to_bits

# ---------------------------------------------------------------- operand types


@dataclass(frozen=True)
class PType:
    """How one PTX operand type travels: its C type and asm constraint, its storage, how it compares."""

    name: str
    c: str
    constraint: str
    ctype: CType  # device_api's type: storage dtype and float format (for comparing)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.ctype.dtype)


PTYPES = {
    t.name: t
    for t in (
        PType("s8", "int", "r", TYPES["i"]),  # 8-bit values sit in 32-bit registers
        PType("u8", "unsigned", "r", TYPES["u"]),
        PType("s16", "short", "h", TYPES["s"]),
        PType("u16", "unsigned short", "h", TYPES["S"]),
        PType("s32", "int", "r", TYPES["i"]),
        PType("u32", "unsigned", "r", TYPES["u"]),
        PType("s64", "long long", "l", TYPES["l"]),
        PType("u64", "unsigned long long", "l", TYPES["L"]),
        PType("f16", "unsigned short", "h", TYPES["h"]),
        PType("bf16", "unsigned short", "h", TYPES["b"]),
        PType("f16x2", "unsigned", "r", TYPES["H"]),
        PType("bf16x2", "unsigned", "r", TYPES["B"]),
        PType("f32", "float", "f", TYPES["f"]),
        PType("f64", "double", "d", TYPES["d"]),
        PType("pred", "unsigned", "r", TYPES["u"]),  # 0 or 1
    )
}
ALIASES = {"b16": "u16", "b32": "u32", "b64": "u64"}


def ptype(name: str) -> PType:
    return PTYPES[ALIASES.get(name, name)]


# ---------------------------------------------------------------- forms


@dataclass(frozen=True)
class Form:
    id: str  # the instruction as PTX spells it, e.g. "add.sat.s32"
    family: str  # integer, float, convert, compare, half, memory
    ptx: str  # the template: {d} the result, {a} {b} {c} {e} the operands
    ins: tuple[str, ...]  # PTX types of the operands (pred: a predicate)
    out: str  # PTX type of the result; "pred" for a predicate, "pq" for setp's p|q pair
    doms: tuple[str, ...] = ()  # per operand: "" (the type's values) or "shift" (small counts), "sel"
    cross: tuple[int, int] = (0, 1)  # which two operands cross their edge values
    ulp: float = 0.0  # the documented error of an approximate form (0: bit for bit)
    pre: str = ""  # C run before the asm (memory forms); it may replace operands by C expressions
    args: tuple[str, ...] = ()  # C expressions for the asm operands, where not the loaded a, b, ...

    @property
    def kernel(self) -> str:
        return "f_" + re.sub(r"\W", lambda m: f"_{ord(m[0]):x}_", self.id)

    @property
    def out_type(self) -> PType:
        return ptype("pred" if self.out == "pq" else self.out)

    @property
    def input_key(self) -> str:
        doms = list(self.doms) + [""] * (len(self.ins) - len(self.doms))
        parts = [ALIASES.get(t, t) + (f":{d}" if d else "") for t, d in zip(self.ins, doms)]
        return ",".join(parts) + (f"|x{self.cross[0]}{self.cross[1]}" if len(self.ins) > 2 else "")


NAMES = "abce"


def asm_text(form: Form) -> str:
    """The form's PTX as one asm string: predicates in and out converted from and to u32."""
    decl, head, tail = [], [], []
    subs: dict[str, str] = {}
    if form.out == "pred":
        decl.append(".reg .pred pd;")
        subs["d"] = "pd"
        tail.append("selp.u32 %0, 1, 0, pd;")
    elif form.out == "pq":
        decl.append(".reg .pred pd, pq; .reg .u32 tq;")
        subs["d"] = "pd|pq"
        tail.append("selp.u32 %0, 1, 0, pd; selp.u32 tq, 2, 0, pq; add.u32 %0, %0, tq;")
    else:
        subs["d"] = "%0"
    for k, t in enumerate(form.ins):
        if t == "pred":
            decl.append(f".reg .pred p{NAMES[k]};")
            head.append(f"setp.ne.u32 p{NAMES[k]}, %{k + 1}, 0;")
            subs[NAMES[k]] = f"p{NAMES[k]}"
        else:
            subs[NAMES[k]] = f"%{k + 1}"
    body = form.ptx.format(**subs)
    return " ".join(["{", *decl, *head, body, *tail, "}"])


def kernel_source(form: Form) -> str:
    ins = [ptype(t) for t in form.ins]
    out = form.out_type
    params = [f"const {t.c}* __restrict__ p{k}" for k, t in enumerate(ins)]
    loads = " ".join(f"{t.c} {NAMES[k]} = p{k}[i];" for k, t in enumerate(ins))
    args = form.args or tuple(NAMES[: len(ins)])
    letters = [t.constraint for t in ins] if not form.args else ["l"] * len(args)  # args: addresses
    operands = ", ".join(f'"{c}"({x})' for c, x in zip(letters, args))
    return (
        f'extern "C" __global__ void {form.kernel}({", ".join(params)}, {out.c}* __restrict__ q, int n) {{\n'
        f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (i >= n) return;\n"
        f"    {loads} {out.c} o;\n"
        f"    {form.pre}\n"
        f'    asm volatile("{asm_text(form)}" : "={out.constraint}"(o) : {operands});\n'
        f"    q[i] = o;\n"
        f"}}\n"
    )


def group_source(forms: Sequence[Form]) -> str:
    return "\n".join(kernel_source(f) for f in forms)


# ---------------------------------------------------------------- the forms, family by family

SINTS, UINTS = ("s16", "s32", "s64"), ("u16", "u32", "u64")
INTS = ("s16", "u16", "s32", "u32", "s64", "u64")
ALL_INTS = ("s8", "u8", *INTS)
FLOATS = ("f16", "bf16", "f32", "f64")
MODES = ("rn", "rz", "rm", "rp")
IMODES = ("rni", "rzi", "rmi", "rpi")


def _f(fid: str, family: str, ins: Sequence[str], out: str, ptx: str | None = None, **kw: Any) -> Form:
    """A form whose template is its id followed by the usual operands, unless `ptx` is given."""
    if ptx is None:
        ops = ["{d}", *["{" + NAMES[k] + "}" for k in range(len(ins))]]
        ptx = f"{fid} {', '.join(ops)};"
    return Form(fid, family, ptx, tuple(ins), out, **kw)


def _mods(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def integer_forms() -> Iterator[Form]:
    fam = "integer"
    for t in INTS:
        for op in ("add", "sub", "min", "max", "div", "rem"):
            yield _f(f"{op}.{t}", fam, (t, t), t)
        yield _f(f"mul.lo.{t}", fam, (t, t), t)
        yield _f(f"mul.hi.{t}", fam, (t, t), t)
        yield _f(f"mad.lo.{t}", fam, (t, t, t), t)
        yield _f(f"mad.hi.{t}", fam, (t, t, t), t)
        yield _f(f"sad.{t}", fam, (t, t, t), t)
        if t[1:] in ("16", "32"):
            wide = t[0] + str(2 * int(t[1:]))
            yield _f(f"mul.wide.{t}", fam, (t, t), wide)
            yield _f(f"mad.wide.{t}", fam, (t, t, wide), wide)
    for op in ("add", "sub"):
        yield _f(f"{op}.sat.s32", fam, ("s32", "s32"), "s32")
    yield _f("mad.hi.sat.s32", fam, ("s32", "s32", "s32"), "s32")
    yield _f("min.relu.s32", fam, ("s32", "s32"), "s32")
    yield _f("max.relu.s32", fam, ("s32", "s32"), "s32")
    for t in SINTS:
        yield _f(f"abs.{t}", fam, (t,), t)
        yield _f(f"neg.{t}", fam, (t,), t)
    for t in ("s32", "u32"):
        for hl in ("lo", "hi"):
            yield _f(f"mul24.{hl}.{t}", fam, (t, t), t)
            yield _f(f"mad24.{hl}.{t}", fam, (t, t, t), t)
    yield _f("mad24.hi.sat.s32", fam, ("s32", "s32", "s32"), "s32")
    # carries: a 64-bit sum, difference and product term from 32-bit halves through CC.CF
    two = "{{ .reg .u32 al, ah, bl, bh, dl, dh; mov.b64 {{al, ah}}, {a}; mov.b64 {{bl, bh}}, {b}; "
    yield _f("add.cc.u32+addc.u32", fam, ("u64", "u64"), "u64",
             two + "add.cc.u32 dl, al, bl; addc.u32 dh, ah, bh; mov.b64 {d}, {{dl, dh}}; }}")  # fmt: skip
    yield _f("sub.cc.u32+subc.u32", fam, ("u64", "u64"), "u64",
             two + "sub.cc.u32 dl, al, bl; subc.u32 dh, ah, bh; mov.b64 {d}, {{dl, dh}}; }}")  # fmt: skip
    yield _f("addc.cc.u32", fam, ("u64", "u64"), "u64",
             two + "add.cc.u32 dl, al, bl; addc.cc.u32 dh, ah, bh; addc.u32 dl, 0, 0; "
             "mov.b64 {d}, {{dh, dl}}; }}")  # fmt: skip
    yield _f("subc.cc.u32", fam, ("u64", "u64"), "u64",
             two + "sub.cc.u32 dl, al, bl; subc.cc.u32 dh, ah, bh; subc.u32 dl, 0, 0; "
             "mov.b64 {d}, {{dh, dl}}; }}")  # fmt: skip
    yield _f("mad.lo.cc.u32+madc.hi.u32", fam, ("u64", "u64"), "u64",
             two + "mad.lo.cc.u32 dl, al, bl, ah; madc.hi.u32 dh, al, bl, bh; mov.b64 {d}, {{dl, dh}}; }}")  # fmt: skip
    yield _f("add.cc.u64+addc.u64", fam, ("u64", "u64", "u64"), "u64",
             "{{ .reg .u64 t; add.cc.u64 t, {a}, {b}; addc.u64 {d}, {c}, 0; }}")  # fmt: skip
    yield _f("sub.cc.s32+subc.s32", fam, ("s32", "s32", "s32"), "s32",
             "{{ .reg .s32 t; sub.cc.s32 t, {a}, {b}; subc.s32 {d}, {c}, 0; }}")  # fmt: skip
    for b in ("b32", "b64"):
        yield _f(f"popc.{b}", fam, (b,), "u32")
        yield _f(f"clz.{b}", fam, (b,), "u32")
        yield _f(f"brev.{b}", fam, (b,), b)
    for t in ("s32", "u32", "s64", "u64"):
        yield _f(f"bfind.{t}", fam, (t,), "u32")
        yield _f(f"bfind.shiftamt.{t}", fam, (t,), "u32")
        yield _f(f"bfe.{t}", fam, (t, "u32", "u32"), t, doms=("", "shift", "shift"), cross=(1, 2))
    for b in ("b32", "b64"):
        yield _f(f"bfi.{b}", fam, (b, b, "u32", "u32"), b, doms=("", "", "shift", "shift"), cross=(2, 3))
    for mode in ("", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"):
        yield _f(_mods("prmt.b32", mode), fam, ("b32", "b32", "b32"), "b32", doms=("", "", "sel"))
    for lr in ("l", "r"):
        for how in ("wrap", "clamp"):
            yield _f(f"shf.{lr}.{how}.b32", fam, ("b32", "b32", "u32"), "b32", doms=("", "", "shift"))
    for t in ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"):
        if t[0] == "b":
            yield _f(f"shl.{t}", fam, (t, "u32"), t, doms=("", "shift"))
        yield _f(f"shr.{t}", fam, (t, "u32"), t, doms=("", "shift"))
    for b in ("b16", "b32", "b64"):
        for op in ("and", "or", "xor"):
            yield _f(f"{op}.{b}", fam, (b, b), b)
        yield _f(f"not.{b}", fam, (b,), b)
        yield _f(f"cnot.{b}", fam, (b,), b)
    for lut in (0x00, 0x01, 0x80, 0x96, 0xE8, 0xF0, 0xFE, 0x6A, 0xCA, 0xFF):
        yield _f(f"lop3.b32.{lut:#04x}", fam, ("b32", "b32", "b32"), "b32",
                 f"lop3.b32 {{d}}, {{a}}, {{b}}, {{c}}, {lut:#04x};")  # fmt: skip
    yield _f("fns.b32", fam, ("b32", "u32", "s32"), "b32", doms=("", "shift", "shift"))
    for ta in ("u32", "s32"):
        for tb in ("u32", "s32"):
            yield _f(f"dp4a.{ta}.{tb}", fam, ("b32", "b32", "s32" if "s" in ta + tb else "u32"), "u32")
            for hl in ("lo", "hi"):
                yield _f(
                    f"dp2a.{hl}.{ta}.{tb}", fam, ("b32", "b32", "s32" if "s" in ta + tb else "u32"), "u32"
                )


def packed_forms() -> Iterator[Form]:
    """The 16x2 integer forms (sm_90) and the SIMD video instructions."""
    fam = "packed"
    for t in ("u16x2", "s16x2"):  # sm_90 has add, min, max on these (ptxas: no sub, no add.sat)
        for op in ("add", "min", "max"):
            yield _f(f"{op}.{t}", fam, ("b32", "b32"), "b32")
    yield _f("min.relu.s16x2", fam, ("b32", "b32"), "b32")
    yield _f("max.relu.s16x2", fam, ("b32", "b32"), "b32")
    for op in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"):
        for n in (2, 4):
            for ts in ("u32.u32.u32", "s32.s32.s32"):
                for mod in ("", ".sat", ".add"):
                    name = f"{op}{n}.{ts}{mod}"
                    yield _f(name, fam, ("b32", "b32", "b32"), "b32")


def _float_mods(t: str, *, rounding: bool, ftz: bool, sat: bool) -> Iterator[str]:
    for r in (("",) + MODES) if rounding else ("",):
        for z in ("", "ftz") if ftz and t == "f32" else ("",):
            for s in ("", "sat") if sat and t == "f32" else ("",):
                yield _mods(r, z, s)


def float_forms() -> Iterator[Form]:
    fam = "float"
    for t in ("f32", "f64"):
        for op in ("add", "sub", "mul"):
            for m in _float_mods(t, rounding=True, ftz=True, sat=True):
                yield _f(_mods(op, m, t), fam, (t, t), t)
        for op in ("fma", "mad"):
            for r in MODES:
                for m in _float_mods(t, rounding=False, ftz=True, sat=True):
                    yield _f(_mods(op, r, m, t), fam, (t, t, t), t)
        for r in MODES:
            for m in _float_mods(t, rounding=False, ftz=True, sat=False):
                yield _f(_mods("div", r, m, t), fam, (t, t), t)
                yield _f(_mods("rcp", r, m, t), fam, (t,), t)
                yield _f(_mods("sqrt", r, m, t), fam, (t,), t)
        for op in ("min", "max"):
            for m in ("", "ftz", "NaN", "ftz.NaN") if t == "f32" else ("",):
                yield _f(_mods(op, m, t), fam, (t, t), t)
        for op in ("abs", "neg"):
            for m in ("", "ftz") if t == "f32" else ("",):
                yield _f(_mods(op, m, t), fam, (t,), t)
        yield _f(f"copysign.{t}", fam, (t, t), t)
        for kind in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"):
            yield _f(f"testp.{kind}.{t}", fam, (t,), "pred")
    # approximate: within the PTX ISA's stated bound (in ulps of the result)
    for z in ("", ".ftz"):
        yield _f(f"div.approx{z}.f32", fam, ("f32", "f32"), "f32", ulp=2)
        yield _f(f"div.full{z}.f32", fam, ("f32", "f32"), "f32", ulp=2)
        yield _f(f"rcp.approx{z}.f32", fam, ("f32",), "f32", ulp=1)
        yield _f(f"sqrt.approx{z}.f32", fam, ("f32",), "f32", ulp=2)
        yield _f(f"rsqrt.approx{z}.f32", fam, ("f32",), "f32", ulp=2)


def _holds(d: str, s: str) -> bool:
    """Whether integer type d holds every value of integer type s."""

    def span(t: str) -> tuple[int, int]:
        k = int(t[1:])
        return (-(1 << (k - 1)), (1 << (k - 1)) - 1) if t[0] == "s" else (0, (1 << k) - 1)

    (dl, dh), (sl, sh) = span(d), span(s)
    return dl <= sl and sh <= dh


def _cvt_float_mods(d: str, s: str) -> tuple[str, ...]:
    """.ftz where f32 is a side; .sat unless bf16 is (ptxas refuses cvt.sat with bf16)."""
    return ("",) + (("ftz",) if "f32" in (d, s) else ()) + (() if "bf16" in (d, s) else ("sat",))


def convert_forms() -> Iterator[Form]:
    fam = "convert"
    for d in ALL_INTS:  # integer to integer
        for s in ALL_INTS:
            if d != s:
                yield _f(f"cvt.{d}.{s}", fam, (s,), d)
                if not _holds(d, s):  # ptxas refuses .sat where every source value fits
                    yield _f(f"cvt.sat.{d}.{s}", fam, (s,), d)
    for d in FLOATS:  # integer to float
        for s in ALL_INTS:
            if d == "bf16" and s in ("s8", "u8"):  # no such cvt
                continue
            for r in MODES:
                yield _f(f"cvt.{r}.{d}.{s}", fam, (s,), d)
    for s in FLOATS:  # float to integer
        for d in ALL_INTS:
            if s == "bf16" and d in ("s8", "u8"):
                continue
            for r in IMODES:
                yield _f(f"cvt.{r}.{d}.{s}", fam, (s,), d)
                if s == "f32":
                    yield _f(f"cvt.{r}.ftz.{d}.{s}", fam, (s,), d)
    wider = {"f16": 1, "bf16": 1, "f32": 2, "f64": 3}
    for d in FLOATS:  # float to float
        for s in FLOATS:
            if {d, s} == {"f16", "bf16"}:
                continue
            if d == s:
                for r in IMODES:
                    for m in _float_mods(d, rounding=False, ftz=True, sat=True):
                        yield _f(_mods("cvt", r, m, d, s), fam, (s,), d)
            elif wider[d] > wider[s]:
                for m in _cvt_float_mods(d, s):
                    yield _f(_mods("cvt", m, d, s), fam, (s,), d)
            else:
                for r in MODES:
                    for m in _cvt_float_mods(d, s):
                        yield _f(_mods("cvt", r, m, d, s), fam, (s,), d)
                    if d in ("f16", "bf16") and s == "f32" and r in ("rn", "rz"):  # frnd2{.relu}
                        yield _f(_mods("cvt", r, "relu", d, s), fam, (s,), d)
    for d in ("f16x2", "bf16x2"):
        for m in ("rn", "rn.relu", "rn.satfinite", "rz"):
            yield _f(f"cvt.{m}.{d}.f32", fam, ("f32", "f32"), d)


def compare_forms() -> Iterator[Form]:
    fam = "compare"
    icmp = {"s": ("eq", "ne", "lt", "le", "gt", "ge"), "u": ("eq", "ne", "lo", "ls", "hi", "hs", "lt", "ge"),
            "b": ("eq", "ne")}  # fmt: skip
    fcmp = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
    for t in (*INTS, "b16", "b32", "b64"):
        for c in icmp[t[0]]:
            yield _f(f"setp.{c}.{t}", fam, (t, t), "pred")
    for t in ("f32", "f64"):
        for c in fcmp:
            yield _f(f"setp.{c}.{t}", fam, (t, t), "pred")
    for c in ("eq", "lt", "geu", "nan"):
        yield _f(f"setp.{c}.ftz.f32", fam, ("f32", "f32"), "pred")
    for b in ("and", "or", "xor"):
        for c, t in (("lt", "s32"), ("hi", "u64"), ("ltu", "f32"), ("ge", "f64")):
            yield _f(f"setp.{c}.{b}.{t}", fam, (t, t, "pred"), "pred")
            yield _f(f"setp.{c}.{b}.{t} p|q", fam, (t, t, "pred"), "pq",
                     f"setp.{c}.{b}.{t} {{d}}, {{a}}, {{b}}, {{c}};")  # fmt: skip
    for c, t in (("lt", "s32"), ("ne", "f32"), ("leu", "f64")):
        yield _f(f"setp.{c}.{t} p|q", fam, (t, t), "pq", f"setp.{c}.{t} {{d}}, {{a}}, {{b}};")
    for dt in ("u32", "s32", "f32"):
        for st, cs in (("s32", ("lt", "ge")), ("u32", ("hi", "eq")), ("s64", ("gt",)), ("u16", ("ls",)),
                       ("f32", ("lt", "neu", "nan")), ("f64", ("ge", "ltu"))):  # fmt: skip
            for c in cs:
                yield _f(f"set.{c}.{dt}.{st}", fam, (st, st), dt)
        yield _f(f"set.lt.ftz.{dt}.f32", fam, ("f32", "f32"), dt)
        yield _f(f"set.gt.and.{dt}.s32", fam, ("s32", "s32", "pred"), dt)
        yield _f(f"set.equ.xor.{dt}.f64", fam, ("f64", "f64", "pred"), dt)
    for t in ("b16", "b32", "b64", "s32", "u64", "f32", "f64"):
        yield _f(f"selp.{t}", fam, (t, t, "pred"), t)
    for dt in ("b32", "s32", "f32", "u64", "f64"):
        for ct in ("s32", "f32"):
            yield _f(f"slct.{dt}.{ct}", fam, (dt, dt, ct), dt)
    yield _f("slct.ftz.f32.f32", fam, ("f32", "f32", "f32"), "f32")


def half_forms() -> Iterator[Form]:
    fam = "half"
    for t in ("f16", "f16x2", "bf16", "bf16x2"):
        bf = t.startswith("bf")
        for op in ("add", "sub", "mul"):
            for m in ("", "rn") if bf else ("", "rn", "ftz", "sat", "ftz.sat", "rn.ftz.sat"):
                yield _f(_mods(op, m, t), fam, (t, t), t)
        for m in (
            ("rn", "rn.relu") if bf else ("rn", "rn.ftz", "rn.sat", "rn.ftz.sat", "rn.relu", "rn.ftz.relu")
        ):
            yield _f(_mods("fma", m, t), fam, (t, t, t), t)
        for op in ("min", "max"):
            for m in ("", "NaN", "xorsign.abs", "NaN.xorsign.abs") + (() if bf else ("ftz", "ftz.NaN")):
                yield _f(_mods(op, m, t), fam, (t, t), t)
        for op in ("neg", "abs"):
            for m in ("",) if bf else ("", "ftz"):
                yield _f(_mods(op, m, t), fam, (t,), t)
        for c in ("eq", "lt", "geu", "nan", "ne"):
            if t.endswith("x2"):
                yield _f(f"setp.{c}.{t} p|q", fam, (t, t), "pq", f"setp.{c}.{t} {{d}}, {{a}}, {{b}};")
                yield _f(f"set.{c}.{t}.{t}", fam, (t, t), t)
                yield _f(f"set.{c}.u32.{t}", fam, (t, t), "u32")
            else:
                yield _f(f"setp.{c}.{t}", fam, (t, t), "pred")
                yield _f(f"set.{c}.{t}.{t}", fam, (t, t), t)
                yield _f(f"set.{c}.u32.{t}", fam, (t, t), "u32")
        if not bf:
            yield _f(f"setp.lt.ftz.{t}" + (" p|q" if t.endswith("x2") else ""), fam, (t, t),
                     "pq" if t.endswith("x2") else "pred", f"setp.lt.ftz.{t} {{d}}, {{a}}, {{b}};")  # fmt: skip


def memory_forms() -> Iterator[Form]:
    """isspacep and cvta on generic addresses: a __shared__ array's first and last byte, a local
    variable, a global pointer (operand a picks which, mod 4)."""
    fam = "memory"
    pick = (
        "__shared__ unsigned char sm[64]; sm[threadIdx.x % 64] = 0; volatile int loc[2]; loc[a & 1] = a;"
        " const void* ptrs[4] = {sm, sm + 63, (const void*)loc, (const void*)p0};"
        " unsigned long long g = (unsigned long long)ptrs[a & 3];"
    )
    for space in ("shared", "local", "global", "const"):
        yield _f(f"isspacep.{space}", fam, ("u32",), "pred", f"isspacep.{space} {{d}}, {{a}};",
                 doms=("sel",), pre=pick, args=("g",))  # fmt: skip
    # cvta round trips: the offset of the last byte from the first is 63 in the shared window
    base = pick + " unsigned long long g0 = (unsigned long long)(const void*)sm;"
    yield _f("cvta.to.shared.u64", fam, ("u32",), "u64",
             "{{ .reg .u64 x, y; cvta.to.shared.u64 x, {a}; cvta.to.shared.u64 y, %2; sub.u64 {d}, x, y; }}",
             doms=("sel",), pre=base + " g = (unsigned long long)(const void*)(sm + (a & 63));", args=("g", "g0"))  # fmt: skip
    # (a shared pointer only: cvta.to.shared of a local or global address is undefined, and a GPU
    # gives back an address 2^32 away)
    yield _f("cvta.shared.u64", fam, ("u32",), "u64",
             "{{ .reg .u64 x, y; cvta.to.shared.u64 x, {a}; cvta.shared.u64 y, x; sub.u64 {d}, y, {a}; }}",
             doms=("sel",), pre=base + " g = (unsigned long long)(const void*)(sm + (a & 63));", args=("g",))  # fmt: skip


FAMILIES = {
    "integer": integer_forms, "packed": packed_forms, "float": float_forms, "convert": convert_forms,
    "compare": compare_forms, "half": half_forms, "memory": memory_forms,
}  # fmt: skip


def all_forms() -> list[Form]:
    forms = [f for make in FAMILIES.values() for f in make()]
    ids = [f.id for f in forms]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"form ids appear twice: {sorted(dup)}"
    return forms


# ---------------------------------------------------------------- inputs

SHIFTS = [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 255, 256]
INT_CROSS = [0, 1, -1, 2, 31, 32, 63, 64, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, -0x80000000, 0x80000001,
             0x7FFFFFFFFFFFFFFF, -0x8000000000000000]  # fmt: skip
UNARY, OTHERS = 160, 384


def _float_cross(fmt: Fmt) -> list[float]:
    """16 values to cross: zeros, subnormals, the normal boundary, 1, the extremes, inf, NaN."""
    tiny = math.ldexp(1, fmt.emin - fmt.p + 1)
    least = math.ldexp(1, fmt.emin)
    big = decode(fmt, fmt.max_bits)
    eps = math.ldexp(1, 1 - fmt.p)
    return [0.0, -0.0, tiny, -(least - tiny), least, -least, 1.0, -1.0, 1 + eps, 3.0, 0.1, big, -big,
            math.inf, -math.inf, math.nan]  # fmt: skip


def _storage(t: PType, values: Any) -> np.ndarray:
    """Python numbers (floats: values, ints: wrapped) in the type's storage."""
    fmt = t.ctype.fmt
    if fmt is None:
        return _fit_int(values, t.dtype)
    bits = to_bits(fmt, values)
    if t.ctype.lanes == 2:
        bits = bits.astype(np.uint32) | (bits[::-1].astype(np.uint32) << np.uint32(16))
    return bits.view(t.dtype) if fmt in (F32, F64) else bits.astype(t.dtype)


def edge_values(name: str, dom: str) -> np.ndarray:
    t = ptype(name)
    if dom in ("shift", "sel"):
        return _storage(t, SHIFTS if dom == "shift" else list(range(16)))
    if name == "pred":
        return _storage(t, [0, 1])
    if t.ctype.fmt is None:
        return _storage(t, INT_CROSS)
    return _storage(t, _float_cross(t.ctype.fmt))


def column(name: str, dom: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """n values of one operand: the type's edge values first (device_api's), then seeded random ones
    (floats of varied exponents, ints of every size)."""
    t = ptype(name)
    if name == "pred":
        return rng.integers(0, 2, n).astype(np.uint32)
    if dom == "shift":
        return np.concatenate([edge_values(name, dom), rng.integers(0, 70, n)]).astype(t.dtype)[:n]
    if dom == "sel":
        return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(t.dtype)
    if t.ctype.fmt is None:
        return np.concatenate([_fit_int(INT_EDGES, t.dtype), values_for(t.ctype, rng, n)])[:n]
    return np.ascontiguousarray(values_for(t.ctype, rng, n))


def make_inputs(form: Form) -> list[np.ndarray]:
    """The form's operands, lane by lane: fixed for its input signature (seeded by it)."""
    return inputs_for(form.input_key)


_INPUTS: dict[str, list[np.ndarray]] = {}


def inputs_for(key: str) -> list[np.ndarray]:
    if key not in _INPUTS:
        _INPUTS[key] = _make_inputs(key)
    return [a.copy() for a in _INPUTS[key]]


def _make_inputs(key: str) -> list[np.ndarray]:
    sig, _, cross = key.partition("|")
    ops = [(p.split(":") + [""])[:2] for p in sig.split(",")]
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "little"))
    n = UNARY if len(ops) == 1 else OTHERS
    with np.errstate(all="ignore"):
        cols = [column(t, d, rng, n) for t, d in ops]
        if len(ops) >= 2:
            i, j = (int(cross[1]), int(cross[2])) if cross else (0, 1)
            ei, ej = edge_values(*ops[i]), edge_values(*ops[j])
            a, b = np.meshgrid(np.arange(len(ei)), np.arange(len(ej)), indexing="ij")
            m = min(a.size, n)
            cols[i][:m] = ei[a.reshape(-1)[:m]]
            cols[j][:m] = ej[b.reshape(-1)[:m]]
    return cols


# ---------------------------------------------------------------- bits as text


def encode(t: PType, a: np.ndarray) -> str:
    """A column as text: its storage bits, little-endian, zlib-compressed, base64 (the record of
    some 1300 forms in hex would be 3.5 MB)."""
    raw = np.ascontiguousarray(np.asarray(a, t.dtype)).view(f"<u{t.dtype.itemsize}").tobytes()
    return base64.b64encode(zlib.compress(raw, 9)).decode()


def decode_column(t: PType, text: str) -> np.ndarray:
    raw = zlib.decompress(base64.b64decode(text))
    return np.frombuffer(raw, dtype=f"<u{t.dtype.itemsize}").astype(f"u{t.dtype.itemsize}").view(t.dtype)


# ---------------------------------------------------------------- running


@dataclass
class Result:
    status: str  # ok, unsupported, error
    out: np.ndarray | None = None
    detail: str = ""


GROUP = 60  # forms per module: NVRTC compiles a family in a few modules, a failing one is split


def groups(forms: Sequence[Form]) -> list[list[Form]]:
    by_family: dict[str, list[Form]] = {}
    for f in forms:
        by_family.setdefault(f.family, []).append(f)
    return [fs[k : k + GROUP] for fs in by_family.values() for k in range(0, len(fs), GROUP)]


Inputs = Callable[[Form], list[np.ndarray]]


def run_forms(forms: Sequence[Form], inputs: Inputs = make_inputs, log: Any = None) -> dict[str, Result]:
    """Every form on the active backend, on `inputs(form)`. A module that does not build (an
    instruction the GPU's ptxas rejects sinks the whole module) is split in halves until the form
    at fault stands alone."""
    out: dict[str, Result] = {}
    for g in groups(forms):
        _run_group(g, inputs, out, log)
    return out


def _run_group(forms: Sequence[Form], inputs: Inputs, out: dict[str, Result], log: Any) -> None:
    t0 = time.perf_counter()
    try:
        module = _build(forms)
    except Exception as exc:
        if len(forms) == 1:
            out[forms[0].id] = Result("error", detail=_short(exc))
            return
        half = len(forms) // 2
        _run_group(forms[:half], inputs, out, log)
        _run_group(forms[half:], inputs, out, log)
        return
    for f in forms:
        out[f.id] = run_form(module, f, inputs(f))
    if log:
        log(f"{len(forms)} {forms[0].family} forms in {time.perf_counter() - t0:.1f} s")


_MODULES: dict[tuple[str, str], course.Module] = {}


def _build(forms: Sequence[Form]) -> course.Module:
    source = group_source(forms)
    key = (course.device().backend, source)
    if key not in _MODULES:
        module = course.Module(code=source, filename="ptx_forms.cu")
        module.launch_notes = False  # no notes about shared memory: these are not a learner's kernels
        if course.device().on_gpu:
            module.cupy_module().get_function(forms[0].kernel)  # CuPy compiles (ptxas too) here
        _MODULES[key] = module
    return _MODULES[key]


def run_form(module: course.Module, form: Form, ins: list[np.ndarray]) -> Result:
    try:
        kern = module.get_function(form.kernel)
        n = len(ins[0])
        q = course.zeros(n, form.out_type.dtype)
        kern(((n + 127) // 128,), (128,), (*[course.asarray(a) for a in ins], q, np.int32(n)))
        return Result("ok", course.asnumpy(q))
    except course.errors.UnsupportedInstruction as exc:
        return Result("unsupported", detail=_short(exc))
    except Exception as exc:
        return Result("error", detail=_short(exc))


def _short(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) < 400 else text[:400] + "..."
