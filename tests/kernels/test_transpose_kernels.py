"""The transpose kernels beyond what the topic lists: the copy, blocks and tiles the topic does not
offer (the tuning script's configurations), against NumPy at awkward shapes; their bank conflicts
and 16-byte accesses counted from the trace.

The topic's versions at its own blocks are tested through the topic (tests/test_topics.py, the
article's bugs and the story's counts in tests/test_transpose.py); this file launches kernels by
hand with the launch rules of docs/notes/transpose.md: template arguments from the block, the
grid from the block (or tile) and the shape.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import course
from course import analysis
from course.transpose import topic

KERNEL_FILE = "transpose.cu"
TYPES = {np.dtype(np.float32): "float", np.dtype(np.int32): "int"}

# versions that take any 2-D block: (name, grid laid over the output rather than the input)
ANY_BLOCK = {"copy": False, "transpose_naive": False, "transpose_naive_cols": True,
             "transpose_tiled": False, "transpose_padded": False}  # fmt: skip
ANY_BLOCKS = [(32, 8), (32, 32), (16, 16), (8, 4), (64, 16), (1, 32), (128, 1), (32, 6)]
ROWS_BLOCKS = [(t, r) for t in (16, 32, 64) for r in (1, 2, 4, 8, 16, 32, 64) if r <= t and t * r <= 1024]


def _in_topic(name: str, block: tuple[int, int]) -> bool:
    """Whether the topic lists this kernel instance at this block (then test_topics.py runs it)."""
    if name == "copy":
        return False
    base = name.split("<")[0]
    v = topic.version(base)
    return (
        block in v.blocks and (base == name or topic.version(base).instance_for(block) == name) and v.listed
    )


VEC_CASES = [  # (tile rows, tile columns, rows, vec): block (32 // vec, rows)
    *((t, t, r, v) for t in (32, 64) for v in (1, 2, 4) for r in (4, 8, 16, 32, 64)
      if r <= t and (32 // v) * r <= 1024),
    (32, 64, 8, 4), (64, 32, 16, 4), (64, 128, 32, 2), (128, 64, 8, 4), (32, 32, 1, 4),
]  # fmt: skip
GROUPED_CASES = [
    (32, 32, 8, 4, 1),
    (32, 32, 8, 4, 3),
    (64, 64, 16, 4, 4),
    (32, 32, 32, 1, 2),
    (64, 32, 16, 4, 5),
    (32, 32, 8, 1, 1024),  # taller than any matrix here: whole tile columns
]


def _template_names() -> tuple[str, ...]:
    names = [f"transpose_article<{b}>" for b in (16, 32)]
    names += [f"transpose_rows<{t}, {r}>" for t, r in ROWS_BLOCKS]
    names += [f"transpose_vec<{tr}, {tc}, {r}, {v}>" for tr, tc, r, v in VEC_CASES]
    names += [f"transpose_grouped<{tr}, {tc}, {r}, {v}, {g}>" for tr, tc, r, v, g in GROUPED_CASES]
    return tuple(names)


@functools.cache
def _module(dtype: np.dtype) -> course.Module:
    return course.Module.from_file(
        KERNEL_FILE, options=(f"-DELEM={TYPES[dtype]}",), name_expressions=_template_names()
    )


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _launch_args(name: str, m: int, n: int, block: tuple[int, int]) -> tuple[str, tuple, int]:
    """Kernel name (with template arguments), grid and dynamic shared bytes of one launch."""
    bx, by = block
    base = name.split("<")[0]
    if base in ANY_BLOCK:
        grid = (_cdiv(m, bx), _cdiv(n, by)) if ANY_BLOCK[base] else (_cdiv(n, bx), _cdiv(m, by))
        shared = {"transpose_tiled": bx * by, "transpose_padded": (bx + 1) * by}.get(base, 0) * 4
        return name, grid, shared
    if base == "transpose_article":  # the tile is the template argument; the grid follows the block
        return name, (_cdiv(n, bx), _cdiv(m, by)), 0
    if base == "transpose_rows":  # block (TILE, ROWS)
        return f"transpose_rows<{bx}, {by}>", (_cdiv(n, bx), _cdiv(m, bx)), 0
    tr, tc = (
        int(x) for x in name.split("<")[1].split(",")[:2]
    )  # <TILE_R, TILE_C, ...>: block (32 / VEC, ROWS)
    if base == "transpose_vec":
        return name, (_cdiv(n, tc), _cdiv(m, tr)), 0
    return name, (_cdiv(n, tc) * _cdiv(m, tr),), 0  # transpose_grouped: a 1-D grid


def _launch(name: str, a: np.ndarray, block: tuple[int, int]) -> tuple:
    """What one launch of version `name` on a takes: kernel, grid, args (with a zeroed output), shared."""
    m, n = a.shape
    full, grid, shared = _launch_args(name, m, n, block)
    out = course.zeros((m, n) if name == "copy" else (n, m), a.dtype)
    return (
        _module(a.dtype).get_function(full),
        grid,
        (course.asarray(a), out, np.int32(m), np.int32(n)),
        shared,
    )


def run(name: str, a: np.ndarray, block: tuple[int, int]) -> np.ndarray:
    """Launch version `name` on the 2-D array a; return what it wrote (n x m; the copy: m x n)."""
    kernel, grid, args, shared = _launch(name, a, block)
    kernel(grid, block, args, shared_mem=shared)
    return course.asnumpy(args[1])


def trace(name: str, a: np.ndarray, block: tuple[int, int], **kw):
    kernel, grid, args, shared = _launch(name, a, block)
    return kernel.trace(grid, block, args, shared_mem=shared, **kw)


def check(name: str, a: np.ndarray, block: tuple[int, int]):
    kernel, grid, args, shared = _launch(name, a, block)
    return kernel.check(grid, block, args, shared_mem=shared)


def _matrix(rng: np.random.Generator, shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-(2**31), 2**31, size=shape, dtype=dtype)


def _reference(name: str, a: np.ndarray) -> np.ndarray:
    return a.copy() if name == "copy" else np.ascontiguousarray(a.T)


def _shapes(tile: int) -> list[tuple[int, int]]:
    """Awkward shapes around one tile: 1 x N, N x 1, tile - 1, tile, tile + 1, and odd ones."""
    return sorted({(1, 1), (1, 2 * tile + 3), (2 * tile + 3, 1), (tile - 1, tile + 1), (tile, tile),
                   (tile + 1, 2 * tile - 1), (3 * tile + 5, tile // 2 + 3), (37, 101)})  # fmt: skip


def _cases():
    for name, shape, block in _all_cases():
        if not _in_topic(name, block):
            yield name, shape, block


def _all_cases():
    yield "copy", (1111, 113), (32, 8)
    for name in ANY_BLOCK:
        for block in ANY_BLOCKS:
            tile = max(block)
            shapes = (
                _shapes(tile)
                if block in ((32, 8), (32, 32))
                else [(1, 1), (tile + 1, 2 * tile + 3), (37, 101)]
            )
            for shape in shapes:
                yield name, shape, block
    for b in (16, 32):
        for shape in _shapes(b):
            yield f"transpose_article<{b}>", shape, (b, b)
        yield f"transpose_article<{b}>", (1111, 113), (b, b)
    yield "transpose_article<32>", (100, 70), (16, 16)  # a square block smaller than the tile is fine
    for t, r in ROWS_BLOCKS:
        for shape in _shapes(t) if r in (1, 8) or t * r == 1024 else [(3 * t + 5, t + 1)]:
            yield "transpose_rows", shape, (t, r)
    for tr, tc, r, v in VEC_CASES:
        t = max(tr, tc)
        shapes = (
            _shapes(t) if (tr, tc, r) == (32, 32, 8) else [(2 * tr + 6, 3 * tc - 2), (tr + 4, 4 * tc + 4)]
        )
        for shape in shapes:
            yield f"transpose_vec<{tr}, {tc}, {r}, {v}>", shape, (32 // v, r)
    for tr, tc, r, v, g in GROUPED_CASES:
        for shape in [*_shapes(max(tr, tc)), (5 * tr + 1, 3 * tc + 4), (8 * tr, 2 * tc)]:
            yield f"transpose_grouped<{tr}, {tc}, {r}, {v}, {g}>", shape, (32 // v, r)


def _id(name: str, shape: tuple[int, int], block: tuple[int, int], dtype: str) -> str:
    return f"{name.replace(' ', '')}-{shape[0]}x{shape[1]}-block={block[0]}x{block[1]}-{dtype}"


CASES = [
    pytest.param(name, shape, block, dtype, id=_id(name, shape, block, dtype))
    for i, (name, shape, block) in enumerate(_cases())
    for dtype in (("float32", "int32") if i % 3 == 0 else ("float32",) if i % 3 == 1 else ("int32",))
]


@pytest.mark.parametrize(("name", "shape", "block", "dtype"), CASES)
def test_matches_numpy(backend, rng, name, shape, block, dtype):
    a = _matrix(rng, shape, np.dtype(dtype))
    np.testing.assert_array_equal(run(name, a, block), _reference(name, a))


CLEAN = {"copy": (32, 8), "transpose_rows": (64, 16), "transpose_vec<32, 32, 8, 4>": (8, 8),
         "transpose_grouped<32, 32, 8, 4, 3>": (8, 8)}  # fmt: skip


@pytest.mark.parametrize("name", CLEAN)
def test_the_checker_finds_nothing(emulator_backend, rng, name):
    a = _matrix(rng, (70, 45), np.dtype(np.float32))
    findings = check(name, a, CLEAN[name])
    assert not findings, str(findings)


@pytest.mark.parametrize(
    ("name", "block", "ways"),
    [
        pytest.param("transpose_rows", (64, 16), 1, id="rows-64x16"),
        *(
            pytest.param(f"transpose_vec<{tr}, {tc}, {r}, {v}>", (32 // v, r), 1, id=f"vec-{tr}x{tc}-{r}-{v}")
            for tr, tc, r, v in [
                (32, 32, 8, 4),
                (32, 32, 8, 2),
                (64, 64, 16, 4),
                (64, 64, 8, 1),
                (32, 64, 8, 4),
                (128, 64, 8, 4),
            ]
        ),
    ],
)
def test_bank_conflicts_of_the_tile_read(emulator_backend, rng, name, block, ways):
    """Tiles the topic does not list (its own: tests/test_transpose.py): conflict-free both ways."""
    a = _matrix(rng, (128, 128), np.dtype(np.float32))
    t = trace(name, a, block, blocks=[0], spaces={"shared"})
    bc = analysis.bank_conflicts(t)
    assert bc[bc.op == "ld"].ways.max() == ways
    assert bc[bc.op == "st"].ways.max() == 1  # writing the tile by row never conflicts


def test_16_byte_accesses_take_16_sectors_per_request(emulator_backend, rng):
    """VEC 4: a warp asks for 512 bytes at a time, 16 sectors, both ways."""
    a = _matrix(rng, (256, 256), np.dtype(np.float32))
    s = analysis.sectors(trace("transpose_vec<32, 32, 8, 4>", a, (8, 8), blocks=[0, 1], spaces={"global"}))
    assert set(s.sectors.tolist()) == set(s.ideal.tolist()) == {16}
    assert set(s.lane_bytes.tolist()) == {16}


def test_vector_accesses_fall_back_to_words_on_odd_rows(emulator_backend, rng):
    """n = 33 is not a multiple of 4: the loads go word by word; m = 64 is, so the stores stay vectors."""
    a = _matrix(rng, (64, 33), np.dtype(np.float32))
    t = trace("transpose_vec<32, 32, 8, 4>", a, (8, 8), spaces={"global"})
    s = analysis.sectors(t)
    assert set(s.lane_bytes[s.op == "ld"].tolist()) == {4}
    assert set(s.lane_bytes[s.op == "st"].tolist()) == {16}
    np.testing.assert_array_equal(run("transpose_vec<32, 32, 8, 4>", a, (8, 8)), a.T)
