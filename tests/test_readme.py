"""The README's example runs as written (on the emulator)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_example_runs(emulator_backend, capsys):
    block = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    y = namespace["course"].asnumpy(namespace["y"])
    assert (y == 2).all()  # y += x twice: the launch, then the traced launch (which runs for real)
    assert "emulator" in capsys.readouterr().out
