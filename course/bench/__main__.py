"""`python -m course.bench`: see `course.bench.cli`."""

import sys

from .cli import main

sys.exit(main())
