"""The old name of `course.ui.panel` (the panel moved to the UI layer): this is that very module."""

import sys

from ..ui import panel
from ..ui.panel import *  # noqa: F403  (the names, for the type checker)

sys.modules[__name__] = panel
