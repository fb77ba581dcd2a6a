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
    return {**counts, "batches": batches, "before first use": batches[0] if batches else 0}
