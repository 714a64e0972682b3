"""`python -m rheo ARGS` is `rheo ARGS`."""

import sys

from rheo.cli import main

sys.exit(main())
