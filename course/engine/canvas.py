"""The old name of `course.ui.canvas` (the canvas moved to the UI layer): this is that very module."""

import sys

from ..ui import canvas
from ..ui.canvas import *  # noqa: F403  (the names, for the type checker)

sys.modules[__name__] = canvas
