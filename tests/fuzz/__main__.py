"""`python -m tests.fuzz`: see `tests.fuzz.cli`."""

import sys

from .cli import main

sys.exit(main())
