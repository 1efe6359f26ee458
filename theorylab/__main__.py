"""``python -m theorylab``: the command line."""

import sys

from theorylab.cli import main

sys.exit(main())
