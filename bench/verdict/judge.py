"""The second judge, **answerable at reference**: at every user turn that refers
back to an earlier specific (a workload's :class:`bench.verdict.shapes.Probe`), is that
specific in the request of that reply? Exact text, anywhere in the request
(system parts, turns, tool calls and results as recap.bench.harness.pricing.flat renders them).
A system that sent no request for that reply (it failed before) does not answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.verdict.shapes import Probe
from recap.bench.harness.pricing import texts


def answerable(bodies: Sequence[dict[str, Any]], probes: Sequence[Probe]) -> tuple[int, int]:
    """(references whose specific the request of their reply carries, references)."""
    seen: dict[int, str] = {}
    hits = 0
    for p in probes:
        if p.reply >= len(bodies):
            continue
        if p.reply not in seen:
            seen[p.reply] = "\n".join(texts(bodies[p.reply]))
        hits += p.answer in seen[p.reply]
    return hits, len(probes)
