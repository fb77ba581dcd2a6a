"""What every `scripts/gpu_facts_<topic>.py` shares: a report of numbered steps (each one reports,
none stops the others) written to OUT/gpu_facts_<topic>.md, and which GPU this is. (Reading the
SASS of a cubin is course/sass.py's. Not a facts script itself: `gpu_session.sh facts` runs
`gpu_facts_*.py` only.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Report:
    """Lines said so far, the steps that failed, and the clock since the script started."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.failed: list[str] = []
        self.t0 = time.time()

    def say(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def step(self, title: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A numbered step: its title as a heading, its time after it, an exception reported as
        FAILED (and remembered) instead of raised."""

        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            def run(*a: Any, **kw: Any) -> Any:
                self.say(f"\n## {title}\n")
                t0 = time.time()
                try:
                    return fn(*a, **kw)
                except Exception as exc:  # every step reports, none stops the others
                    self.failed.append(title)
                    self.say(f"**FAILED**: {type(exc).__name__}: {exc}")
                finally:
                    self.say(f"\n({time.time() - t0:.1f} s)")

            return run

        return wrap

    def left(self, budget_s: float) -> float:
        """Seconds of `budget_s` still left since the script started."""
        return budget_s - (time.time() - self.t0)

    def finish(self, out: Path, name: str) -> int:
        """The closing line, the report written to OUT/<name>.md; the exit status (1: a step failed)."""
        self.say(f"\ntotal {time.time() - self.t0:.0f} s; failed steps: {self.failed or 'none'}")
        (out / f"{name}.md").write_text("\n".join(self.lines) + "\n")
        return 1 if self.failed else 0


def on_gpu() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:
        return False


def gpu_or_die() -> None:
    if not on_gpu():
        raise RuntimeError("NO GPU: cupy.cuda.is_available() is False (or CuPy is missing)")


def describe_gpu(say: Callable[[str], None]) -> None:
    """Say which GPU this is: its name, SMs and compute capability, CuPy's and CUDA's versions."""
    gpu_or_die()
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    cc = f"{props['major']}.{props['minor']}"
    say(f"- GPU: {name}, {props['multiProcessorCount']} SMs, compute capability {cc}")
    say(f"- CuPy {cupy.__version__}, CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()}")


def gpu_arch() -> str:
    """This GPU's architecture ("sm_90"), else sm_90: the H100/H200 the course is measured on."""
    if on_gpu():
        import cupy

        return f"sm_{cupy.cuda.Device().compute_capability}"
    return "sm_90"
