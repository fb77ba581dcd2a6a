"""Registers per thread, as the compiler allocates them for a real architecture, without a GPU.

NVRTC compiles the source to a cubin (machine code) for e.g. sm_75; the cubin's ELF holds, for
every kernel, an EIATTR_REGCOUNT attribute in its `.nv.info` section: the registers each thread
of that kernel takes, the number the occupancy calculation needs. A GPU reports the same number
as the loaded function's `num_regs` (tests/test_occupancy.py compares them on a GPU).
Results are cached on disk beside the PTX cache, keyed by everything that affects them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import struct

from . import compiler
from .errors import CompileError

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
    key = hashlib.sha256(
        json.dumps([source, filename, opts, list(names), compiler.nvrtc_version(), _headers(source)]).encode()
    ).hexdigest()
    path = compiler.cache_dir() / "regs" / f"{key}.json"
    try:
        return tuple(sorted(json.loads(path.read_text()).items()))
    except (OSError, ValueError):
        pass
    counts = read_regcounts(compile_cubin(source, filename, opts, names))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(counts))
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs time
    return tuple(sorted(counts.items()))


def _headers(source: str) -> list[str]:
    """The text of every course header the source includes (they change the code, so the key)."""
    names = re.findall(r'^\s*#\s*include\s*"([^"]+)"', source, re.M)
    return [(compiler.KERNELS / n).read_text() for n in names if (compiler.KERNELS / n).is_file()]


def compile_cubin(source: str, filename: str, opts: tuple[str, ...], names: tuple[str, ...]) -> bytes:
    """NVRTC's cubin for `source` compiled with `opts` (which name a real -arch=sm_XY)."""
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        for name in names:
            _check(nvrtc.nvrtcAddNameExpression(prog, name.encode())[0], name)
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = bytearray(max(size, 1))  # a fresh buffer: NVRTC writes into it
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise CompileError(
                compiler.explain_log(bytes(log).decode(errors="replace").rstrip("\x00 \n"), source)
            )
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = bytearray(size)
        _check(nvrtc.nvrtcGetCUBIN(prog, cubin)[0], "nvrtcGetCUBIN")
        return bytes(cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _check(err: object, what: str) -> None:
    from cuda.bindings import nvrtc

    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC failed at {what}: {nvrtc.nvrtcGetErrorString(err)[1].decode()}")


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
