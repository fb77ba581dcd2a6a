"""CUDA C -> PTX with NVRTC (from the nvidia-cuda-nvrtc wheel): no GPU or driver needed.

The PTX carries line info, so the emulator can map every instruction back to its
`.cu` line. Results are cached on disk by a hash of everything that affects them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .errors import CompileError

DEFAULT_ARCH = "compute_90"
KERNELS = resources.files("course") / "kernels"


@dataclass(frozen=True)
class Compiled:
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
) -> Compiled:
    """Compile `source` to PTX, or raise CompileError with NVRTC's log and the source lines."""
    if not isinstance(source, str) or not source.strip():
        raise TypeError("source must be a non-empty string of CUDA C")
    opts = compile_options(tuple(options))
    key = hashlib.sha256(
        json.dumps(
            [source, filename, opts, list(name_expressions), nvrtc_version(), _course_headers(source)]
        ).encode()
    ).hexdigest()
    path = cache_dir() / "ptx" / f"{key}.json"
    try:
        hit = json.loads(path.read_text())
        return Compiled(source, filename, opts, hit["ptx"], hit["lowered_names"])
    except (OSError, ValueError, KeyError):
        pass
    ptx, lowered = _nvrtc(source, filename, opts, tuple(name_expressions))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"ptx": ptx, "lowered_names": lowered}))
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache only costs time
    return Compiled(source, filename, opts, ptx, lowered)


def _course_headers(source: str) -> list[str]:
    """The text of every course header the source includes (they change the PTX, so the cache key)."""
    names = re.findall(r'^\s*#\s*include\s*"([^"]+)"', source, re.M)
    return [(KERNELS / n).read_text() for n in names if (KERNELS / n).is_file()]


def _nvrtc(
    source: str, filename: str, opts: tuple[str, ...], names: tuple[str, ...]
) -> tuple[str, dict[str, str]]:
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        for name in names:
            _check(nvrtc.nvrtcAddNameExpression(prog, name.encode())[0], name)
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        # NVRTC writes into the buffer it is given: never hand it a bytes object (an empty log
        # is one byte, and b" " * 1 is CPython's shared b" ", which it would overwrite)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(max(size, 1))
        nvrtc.nvrtcGetProgramLog(prog, log)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(explain_log(bytes(log).decode(errors="replace").rstrip("\x00 \n"), source))
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = bytearray(size)
        nvrtc.nvrtcGetPTX(prog, ptx)
        lowered = {}
        for name in names:
            err, low = nvrtc.nvrtcGetLoweredName(prog, name.encode())
            _check(err, name)
            lowered[name] = low.decode()
        return bytes(ptx).decode().rstrip("\x00"), lowered
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _check(err: object, what: str) -> None:
    from cuda.bindings import nvrtc

    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC failed at {what}: {nvrtc.nvrtcGetErrorString(err)[1].decode()}")


_LOG_LINE = re.compile(r"^(?P<file>[^\s(]+)\((?P<line>\d+)\): (?P<kind>error|warning)", re.M)


def explain_log(log: str, source: str) -> str:
    """NVRTC's log followed by each source line it complains about."""
    lines = source.splitlines()
    shown = []
    for m in _LOG_LINE.finditer(log):
        n = int(m["line"])
        if 1 <= n <= len(lines) and n not in shown:
            shown.append(n)
    log_lines = log.splitlines()
    if len(log_lines) > 40:  # a cascade of errors buries the first, which is the one to fix
        log = "\n".join(log_lines[:40] + [f"... ({len(log_lines) - 40} more lines of NVRTC's log)"])
    text = "NVRTC could not compile the kernel:\n" + log
    for n in shown:
        text += f"\n  line {n}: {lines[n - 1].strip()}"
    return text


def read_kernel(name: str) -> str:
    """The text of `course/kernels/<name>`; the error lists the files there."""
    path = KERNELS / name
    if not path.is_file():
        have = sorted(p.name for p in KERNELS.iterdir() if p.name.endswith((".cu", ".cuh")))
        raise FileNotFoundError(f"no kernel file {name!r} in course/kernels; there are: {have}")
    return path.read_text()
