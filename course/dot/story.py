"""The old name of `lesson.py` (the functions the notebook calls), kept for code written before the
rename: `course.dot.story` is the module `course.dot.lesson` itself."""

import sys

from . import lesson
from .lesson import *  # noqa: F403  (the names, for the type checker)

sys.modules[__name__] = lesson
