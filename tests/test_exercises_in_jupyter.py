"""A learner's wrong answers, checked in a real Jupyter kernel: an out-of-bounds read, an endless
loop, a barrier only some lanes reach, a syntax error and a kernel that traps each end in a verdict
(✗ and what is wrong), and the kernel is still alive and answers the next cell."""

from __future__ import annotations

import os

import nbformat
import pytest
from nbclient import NotebookClient

from course.dot.exercises import STRIDE_STUB

RIGHT = STRIDE_STUB.replace("i += blockDim.x)", "i += blockDim.x * gridDim.x)")
WRONG = {
    "out-of-bounds": (RIGHT.replace("i < n;", "i <= n;"), "[out-of-bounds]"),
    "endless loop": (STRIDE_STUB.replace("i += blockDim.x)", "i += 0)"), "without finishing"),
    "divergent barrier": (
        RIGHT.replace("float sum = 0;", "float sum = 0;\n    if (threadIdx.x < 16) __syncthreads();"),
        "barrier",
    ),
    "syntax error": (RIGHT.replace("float sum = 0;", "float sum = 0"), "does not compile"),
    "trap": (RIGHT.replace("float sum = 0;", "float sum = 0;\n    if (threadIdx.x == 5) __trap();"), "✗"),
}


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    folder = tmp_path_factory.mktemp("jupyter")
    cells = [nbformat.v4.new_code_cell("import os\nfrom course import dot\nprint(os.getpid())")]
    for kernel, _ in WRONG.values():
        cells.append(nbformat.v4.new_code_cell(f"dot.exercises.stride.check(r'''{kernel}''')"))
    cells.append(
        nbformat.v4.new_code_cell(f"print(dot.exercises.stride.check(r'''{RIGHT}'''))\nprint(os.getpid())")
    )
    nb = nbformat.v4.new_notebook(cells=cells)
    env = {
        "COURSE_BACKEND": "emulator",
        "COURSE_PROGRESS_FILE": str(folder / "progress.json"),
        "COURSE_LAUNCH_NOTES": "off",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the kernel inherits them
    try:
        NotebookClient(
            nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
        ).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def _text(cell: nbformat.NotebookNode) -> str:
    assert not [o for o in cell.outputs if o.output_type == "error"], f"the cell raised: {cell.outputs}"
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)


@pytest.mark.parametrize("name", list(WRONG), ids=list(WRONG))
def test_a_wrong_answer_is_a_verdict_not_a_crash(executed: nbformat.NotebookNode, name: str) -> None:
    index = list(WRONG).index(name) + 1
    text = _text(executed.cells[index])
    assert text.startswith("✗"), text
    assert WRONG[name][1] in text, text


def test_the_same_kernel_answers_the_next_cell(executed: nbformat.NotebookNode) -> None:
    first = _text(executed.cells[0]).split()
    last = _text(executed.cells[-1]).split("\n")
    assert last[0].startswith("✓"), last
    assert last[-2] == first[-1]  # the same process: no restart happened on the way
