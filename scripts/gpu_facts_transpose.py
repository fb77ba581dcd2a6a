"""The hardware facts notebook 02 (transpose) states that no notebook cell prints, read on the GPU machine.

    python3 scripts/gpu_facts_transpose.py OUT_DIR

1. The compiled code (SASS) of the kernels the bytes-in-flight section times, read with
   `cuobjdump -sass` from the cubin the course's NVRTC makes for this GPU's architecture: how many
   global loads (LDG) each thread issues before the first instruction that uses one (a shared
   store STS, or the copy's global store STG), how the loads fall into batches, and the most loads
   a thread has on their way at once: by the instruction order (a load is out until the first
   instruction that reads its register) and by the scoreboards of the instructions' control bits
   (a load is out until an instruction waits on its scoreboard). The notebook says: transpose_rows
   32×8 issues its 4 loads before its first STS; 64×8 issues 4, waits for the first alone (its
   scoreboard), then issues the other 4: up to 7 out at once; transpose_vec 32×16 issues all 8
   first; the copy and the one-word kernels 1. Needs no GPU (NVRTC, cuobjdump and nvdisasm only):
   run it anywhere to check the compiler's side.
2. On a GPU: the in-flight table's timings repeated, so that the spread of "% of copy" is known
   (the notebook compares rows a few % apart).
3. On a GPU with ncu: the warps' stall reasons (barrier against long scoreboard, i.e. waiting for a
   load) of transpose_padded at 32×32 and 32×8, the pair the notebook explains by barrier phases.

Prints everything and writes OUT_DIR/gpu_facts_transpose.md. Whatever cannot run says why, loudly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))  # scripts/facts.py, when loaded by path

# (label, name expression or extern "C" name): the rows of the notebook's in-flight tables
SASS_KERNELS = (
    ("copy", "copy"),
    ("transpose_padded", "transpose_padded"),
    ("transpose_rows 32×32", "transpose_rows<32, 32>"),
    ("transpose_rows 32×16", "transpose_rows<32, 16>"),
    ("transpose_rows 32×8", "transpose_rows<32, 8>"),
    ("transpose_rows 64×8", "transpose_rows<64, 8>"),
    ("transpose_vec 32×16", "transpose_vec<64, 64, 16, 1>"),
    ("transpose_grouped 32×16", "transpose_grouped<64, 64, 16, 1, 1024>"),
)
TEMPLATES = tuple(expr for _, expr in SASS_KERNELS if "<" in expr)

lines_md: list[str] = []


def say(text: str = "") -> None:
    print(text, flush=True)
    lines_md.append(text)


def gpu_arch() -> tuple[str, str]:
    """('sm_90', where it came from): the GPU's compute capability, else sm_90 (H100/H200)."""
    try:
        import cupy

        cc = cupy.cuda.Device(0).compute_capability
        return f"sm_{cc}", f"the GPU ({cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()})"
    except Exception as exc:  # no GPU here: the compiler's side still holds for Hopper
        return "sm_90", f"no GPU ({type(exc).__name__}): sm_90, the H100/H200 architecture"


def find_tool(name: str) -> str | None:
    for cand in (os.environ.get(name.upper()), shutil.which(name), f"/usr/local/cuda/bin/{name}"):
        if cand and Path(cand).exists():
            return cand
    return None


def sass_of_course_kernels(arch: str, keep: Path | None = None) -> dict[str, list[str]]:
    """transpose.cu (float elements, every template the tables time) for `arch`: each function's
    SASS (the whole listing, with the encodings, kept in `keep` if given)."""
    from course import compiler
    from course.sass import disassemble

    opts = compiler.compile_options((f"-arch={arch}", "-DELEM=float"))
    return disassemble(
        compiler.compile_cubin(compiler.read_kernel("transpose.cu"), "transpose.cu", opts, TEMPLATES),
        keep=keep,
    )


def mangled_names() -> dict[str, str]:
    """Label -> the kernel's name in the cubin (mangled for templates)."""
    from course import compiler

    src = compiler.read_kernel("transpose.cu")
    lowered = compiler.compile_ptx(src, filename="transpose.cu", options=("-DELEM=float",),
                                   name_expressions=TEMPLATES).lowered_names  # fmt: skip
    return {label: lowered.get(expr, expr) for label, expr in SASS_KERNELS}


