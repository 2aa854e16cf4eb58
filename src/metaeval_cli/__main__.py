"""``python -m metaeval_cli``: the ``metaeval`` command (as ``python -m metaeval``)."""

import sys

from metaeval_cli import main

sys.exit(main())
