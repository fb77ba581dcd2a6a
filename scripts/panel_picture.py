"""Redraw the README's picture of the reduction panel in JupyterLab, docs/panel-in-jupyterlab.png,
from the browser test's screenshot, so the picture shows the panel as it is today.

    python scripts/panel_picture.py              # run the browser test on 05_reduction, copy its picture
    python scripts/panel_picture.py --copy-only  # copy the picture the last `pytest --browser` run saved
    python scripts/panel_picture.py --copy-only --screenshot shot.png --out /tmp/panel.png

The browser test (tests/browser/test_learner_path.py) needs the `browser` extra and Chromium; it
saves the panel's cell after Run All, with JupyterLab's news pop-up turned off. The copy is reduced
to a palette of 256 colours (crisp text, a third of the bytes).
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "05_reduction.ipynb"  # the browser test's README_NOTEBOOK
SCREENSHOT = ROOT / "artifacts" / "browser" / "readme-panel-in-jupyterlab.png"  # its README_PICTURE
PICTURE = ROOT / "docs" / "panel-in-jupyterlab.png"


def copy_picture(screenshot: Path = SCREENSHOT, picture: Path = PICTURE) -> int:
    """Write the screenshot to the README's picture; its size in bytes."""
    if not screenshot.is_file():
        raise FileNotFoundError(
            f"no screenshot at {screenshot}: run `python -m pytest --browser tests/browser` first "
            "(or this script without --copy-only)"
        )
    image = Image.open(screenshot).convert("RGB").quantize(256, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=True)
    picture.write_bytes(buffer.getvalue())
    return len(buffer.getvalue())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copy-only", action="store_true", help="copy the last browser run's screenshot")
    parser.add_argument(
        "--screenshot", type=Path, default=SCREENSHOT,
        help=f"the browser test's screenshot of {NOTEBOOK} (default: {SCREENSHOT.relative_to(ROOT)})",
    )  # fmt: skip
    parser.add_argument(
        "--out",
        type=Path,
        default=PICTURE,
        help=f"the picture to write (default: {PICTURE.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    if not args.copy_only:
        stem = NOTEBOOK.removesuffix(".ipynb")
        command = [sys.executable, "-m", "pytest", "--browser", "tests/browser", "-q", "-k", stem]
        print(" ".join(command[1:]), flush=True)
        if subprocess.run(command, cwd=ROOT).returncode != 0:
            print("the browser test failed: the README's picture is unchanged", file=sys.stderr)
            return 1
    try:
        size = copy_picture(args.screenshot, args.out)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    width, height = Image.open(args.out).size
    print(f"{args.out}: {width} x {height} px, {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
