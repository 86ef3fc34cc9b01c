"""``python -m recap.demo``: the demo without the ``recap`` command."""

from __future__ import annotations

import sys

from recap.demo.run import main
from recap.errors import RecapError

try:
    sys.exit(main())
except RecapError as exc:
    print(f"recap demo: error: {exc}", file=sys.stderr)
    sys.exit(1)
