"""CUDA C -> PTX with NVRTC (from the nvidia-cuda-nvrtc wheel): no GPU or driver needed.

The PTX carries line info, so the emulator can map every instruction back to its
`.cu` line. Results are cached on disk by a hash of everything that affects them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from .errors import CompileError

T = TypeVar("T")
DEFAULT_ARCH = "compute_90"
KERNELS = resources.files("course") / "kernels"


@dataclass(frozen=True)
class CompiledPtx:
    """What NVRTC produced for one source: PTX and the mangled names of templates."""

    source: str
    filename: str
    options: tuple[str, ...]
    ptx: str
    lowered_names: dict[str, str]


def cache_dir() -> Path:
    """`COURSE_CACHE_DIR`, else `$XDG_CACHE_HOME/gpu-patterns-course`, else ~/.cache/..."""
    if env := os.environ.get("COURSE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpu-patterns-course"


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return major, minor


def compile_options(options: tuple[str, ...]) -> tuple[str, ...]:
    """The user's options plus line info, CuPy's -ftz=true, the kernels folder and a default target."""
    opts = tuple(options)
    if not any(o.startswith(("-arch", "--gpu-architecture")) for o in opts):
        opts = (f"-arch={DEFAULT_ARCH}",) + opts
    if "-lineinfo" not in opts and "--generate-line-info" not in opts:
        opts += ("-lineinfo",)
    # CuPy compiles every RawModule with -ftz=true (float32 subnormals flush to zero), so the
    # emulator's PTX must be built the same way for both backends to give the same answers
    headers = tuple(f"-I{d}" for d in cuda_include_dirs())
    return opts + ("-ftz=true", f"-I{KERNELS}", *headers)


def cuda_include_dirs() -> tuple[str, ...]:
    """Where CUDA's headers are: the nvidia-cuda-runtime and nvidia-cuda-cccl wheels, else a
    CUDA toolkit (CUDA_PATH, CUDA_HOME). NVRTC alone has no cuda_fp16.h, cooperative_groups.h
    or cuda/std; directories are taken in that order until both kinds are found."""
    roots: list[Path] = []
    try:
        import nvidia

        roots += [Path(r) / "cu13" / "include" for r in nvidia.__path__]
    except ImportError:
        pass
    roots += [Path(os.environ[v]) / "include" for v in ("CUDA_PATH", "CUDA_HOME") if v in os.environ]
    found: list[str] = []
    wanted = {"cuda_fp16.h": False, "nv/target": False, "cuda/std/type_traits": False}
    for root in roots:
        for d in (root, root / "cccl"):
            if d.is_dir() and any((d / name).exists() and not seen for name, seen in wanted.items()):
                found.append(str(d))
                for name in wanted:
                    wanted[name] = wanted[name] or (d / name).exists()
    return tuple(dict.fromkeys(found))


def compile_ptx(
    source: str,
    *,
    filename: str = "kernel.cu",
    options: tuple[str, ...] = (),
    name_expressions: tuple[str, ...] = (),
) -> CompiledPtx:
    """Compile `source` to PTX, or raise CompileError with NVRTC's log and the source lines."""
    if not isinstance(source, str) or not source.strip():
        raise TypeError("source must be a non-empty string of CUDA C")
    opts = compile_options(tuple(options))
    names = tuple(name_expressions)

    def compile_it() -> dict[str, Any]:
        ptx, lowered = _nvrtc(source, filename, opts, names, _read_ptx)
        return {"ptx": ptx, "lowered_names": lowered}

    hit = cached(
        "ptx",
        cache_key(source, filename, opts, names),
        compile_it,
        lambda v: isinstance(v, dict) and {"ptx", "lowered_names"} <= v.keys(),
    )
    return CompiledPtx(source, filename, opts, hit["ptx"], hit["lowered_names"])


def compile_cubin(source: str, filename: str, opts: tuple[str, ...], names: tuple[str, ...]) -> bytes:
    """NVRTC's machine code (a cubin) for `source` compiled with `opts` as given (they name a real
    architecture, -arch=sm_XY): what the register counts are read from. Not cached."""
    return _nvrtc(source, filename, opts, names, _read_cubin)


def cache_key(source: str, filename: str, opts: tuple[str, ...], names: tuple[str, ...]) -> str:
    """A hash of everything that changes what NVRTC makes of a source: the source, its options,
    its name expressions, NVRTC's version and the course headers it includes."""
    parts = [source, filename, list(opts), list(names), nvrtc_version(), _course_headers(source)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def cached(kind: str, key: str, make: Callable[[], Any], valid: Callable[[Any], bool] = bool) -> Any:
    """`make()`'s JSON-able result, kept on disk under cache_dir()/kind/key.json; a cache that
    cannot be read or written, or holds what `valid` refuses, only costs time."""
    path = cache_dir() / kind / f"{key}.json"
    try:
        hit = json.loads(path.read_text())
        if valid(hit):
            return hit
    except (OSError, ValueError):
        pass
    value = make()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(value))
        tmp.replace(path)
    except OSError:
        pass
    return value


