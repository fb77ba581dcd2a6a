"""Registers per thread, as the compiler allocates them for a real architecture, without a GPU.

NVRTC compiles the source to a cubin (machine code) for e.g. sm_75; the cubin's ELF holds, for
every kernel, an EIATTR_REGCOUNT attribute in its `.nv.info` section: the registers each thread
of that kernel takes, the number the occupancy calculation needs. A GPU reports the same number
as the loaded function's `num_regs` (tests/test_occupancy.py compares them on a GPU).
Results are cached on disk beside the PTX cache, keyed by everything that affects them.
"""

from __future__ import annotations

import functools
import struct

from . import compiler

EIATTR_REGCOUNT = 0x2F  # in `.nv.info`: (symbol index, registers) of one kernel
_EIFMT_NVAL, _EIFMT_BVAL, _EIFMT_HVAL, _EIFMT_SVAL = 1, 2, 3, 4  # how an attribute's value is stored
_SHT_SYMTAB = 2


def registers(
    source: str, *, filename: str, options: tuple[str, ...], name_expressions: tuple[str, ...], arch: str
) -> dict[str, int]:
    """Registers per thread of every kernel in `source` compiled for `arch` ("sm_90"), by the
    kernel's mangled name (the name in the PTX). `options` are the module's (an -arch among them
    is replaced by `arch`)."""
    if not arch.startswith("sm_"):
        raise ValueError(f"arch must name a real architecture such as 'sm_90', not {arch!r}")
    kept = tuple(o for o in options if not o.startswith(("-arch", "--gpu-architecture")))
    return dict(_registers(source, filename, kept, tuple(name_expressions), arch))


@functools.lru_cache(maxsize=64)
def _registers(
    source: str, filename: str, options: tuple[str, ...], names: tuple[str, ...], arch: str
) -> tuple[tuple[str, int], ...]:
    opts = compiler.compile_options((f"-arch={arch}", *options))
    counts = compiler.cached(
        "regs",
        compiler.cache_key(source, filename, opts, names),
        lambda: read_regcounts(compiler.compile_cubin(source, filename, opts, names)),
        lambda v: isinstance(v, dict),
    )
    return tuple(sorted(counts.items()))


def read_regcounts(cubin: bytes) -> dict[str, int]:
    """Registers per thread of each kernel in a cubin (a 64-bit little-endian ELF), by name."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF: a cubin from NVRTC is one")
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]

    def body(s: tuple[int, ...]) -> bytes:
        return cubin[s[4] : s[4] + s[5]]

    def cstr(table: bytes, at: int) -> str:
        return table[at : table.index(b"\0", at)].decode()

    names = body(sections[shstrndx])
    symtab = next(s for s in sections if s[1] == _SHT_SYMTAB)
    symbols, strtab = body(symtab), body(sections[symtab[6]])
    symbol_names = [cstr(strtab, struct.unpack_from("<I", symbols, i)[0]) for i in range(0, len(symbols), 24)]
    info = next((body(s) for s in sections if cstr(names, s[0]) == ".nv.info"), b"")
    counts: dict[str, int] = {}
    at = 0
    while at + 2 <= len(info):  # records: format byte, attribute byte, then the value
        fmt, attr = info[at], info[at + 1]
        if fmt == _EIFMT_SVAL:
            (size,) = struct.unpack_from("<H", info, at + 2)
            if attr == EIATTR_REGCOUNT:
                symbol, regs = struct.unpack_from("<II", info, at + 4)
                counts[symbol_names[symbol]] = regs
            at += 4 + size
        elif fmt in (_EIFMT_NVAL, _EIFMT_BVAL, _EIFMT_HVAL):
            at += 4
        else:
            raise ValueError(f"unknown .nv.info record format {fmt} at byte {at}")
    return counts
