"""``python -m metaeval``: the ``metaeval`` command."""

import sys

from metaeval_cli import main

sys.exit(main())
