"""Every catalogue program: the PTX it compiles to, its outputs against NumPy, and what its trace shows."""

from __future__ import annotations

import re

import numpy as np
import pytest

import course
from course.emulator.trace import Trace

from .programs import PROGRAMS, Expect, Program, Tol, assert_same, buffer_ids, check_outputs, execute, line_of

BY_ID = [pytest.param(p, id=p.id) for p in PROGRAMS]
MEMORY = ["global", "shared", "local", "const"]


def ptx_of(program: Program) -> str:
    """The program's PTX; skips a program whose optional header NVRTC cannot find here."""
    try:
        compiled = course.compiler.compile_ptx(
            program.source, options=program.options, name_expressions=program.name_expressions
        )
    except course.CompileError as exc:
        if program.needs_header and "cannot open source file" in str(exc):
            pytest.skip(f"NVRTC here has no {program.needs_header}")
        raise
    return compiled.ptx


@pytest.mark.parametrize("program", BY_ID)
def test_ptx_has_the_instructions_under_test(program: Program) -> None:
    ptx = ptx_of(program)
    missing = [m for m in program.ptx_must_contain if m not in ptx]
    assert not missing, f"{program.id}: the compiler did not emit {missing}"
    unwanted = [m for m in program.ptx_must_not_contain if m in ptx]
    assert not unwanted, f"{program.id}: the compiler emitted {unwanted}"


@pytest.mark.parametrize("program", BY_ID)
def test_outputs_match_numpy(
    program: Program, emulator_backend: course.Device, rng: np.random.Generator
) -> None:
    ptx_of(program)
    check_outputs(program, execute(program, rng))


@pytest.mark.parametrize("program", BY_ID)
def test_trace_shows_the_accesses(
    program: Program, emulator_backend: course.Device, rng: np.random.Generator
) -> None:
    ptx_of(program)
    run = execute(program, rng, trace=True)
    assert run.trace is not None
    check_trace_basics(run.trace, program)
    for expect in program.expect:
        check_expect(run.trace, program, expect)
    if program.check_trace is not None:
        program.check_trace(run.trace, run.launch)
    check_outputs(program, run)  # a traced launch runs for real


@pytest.mark.gpu
@pytest.mark.parametrize("program", BY_ID)
def test_backend_agrees_with_emulator(
    program: Program, backend: course.Device, rng: np.random.Generator
) -> None:
    """The same inputs on the active backend (a GPU through CuPy) and on the emulator give the same outputs."""
    ptx_of(program)
    seed = int(rng.integers(2**31))
    here = execute(program, np.random.default_rng(seed))
    previous = course.device().backend
    course.set_backend("emulator")
    try:
        emulated = execute(program, np.random.default_rng(seed))
    finally:
        course.set_backend(previous)
    expected = program.reference(here.launch.args)
    for i, got in here.outputs.items():
        want = expected.get(i)
        rtol, atol = (want.rtol, want.atol) if isinstance(want, Tol) else (program.rtol, program.atol)
        label = f"{program.id}: output {i} ({here.names[i]}) on {backend.backend} vs the emulator"
        assert_same(label, got, emulated.outputs[i], 2 * rtol, 2 * atol, i in program.unordered)


# ---------------------------------------------------------------- trace checks


def check_trace_basics(trace: Trace, program: Program) -> None:
    """Facts every trace must show, whatever the program."""
    assert len(trace) > 0
    lines = program.source.splitlines()
    assert [s.rstrip() for s in trace.source][: len(lines)] == [s.rstrip() for s in lines]
    assert np.all(trace.mask != 0), "an event with no active lane"
    check_lanes_and_buffers(trace)
    check_lines(trace, lines)


def check_lanes_and_buffers(trace: Trace) -> None:
    """Memory events: per-lane columns set exactly on active lanes, buffers of the event's space, in bounds."""
    mem = trace.where(space=MEMORY)
    assert len(mem) > 0
    on = mem.lanes()
    np.testing.assert_array_equal(mem.addr >= 0, on, err_msg="addr must be -1 exactly on inactive lanes")
    np.testing.assert_array_equal(mem.buffer >= 0, on, err_msg="buffer must be set on active lanes")
    spaces = np.array([b.space for b in trace.buffers])
    event_space = np.broadcast_to(mem.space[:, None], mem.buffer.shape)[on]
    np.testing.assert_array_equal(spaces[mem.buffer[on]], event_space, err_msg="a buffer of another space")
    glob = trace.where(space="global")
    for b in trace.buffers:
        if b.space == "global" and b.nbytes and b.itemsize:
            mine = np.isin(glob.buffer, buffer_ids(trace, b.name)) & glob.lanes()
            assert np.all((glob.index[mine] >= 0) & (glob.index[mine] < b.nbytes // b.itemsize)), b.name


def check_lines(trace: Trace, lines: list[str]) -> None:
    """Events carry .cu lines (0 only for the compiler's `.loc 1 0`); an access's line shows an access."""
    placed = trace.select(trace.space != "param")
    assert np.all((placed.line >= 0) & (placed.line <= len(lines))), "a line outside the .cu source"
    assert np.mean(placed.line > 0) > 0.5, "most events should have a .cu line"
    accesses = trace.where(space=["global", "shared"], op=["ld", "st", "atom", "red"])
    accesses = accesses.select(accesses.line > 0)
    pairs = {
        (int(n), int(b))
        for n, row, on in zip(accesses.line, accesses.buffer, accesses.lanes())
        for b in set(row[on].tolist())
    }
    bad = sorted((n, trace.buffers[b].name, lines[n - 1]) for n, b in pairs
                 if not looks_like_access(lines[n - 1], trace.buffers[b].name))  # fmt: skip
    assert not bad, f"memory events attributed to lines with no access: {bad}"


def looks_like_access(text: str, buffer: str) -> bool:
    """A source line that indexes, dereferences, calls an atomic, or names the (demangled) variable."""
    mangled = re.search(r"E(\d+)(\w+)$", buffer)
    name = mangled[2] if mangled and len(mangled[2]) == int(mangled[1]) else buffer
    return bool(re.search(rf"\[|\*|atomic|\b{re.escape(name)}\b", text))


def check_expect(trace: Trace, program: Program, expect: Expect) -> None:
    sel = trace.where(**expect.where)
    if expect.buffer is not None:
        ids = buffer_ids(trace, expect.buffer)
        assert ids, f"no buffer {expect.buffer!r}; the trace has {[b.name for b in trace.buffers]}"
        sel = sel.select((np.isin(sel.buffer, ids) & sel.lanes()).any(axis=1))
    what = f"{expect.where} on {expect.buffer or 'any buffer'}"
    if expect.tag is not None:
        want = line_of(program.source, expect.tag)
        lines = sorted(set(sel.line.tolist()))
        assert want in lines, f"no event {what} on line {want}; there are some on lines {lines}"
        assert not expect.only or lines == [want], f"events {what} on lines {lines}, not only on {want}"
        sel = sel.where(line=want)
    assert len(sel) > 0, f"no event {what}"
    if expect.events is not None:
        assert len(sel) == expect.events, f"{len(sel)} events {what}, expected {expect.events}"
