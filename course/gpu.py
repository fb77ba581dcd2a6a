"""The old name of `course.module` (Module and Kernel, the one kernel API over both backends):
`course.gpu` is that very module, so `course.gpu.LAUNCH_NOTES = "off"` still sets the notes."""

import sys

from . import module
from .module import *  # noqa: F403  (the names, for the type checker)

sys.modules[__name__] = module
