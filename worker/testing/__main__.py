"""``python -m worker.testing [--port N]``: serve the Messages API stand-in until
interrupted, so an app and a Recap worker can run without an API key.

Its answers are deterministic text, not Claude's: it exercises the mechanics
(requests, validation, summaries that fit), not a model's quality.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Sequence

from worker.testing.server import FakeAnthropic

DEFAULT_PORT = 8765


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worker.testing",
        description="Serve the Messages API stand-in (no key, not Claude) until Ctrl-C.")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free one)")
    args = parser.parse_args(argv)
    try:
        fake = FakeAnthropic(port=args.port, log_errors=False).start()
    except OSError as exc:
        parser.exit(1, f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}\n")
    print(f"Messages API stand-in (not Claude: deterministic answers) on {fake.url}\n"
          f"point the SDK and Recap's worker at it:\n"
          f"  export ANTHROPIC_BASE_URL={fake.url} ANTHROPIC_API_KEY=stand-in", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
