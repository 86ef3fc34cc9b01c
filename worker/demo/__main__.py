"""``python -m worker.demo``: the demo without the ``recap`` command."""

from __future__ import annotations

import sys

from worker.demo.run import main
from worker.errors import RecapError

try:
    sys.exit(main())
except RecapError as exc:
    print(f"recap demo: error: {exc}", file=sys.stderr)
    sys.exit(1)
