"""``python -m constructs_lib.audit``: the same as the ``queue-audit`` command."""

import sys

from constructs_lib.audit.cli import main

sys.exit(main())