def part_sass() -> None:
    from course.sass import load_batches, outstanding_by_scoreboard, sass_with_control

    arch, where = gpu_arch()
    say("## 1. Loads in flight together, from the SASS")
    say()
    say(f"Architecture {arch} (from {where}); cubin from the course's NVRTC (`course.compiler.compile_cubin`), "
        "float elements, read with `cuobjdump -sass`.")  # fmt: skip
    say()
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "sass.txt"
        try:
            funcs = sass_of_course_kernels(arch, keep=listing)
        except Exception as exc:
            say(f"**NOT CHECKED**: {type(exc).__name__}: {exc}")
            return
        encoded = sass_with_control(listing.read_text())
    names = mangled_names()
    say("| kernel | LDG | STS | STG | BAR | loads before the first use | batches of loads | most loads out: "
        "by order | by scoreboard |")  # fmt: skip
    say("|---|---|---|---|---|---|---|---|---|")
    found = {}
    for label, _ in SASS_KERNELS:
        code = funcs.get(names[label])
        if code is None:
            say(f"| {label} | not in the cubin ({names[label]}) | | | | | | | |")
            continue
        f = load_batches(code)
        most, agrees = outstanding_by_scoreboard(encoded.get(names[label], []))
        f["most out, scoreboard"] = most if agrees else None
        found[label] = f
        board = f"{most}" if agrees else f"{most} (**the decoding disagrees with the registers: ignore**)"
        say(f"| {label} | {f['LDG']} | {f['STS']} | {f['STG']} | {f['BAR']} | {f['before first use']} | "
            f"{' + '.join(map(str, f['batches']))} | {f['most out']} | {board} |")  # fmt: skip
    say()
    expect = {"copy": 1, "transpose_padded": 1, "transpose_rows 32×32": 1, "transpose_rows 32×16": 2,
              "transpose_rows 32×8": 4, "transpose_rows 64×8": 4, "transpose_vec 32×16": 8}  # fmt: skip
    for label, want in expect.items():
        got = found.get(label, {}).get("before first use")
        verdict = "as the notebook says" if got == want else "**DIFFERS FROM THE NOTEBOOK: fix its text**"
        say(f"- {label}: {got} loads before the first use (notebook: {want}): {verdict}")
    rows64 = found.get("transpose_rows 64×8", {})
    say(
        f"- transpose_rows 64×8 batches: {rows64.get('batches')} (notebook: 4, then 4 more once the first is back)"
        + ("" if rows64.get("batches") == [4, 4] else " **DIFFERS: fix the notebook's sentence**")
    )
    out = (rows64.get("most out"), rows64.get("most out, scoreboard"))
    say(
        f"- transpose_rows 64×8, most loads on their way at once, by order / by scoreboard: {out[0]} / {out[1]} "
        "(notebook: up to 7, 28 B per thread)"
        + ("" if out == (7, 7) else " **DIFFERS: fix the notebook's sentence**")
    )
    say()


def part_timings(repeats: int = 3) -> None:
    say("## 2. The in-flight timings, repeated (8192² float32)")
    say()
    import course
    from course import backend, transpose

    if backend.device().backend != "cupy":
        say("**NOT RUN**: no GPU (the course's backend is the emulator)")
        say()
        return
    runs = [transpose.in_flight_speed() for _ in range(repeats)]
    say(f"{course.device()}; {repeats} runs of `transpose.in_flight_speed()`:")
    say()
    say("| kernel | % of copy, each run | spread |")
    say("|---|---|---|")
    for i, row in enumerate(runs[0]):
        pct = [float(r[i]["% of copy"]) for r in runs]
        say(f"| {row['kernel']} | {', '.join(f'{p:.1f}' for p in pct)} | {max(pct) - min(pct):.1f} |")
    say()


NCU_METRICS = (
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
)
NCU_PROGRAM = """
import numpy as np, course
from course import transpose
a = np.random.default_rng(0).standard_normal((8192, 8192), dtype=np.float32)
for block in ((32, 32), (32, 8)):
    transpose.run("transpose_padded", a, block=block)
transpose.run("transpose_rows", a, block=(32, 8))
"""


def part_ncu() -> None:
    say("## 3. Stall reasons (ncu), transpose_padded 32×32 against 32×8, transpose_rows 32×8")
    say()
    from course import backend

    ncu = find_tool("ncu")
    if backend.device().backend != "cupy" or ncu is None:
        say(f"**NOT RUN**: {'no GPU' if backend.device().backend != 'cupy' else 'ncu not found'}")
        say()
        return
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(NCU_PROGRAM)
    cmd = [ncu, "--csv", "--kernel-name", "regex:transpose_(padded|rows)", "--metrics", ",".join(NCU_METRICS),
           sys.executable, f.name]  # fmt: skip
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT)
    except subprocess.TimeoutExpired:
        say("**NOT FINISHED**: ncu took over 60 s")
        return
    import csv

    lines = [ln for ln in done.stdout.splitlines() if ln.startswith('"')]
    table = list(csv.DictReader(lines))
    rows = [r for r in table if r.get("Metric Name") in NCU_METRICS]
    if not rows:
        say(f"**NO METRICS**: ncu exit {done.returncode}: {(done.stderr or done.stdout).strip()[-600:]}")
        return
    say("Launches in order: padded 32×32, padded 32×8, rows 32×8. Per warp instruction issued, how many "
        "warps were waiting at a barrier, or for a load (long scoreboard); warps active; DRAM throughput:")  # fmt: skip
    say()
    say("```")
    for r in rows:
        say(f"{r.get('ID', '?'):>3}  {r.get('Kernel Name', '?')[:40]:40}  {r.get('Block Size', '?'):14}  "
            f"{r['Metric Name']:75}  {r.get('Metric Value', '?')}")  # fmt: skip
    say("```")
    say()


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    say("# GPU facts for notebook 02 (transpose)")
    say()
    for part in (part_sass, part_timings, part_ncu):
        try:
            part()
        except Exception as exc:  # one part failing must not hide the others
            say(f"**{part.__name__} FAILED**: {type(exc).__name__}: {exc}")
            say()
    say(f"({time.perf_counter() - start:.0f} s)")
    (out / "gpu_facts_transpose.md").write_text("\n".join(lines_md) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
