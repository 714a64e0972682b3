"""`python -m rheo ARGS` is `rheo ARGS`."""

import sys

from .cli import main

sys.exit(main())