def _course_headers(source: str) -> list[str]:
    """The text of every course header the source includes (they change the PTX, so the cache key)."""
    names = re.findall(r'^\s*#\s*include\s*"([^"]+)"', source, re.M)
    return [(KERNELS / n).read_text() for n in names if (KERNELS / n).is_file()]


def _nvrtc(
    source: str, filename: str, opts: tuple[str, ...], names: tuple[str, ...], read: Callable[..., T]
) -> T:
    """Compile with NVRTC and `read(nvrtc, program, names)` what is wanted of the program; a
    compile error raises CompileError with the first error explained and the whole log."""
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], [])
    _raise_on_nvrtc_error(err, "nvrtcCreateProgram")
    try:
        for name in names:
            _raise_on_nvrtc_error(nvrtc.nvrtcAddNameExpression(prog, name.encode())[0], name)
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        # NVRTC writes into the buffer it is given: never hand it a bytes object (an empty log
        # is one byte, and b" " * 1 is CPython's shared b" ", which it would overwrite)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(max(size, 1))
        nvrtc.nvrtcGetProgramLog(prog, log)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            text = bytes(log).decode(errors="replace").rstrip("\x00 \n")
            raise CompileError(explain_log(text, source, filename), log=text)
        return read(nvrtc, prog, names)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _read_ptx(nvrtc: Any, prog: Any, names: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """The PTX and the mangled name of every name expression."""
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = bytearray(size)
    nvrtc.nvrtcGetPTX(prog, ptx)
    lowered = {}
    for name in names:
        err, low = nvrtc.nvrtcGetLoweredName(prog, name.encode())
        _raise_on_nvrtc_error(err, name)
        lowered[name] = low.decode()
    return bytes(ptx).decode().rstrip("\x00"), lowered


def _read_cubin(nvrtc: Any, prog: Any, names: tuple[str, ...]) -> bytes:
    _, size = nvrtc.nvrtcGetCUBINSize(prog)
    cubin = bytearray(size)
    _raise_on_nvrtc_error(nvrtc.nvrtcGetCUBIN(prog, cubin)[0], "nvrtcGetCUBIN")
    return bytes(cubin)


def _raise_on_nvrtc_error(err: object, what: str) -> None:
    from cuda.bindings import nvrtc

    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC failed at {what}: {nvrtc.nvrtcGetErrorString(err)[1].decode()}")


_ENTRY = re.compile(
    r"^(?P<file>\S.*?)\((?P<line>\d+)\): (?P<kind>catastrophic error|error|warning)(?P<rest>.*)$"
)


def explain_log(log: str, source: str, filename: str = "kernel.cu") -> str:
    """The first error of NVRTC's log, its source line with a caret, and how many more there are
    (the follow-on errors and warnings a first mistake brings are in the whole log)."""
    entries: list[tuple[re.Match[str], list[str]]] = []
    for line in log.splitlines():
        if m := _ENTRY.match(line):
            entries.append((m, []))
        elif (
            entries
            and line.strip()
            and not line.startswith(("Remark", "Note #"))
            and "detected in the" not in line
        ):
            entries[-1][1].append(line)
    errors = [e for e in entries if e[0]["kind"] != "warning"]
    if not errors:
        return "NVRTC could not compile the kernel:\n" + log
    head, body = errors[0]
    text = [f"{Path(head['file']).name}({head['line']}): {head['kind']}{head['rest']}"]
    n = int(head["line"])
    carets = [i for i, ln in enumerate(body) if ln.strip() == "^"]
    if carets and carets[0] > 0:  # NVRTC echoes the line, then a caret under the spot
        echo, caret = body[carets[0] - 1], body[carets[0]].index("^")
        text += [f"  {ln.strip()}" for ln in body[: carets[0] - 1]]
        code = echo.strip()
        col = caret - (len(echo) - len(echo.lstrip()))
        prefix = f"  line {n}: "
        text += [prefix + code, " " * (len(prefix) + max(col, 0)) + "^"]
        at_start = col <= 0
    else:
        text += [f"  {ln.strip()}" for ln in body]
        at_start = False
    lines = source.splitlines()
    if 'expected a ";"' in head["rest"] and at_start and head["file"] == filename:
        before = [k for k in range(min(n - 1, len(lines)), 0, -1) if lines[k - 1].strip()]
        if before:  # NVRTC points at the token after the gap: the line before is where it goes
            text.append(
                f"  (the end of line {before[0]} is where it is missing: `{lines[before[0] - 1].strip()}`)"
            )
    more = [f"{len(errors) - 1} more error{'s' * (len(errors) > 2)}"] if len(errors) > 1 else []
    warnings = len(entries) - len(errors)
    more += [f"{warnings} warning{'s' * (warnings > 1)}"] if warnings else []
    whole = "print(course.errors.compile_log()) shows NVRTC's whole log"
    text.append(f"({' and '.join(more)} after it, often from the first: {whole})" if more else f"({whole})")
    return "\n".join(text)


def read_kernel(name: str) -> str:
    """The text of `course/kernels/<name>`; the error lists the files there."""
    path = KERNELS / name
    if not path.is_file():
        have = sorted(p.name for p in KERNELS.iterdir() if p.name.endswith((".cu", ".cuh")))
        raise FileNotFoundError(f"no kernel file {name!r} in course/kernels; there are: {have}")
    return path.read_text()
