"""The machine code a GPU runs (SASS), read from a cubin with cuobjdump: each function's
instructions, an instruction's opcode, and the global loads a thread has in flight together.

The emulator runs PTX; ptxas turns PTX into SASS and may fuse, reorder or batch what the PTX
says. The GPU fact scripts (`scripts/gpu_facts_*.py`) read the SASS with these to show it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path


def disassemble(cubin: bytes, keep: Path | None = None) -> dict[str, list[str]]:
    """cuobjdump -sass of a cubin: each function's instructions, by its name in the cubin; the
    whole listing kept in `keep` if given. Raises, saying so, without cuobjdump or functions."""
    if not shutil.which("cuobjdump"):
        raise RuntimeError("NO cuobjdump on PATH: the SASS cannot be read")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernels.cubin"
        path.write_bytes(cubin)
        res = subprocess.run(["cuobjdump", "-sass", str(path)], capture_output=True, text=True, timeout=60)
    if keep is not None:
        keep.write_text(res.stdout + "\n" + res.stderr)
    bodies = functions(res.stdout)
    if not bodies:
        raise RuntimeError(
            f"cuobjdump printed no functions (rc {res.returncode}): {res.stderr.strip()[-300:]}"
        )
    return bodies


def functions(text: str) -> dict[str, list[str]]:
    """Each function's SASS instructions (without the trailing ';'), by its name, from cuobjdump's text."""
    bodies = {}
    for f in re.split(r"\n\s*Function : ", "\n" + text)[1:]:
        name = f.split("\n", 1)[0].strip()
        bodies[name] = [i.strip() for i in re.findall(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);", f)]
    return bodies


def opcode(instr: str) -> str:
    """The opcode of one SASS instruction, without its predicate (@P0 ...)."""
    parts = instr.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


def outstanding_by_order(code: list[str]) -> int:
    """The most global loads a thread has issued and not yet used, at any point of the program: a
    load counts from its LDG to the first instruction that reads (or overwrites) its register."""
    out: set[str] = set()
    most = 0
    for ins in code:
        body = re.sub(r"^@!?P\d\s+", "", ins)
        op, _, operands = body.partition(" ")
        regs = re.findall(r"\bR\d+\b", operands)
        stores = op.startswith(("STS", "STG", "ST.", "ST "))
        out -= set(regs if stores else regs[1:]) | (set() if stores or not regs else {regs[0]})
        if op.startswith("LDG"):
            out.add(regs[0])
            most = max(most, len(out))
    return most


def control(hi: int) -> dict[str, int]:
    """The scheduling fields of an sm_70+ instruction, from the high 64 bits of its 128-bit word:
    bits 105-125 of the instruction (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
    Microbenchmarking", 2018): stall cycles, yield, the scoreboard a variable-latency result sets
    (write barrier, 7 = none), the one a source read releases, and the mask of scoreboards the
    instruction waits for. Checked here against the registers: every use of a loaded register
    waits on that load's scoreboard (`outstanding_by_scoreboard` says when it does not)."""
    c = hi >> 41
    return {"stall": c & 0xF, "write": (c >> 5) & 7, "read": (c >> 8) & 7, "wait": (c >> 11) & 0x3F}


def sass_with_control(text: str) -> dict[str, list[tuple[str, int]]]:
    """Each function's (instruction, high 64 bits of its encoding) from cuobjdump -sass's listing."""
    out = {}
    for f in re.split(r"\n\s*Function : ", "\n" + text)[1:]:
        name = f.split("\n", 1)[0].strip()
        pairs = re.findall(
            r"/\*[0-9a-f]{4,}\*/\s+([^;]*);\s*/\* 0x[0-9a-f]{16} \*/\s*/\* (0x[0-9a-f]{16}) \*/", f
        )
        out[name] = [(ins.strip(), int(hi, 16)) for ins, hi in pairs]
    return out


def outstanding_by_scoreboard(code: list[tuple[str, int]]) -> tuple[int, bool]:
    """(the most global loads on their way at once, by the scoreboards the code waits on; whether
    the decoding agrees with the registers: each instruction that reads a loaded register waits on,
    or has already waited on, that load's scoreboard). DEPBAR.LE SBk, N lowers SBk's count to N."""
    board: dict[int, list[str]] = {}  # scoreboard -> the registers of the loads still counted on it
    most, agrees = 0, True
    for ins, hi in code:
        ctl = control(hi)
        body = re.sub(r"^@!?P\d\s+", "", ins)
        op, _, operands = body.partition(" ")
        regs = re.findall(r"\bR\d+\b", operands)
        for sb in range(6):
            if ctl["wait"] >> sb & 1:
                board.pop(sb, None)
        if op.startswith("DEPBAR") and (m := re.search(r"SB(\d),\s*(\d+)", operands)):
            sb, keep = int(m[1]), int(m[2])
            board[sb] = board.get(sb, [])[len(board.get(sb, [])) - keep :] if keep else []
        read = set(regs if op.startswith(("STS", "STG", "ST.", "ST ")) else regs[1:])
        if any(r in read for regs_on in board.values() for r in regs_on):
            agrees = False
        if op.startswith("LDG") and ctl["write"] != 7:
            board.setdefault(ctl["write"], []).append(regs[0])
            most = max(most, sum(map(len, board.values())))
    return most, agrees


def load_batches(code: list[str]) -> dict[str, object]:
    """LDG / STS / STG / BAR counts, and the loads grouped into batches: a batch ends at the first
    instruction that uses a register an LDG of the batch wrote (a thread stalls there until that
    load is back; the loads issued before it were in flight together)."""
    counts = {
        op: sum(1 for ins in code if re.search(rf"\b{op}\b", ins)) for op in ("LDG", "STS", "STG", "BAR")
    }
    batches: list[int] = []
    pending: set[str] = set()
    size = 0
    for ins in code:
        body = re.sub(r"^@!?P\d\s+", "", ins)
        op, _, operands = body.partition(" ")
        regs = re.findall(r"\bR\d+\b", operands)
        if op.startswith("LDG"):
            size += 1
            pending.add(regs[0])
            continue
        used = set(regs[1:] if not op.startswith(("STS", "STG", "ST.", "ST ")) else regs)
        if size and pending & used:
            batches.append(size)
            size, pending = 0, set()
    if size:
        batches.append(size)
    return {**counts, "batches": batches, "before first use": batches[0] if batches else 0,
            "most out": outstanding_by_order(code)}  # fmt: skip
