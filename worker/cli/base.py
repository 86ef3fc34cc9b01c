"""Output helpers shared by the ``recap`` commands."""

from __future__ import annotations

import argparse
import json
import sys

PROG = "recap"


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def emit_json(data: object) -> None:
    print(json.dumps(data, indent=2, default=str, ensure_ascii=False))


def err(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)
