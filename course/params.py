"""A kernel's parameters as its C source declares them: names, pointer or scalar, element type.

PTX knows only that a parameter is 8 bytes; the source says `const float* x`. Reading the
declaration lets a launch refuse a float64 array passed where the kernel reads floats (NumPy's
default dtype, and silent garbage in plain CuPy). Typedefs and macros are followed, `-D`
options first, so `const elem_t* x` with `typedef ELEM elem_t;` and `-DELEM=float` is a float
pointer. A type the reader cannot resolve (a template parameter, a struct) is not checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

# C element types -> the NumPy dtypes an array passed for a pointer to them may have
_ANY_2_BYTES = ("float16", "uint16", "int16")  # half and bfloat16 bits (bfloat16 has no NumPy dtype)
C_DTYPES: dict[str, tuple[str, ...]] = {
    "float": ("float32",), "double": ("float64",), "__half": _ANY_2_BYTES, "half": _ANY_2_BYTES,
    "__nv_bfloat16": _ANY_2_BYTES, "nv_bfloat16": _ANY_2_BYTES,
    "char": ("int8", "uint8"), "signed char": ("int8",), "unsigned char": ("uint8",), "bool": ("bool",),
    "short": ("int16",), "unsigned short": ("uint16",), "int": ("int32",), "unsigned int": ("uint32",),
    "long": ("int64",), "unsigned long": ("uint64",),
    "long long": ("int64",), "unsigned long long": ("uint64",),
    "int8_t": ("int8",), "uint8_t": ("uint8",), "int16_t": ("int16",), "uint16_t": ("uint16",),
    "int32_t": ("int32",), "uint32_t": ("uint32",), "int64_t": ("int64",), "uint64_t": ("uint64",),
    "size_t": ("uint64",),
    # vector types: an array of their elements (a float4* walks a float32 array four at a time)
    "float2": ("float32",), "float4": ("float32",), "double2": ("float64",), "__half2": _ANY_2_BYTES,
    "__nv_bfloat162": _ANY_2_BYTES, "int2": ("int32",), "int4": ("int32",), "uint2": ("uint32",),
    "uint4": ("uint32",), "char4": ("int8",), "uchar4": ("uint8",),
}  # fmt: skip
# vector types may also take integer words of their whole size: their bits, packed (a __half2 as uint32)
VECTOR_BYTES = {
    "float2": 8, "float4": 16, "double2": 16, "__half2": 4, "__nv_bfloat162": 4, "int2": 8, "int4": 16,
    "uint2": 8, "uint4": 16, "char4": 4, "uchar4": 4,
}  # fmt: skip
_SPELLINGS = {  # equivalent spellings -> the key above
    "signed": "int", "signed int": "int", "unsigned": "unsigned int", "short int": "short",
    "unsigned short int": "unsigned short", "long int": "long", "unsigned long int": "unsigned long",
    "long long int": "long long", "signed long long": "long long", "signed long long int": "long long",
    "unsigned long long int": "unsigned long long", "half2": "__half2", "nv_bfloat162": "__nv_bfloat162",
}  # fmt: skip
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"}


@dataclass(frozen=True)
class Param:
    """One kernel parameter: PTX's view (type, size) and the C source's (name, type)."""

    name: str
    ptx_type: str
    size: int
    c_type: str  # "" when the source declaration could not be read
    is_pointer: bool | None  # None when unknown (a 64-bit parameter with no source info)
    dtypes: tuple[str, ...] | None = None  # pointers: the element dtypes allowed (None: unchecked)
    vector_bytes: int = 0  # pointers to a vector type: its size (an integer array of that itemsize fits too)

    def describe(self) -> str:
        return f"{self.c_type or self.ptx_type} {self.name}".strip()


def read(
    code: str, kernel: str, ptx_params: list[tuple[str, int]], options: tuple[str, ...] = ()
) -> list[Param]:
    """The parameters of `kernel` (its C name, no template arguments), given PTX's (type, size) of each."""
    decls = _declaration(code, kernel, len(ptx_params))
    aliases = _aliases(code, options) if decls else {}
    out = []
    for j, (ptx_type, size) in enumerate(ptx_params):
        if not decls:
            out.append(Param(f"param{j}", ptx_type, size, "", None if size == 8 else False))
            continue
        c_type, c_name = decls[j]
        pointer = "*" in c_type or "[" in c_type
        element = _resolve(c_type, aliases) if pointer else ""
        dtypes = C_DTYPES.get(element)
        out.append(Param(c_name, ptx_type, size, c_type, pointer, dtypes, VECTOR_BYTES.get(element, 0)))
    return out


def _declaration(code: str, base: str, count: int) -> list[tuple[str, str]] | None:
    """(type, name) of each parameter from the kernel's declaration in the source."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", code, flags=re.S)
    text = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", text)
    for m in re.finditer(r"__global__[^;{(]*?\b" + re.escape(base) + r"\s*\(", text):
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        items = [s.strip() for s in _split_top(text[m.end() : j - 1])]
        items = [s for s in items if s and s != "void"]
        if len(items) != count:
            continue
        out = []
        for item in items:
            item = item.split("=")[0].strip()
            nm = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])*\s*$", item)
            if not nm:
                return None
            out.append((" ".join(item[: nm.start(1)].split()) + (nm[2] or ""), nm[1]))
        return out
    return None


def _split_top(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for c in s:
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    return out + [cur]


def _aliases(code: str, options: tuple[str, ...]) -> dict[str, str]:
    """Macro and typedef names -> what they stand for; `-D` options win over `#define`s (the
    `#ifndef X / #define X default` idiom)."""
    out: dict[str, str] = {}
    for opt in options:
        m = re.match(r"^-D\s*([A-Za-z_]\w*)(?:=(.*))?$", opt)
        if m:
            out[m[1]] = (m[2] if m[2] is not None else "1").strip()
    for m in re.finditer(r"^\s*#\s*define\s+([A-Za-z_]\w*)[ \t]+([^\n]+)$", code, re.M):
        out.setdefault(m[1], m[2].split("//")[0].strip())
    for m in re.finditer(r"\btypedef\s+([^;{}()]+?)\s+([A-Za-z_]\w*)\s*;", code):
        out.setdefault(m[2], m[1])
    for m in re.finditer(r"\busing\s+([A-Za-z_]\w*)\s*=\s*([^;{}()]+?)\s*;", code):
        out.setdefault(m[1], m[2])
    return out


def _resolve(c_type: str, aliases: dict[str, str]) -> str:
    """The element type a pointer declaration points to, aliases followed: `const elem_t*` -> `float`."""
    words = re.findall(r"[A-Za-z_]\w*", c_type)
    for _ in range(8):  # aliases of aliases, but never forever
        expanded = []
        for w in words:
            expanded += re.findall(r"[A-Za-z_]\w*", aliases[w]) if w in aliases else [w]
        if expanded == words:
            break
        words = expanded
    base = " ".join(w for w in words if w not in _QUALIFIERS)
    return _SPELLINGS.get(base, base)


def dtype_fits(param: Param, dtype: np.dtype) -> bool:
    """Whether an array of `dtype` may be passed for pointer parameter `param`."""
    if param.dtypes is None or dtype.name in param.dtypes:
        return True
    return dtype.kind in "iu" and dtype.itemsize == param.vector_bytes
