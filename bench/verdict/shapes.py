"""What a workload is: sessions of messages, the facts planted in them, and the later
turns that refer back (:class:`Probe`). Shared by the generators (workloads,
referring), the drivers (drive) and the judge, so none of them imports another's
generator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recap.bench.harness.pricing import flat
from recap.evals.facts import Planted

Content = str | list[dict[str, Any]]
Message = tuple[str, Content]
USER_ID = "bench-user-1"


@dataclass(frozen=True)
class Probe:
    """A later user turn that refers back to a specific stated earlier: at reply
    ``reply`` (the count of user-role messages before it, over all sessions) the
    request should carry ``answer``; ``turn`` is what the user asks."""

    reply: int
    answer: str
    turn: str


@dataclass(frozen=True)
class Workload:
    name: str
    sessions: tuple[tuple[str, tuple[Message, ...]], ...]  # (session id, its messages)
    facts: tuple[Planted, ...]
    user_id: str | None = None
    probes: tuple[Probe, ...] = ()  # later turns referring back (bench.verdict.judge)
    cold: tuple[int, ...] = ()  # replies after a gap (a new sitting): an empty cache
    # When the cache has expired (a person paused longer than it lives): None for a
    # chat, where a seeded share of replies follow such a pause (PAUSE_SHARE); an
    # agent's session lists the replies a person's pause comes before (each new task
    # the person types), its calls within a task coming seconds apart.
    paused: tuple[int, ...] | None = None

    @property
    def messages(self) -> int:
        return sum(len(m) for _, m in self.sessions)

    @property
    def tool_heavy(self) -> bool:
        """Whether its sessions carry tool results (an agent's, not a chat)."""
        return any(role == "user" and isinstance(c, list)
                   and any(b.get("type") == "tool_result" for b in c)
                   for _, msgs in self.sessions for role, c in msgs)


def scripts(w: Workload) -> list[list[tuple[str, str]]]:
    """Each session's messages as (role, plain text): tool calls and results rendered
    inline (recap.bench.harness.pricing.flat), as a text-only peer is given them."""
    return [[(r, flat(c)) for r, c in msgs] for _, msgs in w.sessions]
