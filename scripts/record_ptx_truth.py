"""Record what the active backend gives for every PTX form of tests/emulator/ptx_forms.py.

    PYTHONPATH=. python3 scripts/record_ptx_truth.py [OUT_JSON]

On a GPU (CuPy installed, the default backend) this writes the truth the emulator is tested against,
tests/emulator/ptx_truth.json by default: per form its PTX, its input set, its status (ok, error:
the GPU's compiler rejected it, unsupported) and its outputs' bits; each input set's bits once; the
GPU's name, CuPy, driver and NVRTC versions, the date and this command. COURSE_BACKEND=emulator
records the emulator's answers instead (to check the pipeline: never commit that file).
"""

from __future__ import annotations

import datetime
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import course  # noqa: E402
from course import compiler  # noqa: E402
from tests.emulator import ptx_forms  # noqa: E402

DEFAULT_OUT = REPO / "tests" / "emulator" / "ptx_truth.json"


def machine() -> dict[str, object]:
    """The backend, and on a GPU its name and the CuPy, driver and runtime versions."""
    dev = course.device()
    info: dict[str, object] = {"backend": dev.backend, "device": dev.name}
    try:
        info["nvrtc"] = ".".join(map(str, compiler.nvrtc_version()))
    except Exception as exc:  # the record stands without it
        info["nvrtc"] = f"unknown ({type(exc).__name__})"
    if dev.on_gpu:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        info["device"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        info["compute_capability"] = f"{props['major']}.{props['minor']}"
        info["cupy"] = cupy.__version__
        info["driver"] = cupy.cuda.runtime.driverGetVersion()
        info["runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    return info


def record(out_path: Path, command: str) -> dict[str, object]:
    forms = ptx_forms.all_forms()
    t0 = time.perf_counter()
    results = ptx_forms.run_forms(forms, log=lambda s: print(s, flush=True))
    inputs: dict[str, list[str]] = {}
    entries: dict[str, dict[str, object]] = {}
    for f in forms:
        r = results[f.id]
        if f.input_key not in inputs:
            cols = ptx_forms.make_inputs(f)
            inputs[f.input_key] = [ptx_forms.encode(ptx_forms.ptype(t), c) for t, c in zip(f.ins, cols)]
        entry: dict[str, object] = {"family": f.family, "ptx": ptx_forms.asm_text(f), "inputs": f.input_key,
                                    "out_type": f.out_type.name, "status": r.status}  # fmt: skip
        if r.status == "ok":
            assert r.out is not None
            entry["out"] = ptx_forms.encode(f.out_type, r.out)
        else:
            entry["detail"] = r.detail
        entries[f.id] = entry
    doc = {
        "about": "PTX forms of tests/emulator/ptx_forms.py run on the backend named here; each input "
        "and output column is its storage bits, little-endian, zlib-compressed, base64 "
        "(ptx_forms.decode_column reads one)",
        **machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "seconds": round(time.perf_counter() - t0, 1),
        "inputs": inputs,
        "forms": entries,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=0, sort_keys=False) + "\n")
    return doc


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        print(__doc__)
        return 2
    out = Path(argv[0]) if argv else DEFAULT_OUT
    doc = record(out, "PYTHONPATH=. python3 scripts/record_ptx_truth.py" + (f" {argv[0]}" if argv else ""))
    forms = doc["forms"]
    assert isinstance(forms, dict)
    counts: dict[str, int] = {}
    for e in forms.values():
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    print(f"{len(forms)} forms on {doc['device']} ({doc['backend']}) in {doc['seconds']} s: {counts}")
    for fid, e in forms.items():
        if e["status"] != "ok":
            print(f"  {fid}: {e['status']}: {str(e.get('detail', ''))[:160]}")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
