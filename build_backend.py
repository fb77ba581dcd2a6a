"""setuptools, behind a check of the Python version.

pip reads `requires-python` only after resolving every dependency: on Python 3.9 it spent minutes
downloading every release of the CUDA wheels before it said no. The build backend runs first, on
the Python being installed into, so it says no within seconds, in one line.
"""

from __future__ import annotations

import sys

OLDEST = (3, 10)  # pyproject.toml's requires-python

if sys.version_info < OLDEST:
    sys.exit(
        f"gpu-patterns-course needs Python {OLDEST[0]}.{OLDEST[1]} or newer; this is Python "
        f"{sys.version_info[0]}.{sys.version_info[1]} ({sys.executable}); "
        "start again with a newer one, e.g. `rm -rf .venv && python3.12 -m venv .venv`"
    )

from setuptools.build_meta import *  # noqa: E402, F403  (the hooks pip calls)
