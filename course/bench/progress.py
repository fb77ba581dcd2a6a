"""A progress bar for the long GPU sweeps: tqdm.auto's widget in Jupyter, its text bar in a terminal.

In a notebook the widget is replaced by the bar's last line when the loop ends, so a notebook saved
with its outputs shows `dot: 100%|██████████| 9/9 [01:10<00:00]` as plain text (on GitHub too),
not the widget's first frame.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO, TypeVar

T = TypeVar("T")


def progress(
    items: Sequence[T], desc: str, *, file: TextIO | None = None, label: Callable[[T], str] | None = None
) -> Iterator[T]:
    """Yield `items` while a bar counts them; `label(item)` is shown beside it as each one starts.
    `file` is where the terminal bar goes (tqdm's default: stderr)."""
    from tqdm.auto import tqdm  # imported here: it probes for IPython, which `import course` need not pay for

    notebook = sys.modules.get("tqdm.notebook")
    in_notebook = notebook is not None and issubclass(tqdm, notebook.tqdm_notebook)
    bar = tqdm(total=len(items), desc=desc, **({"display": False} if in_notebook else {"file": file}))
    handle = None
    if in_notebook:
        from IPython.display import Pretty, display

        handle = display(bar.container, display_id=True)
    try:
        for item in items:
            if label:
                bar.set_postfix_str(label(item))
            yield item
            bar.update()
        bar.set_postfix_str("", refresh=False)
    finally:
        bar.close()
        if handle is not None:
            handle.update(Pretty(str(bar)))
            for widget in (*bar.container.children, bar.container):
                widget.close()  # not shown any more: nothing for a saved notebook to store
