"""``python -m recap.testing [--port N] [--loss SHARE] [--echo-schema] [--loop-facts]
[--junk-replaces] [--neutral]``: run the Messages API stand-in as a server until interrupted.

For trying a client (``recap eval --base-url``, your own app) against a local
server that speaks the Messages API without a key or a model. Its answers are
deterministic digests, not a model's: figures measured against it measure
Recap's mechanisms, never a model.
"""

from __future__ import annotations

import argparse
import threading

from recap.testing.server import FakeAnthropic
from recap.testing.weak import Weak, weak_model

DEFAULT_PORT = 8765


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m recap.testing", description=__doc__)
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)")
    p.add_argument("--loss", type=float, default=0.0, metavar="SHARE",
                   help="share of specifics dropped from each default answer (default 0)")
    p.add_argument("--seed", type=int, default=0, help="loss seed (default 0)")
    p.add_argument("--echo-schema", action="store_true",
                   help="summaries repeat the tool schema's description (a weak model)")
    p.add_argument("--loop-facts", action="store_true",
                   help="summary-and-facts answers loop one fact to the cap (a weak model)")
    p.add_argument("--junk-replaces", action="store_true",
                   help="known facts are 'replaced' by junk facts (a weak model)")
    p.add_argument("--neutral", action="store_true",
                   help="one summarizing rule for every caller, blind to prompts and tool "
                        "schemas (recap.testing.neutral)")
    args = p.parse_args(argv)
    if not 0.0 <= args.loss < 1.0:
        p.error(f"--loss must be in [0, 1), got {args.loss}")
    weak = Weak(echo_schema=args.echo_schema, loop_facts=args.loop_facts,
                junk_replaces=args.junk_replaces)
    fake = FakeAnthropic(port=args.port,
                         routes=[weak_model(weak)] if weak != Weak() else (),
                         neutral=args.neutral)
    fake.lose_specifics(args.loss, seed=args.seed)
    fake.start()
    print(f"Messages API stand-in (not a model) listening on {fake.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
