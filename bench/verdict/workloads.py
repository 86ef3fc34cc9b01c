"""The nine workloads of the cost verdict, generated from a fixed seed (no downloads).

- ``demo``: the demo's SRE chat (pasted logs, configs, metrics tables);
- ``short``: short turns, many of them (recap.bench.harness.seed.short_script);
- ``agent``: an agent transcript: user tasks, assistant ``tool_use`` blocks reading
  documents, ``tool_result`` blocks of 2k-20k tokens, the same documents re-read;
- ``multi``: a long chat of one user over several sessions weeks apart (one
  ``user_id``, so Recap's user-scoped memories apply; the peers and full history
  see one session at a time, as their defaults do);
- ``sittings``, ``coding`` and ``holdout`` (bench.verdict.referring): a long chat of
  many sittings that fits the budget, a coding agent's tool-heavy session, and a
  held-out support thread nobody tunes against;
- ``analyst`` (bench.verdict.analyst): **held out**: a data analyst's agent
  session with search, web, SQL and shell tools;
- ``travel`` (bench.verdict.travel): **held out**: a travel desk's agent session
  with flight search, fare rules, hotel rates, calendar, mailbox and booking tools.

Every workload's later user turns refer back to earlier specifics
(:class:`bench.verdict.shapes.Probe`, judged by bench.verdict.judge): the last five
are written with them; bench.verdict.asked adds a few to the first four (about
half naming an identifier, half in the user's own words; in ``multi``, some ask a
later session about an earlier one).

Each workload plants facts about the user (recap.evals.facts: names, numbers,
dates, preferences) whose questions are asked at the end. ``holdout``,
``analyst`` and ``travel`` are held out: they are in the verdict, but nobody tunes
a policy against them. Sizes: ``quick`` (the
daily verdict), ``full`` (the cost benchmark) and ``tiny`` (the test).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from bench.verdict import analyst, asked, referring, travel
from bench.verdict.shapes import USER_ID, Message, Workload
from recap.bench.harness.seed import demo_script, short_script
from recap.evals.facts import Planted, plant, weave

# Messages per workload (agent: tasks; multi: sessions x messages) and facts planted.
# sittings: (sittings, questions); coding: (tool results, error codes asked back);
# holdout: (sittings, questions); analyst and travel: (tool results, references).
SIZES: dict[str, dict[str, int]] = {
    "tiny": {"demo": 60, "short": 80, "agent": 3, "sessions": 2, "per_session": 40, "facts": 4,
             "sittings": 5, "sitting_asks": 4, "results": 6, "refs": 2, "holdout": 4,
             "holdout_asks": 3, "analyst": 16, "analyst_asks": 2, "travel": 14,
             "travel_asks": 3},
    "quick": {"demo": 200, "short": 1200, "agent": 8, "sessions": 3, "per_session": 400,
              "facts": 8, "sittings": 30, "sitting_asks": 43, "results": 44, "refs": 10,
              "holdout": 12, "holdout_asks": 14, "analyst": 48, "analyst_asks": 12,
              "travel": 44, "travel_asks": 12},
    "full": {"demo": 1000, "short": 2000, "agent": 30, "sessions": 6, "per_session": 500,
             "facts": 16, "sittings": 40, "sitting_asks": 60, "results": 60, "refs": 14,
             "holdout": 20, "holdout_asks": 24, "analyst": 64, "analyst_asks": 18,
             "travel": 64, "travel_asks": 18},
}
NAMES = ("demo", "short", "agent", "multi", "sittings", "coding", "holdout", "analyst",
         "travel")


def build(name: str, size: str = "quick", *, seed: int = 25) -> Workload:
    """Workload ``name`` (one of :data:`NAMES`) at ``size`` (tiny, quick, full)."""
    n = SIZES[size]
    facts = tuple(plant(n["facts"], seed=seed))
    if name == "demo":
        demo = Workload(name, (("w-demo", tuple(weave(demo_script(n["demo"]), facts))),), facts)
        return asked.with_asks(demo, seed=seed)
    if name == "short":
        msgs = weave(short_script(n["short"], seed=seed), facts)
        return asked.with_asks(Workload(name, (("w-short", tuple(msgs)),), facts), seed=seed)
    if name == "agent":
        agent = asked.with_asks(Workload(name, (("w-agent", tuple(
            agent_script(n["agent"], facts, seed=seed))),), facts), seed=seed)
        return replace(agent, paused=tasks_typed(agent.sessions[0][1]))
    if name == "multi":
        return asked.with_asks(multi_session(n["sessions"], n["per_session"], facts,
                                             seed=seed), seed=seed)
    if name == "sittings":
        return referring.sittings_chat(n["sittings"], n["sitting_asks"], facts, seed=seed)
    if name == "coding":
        return referring.coding_transcript(n["results"], n["refs"], facts, seed=seed)
    if name == "holdout":
        return referring.holdout_support(n["holdout"], n["holdout_asks"], facts, seed=seed)
    if name == "analyst":
        return analyst.analyst_session(n["analyst"], n["analyst_asks"], facts, seed=seed)
    if name == "travel":
        return travel.travel_desk(n["travel"], n["travel_asks"], facts, seed=seed)
    raise ValueError(f"unknown workload {name!r}; choose from {', '.join(NAMES)}")


def multi_session(sessions: int, per_session: int, facts: Sequence[Planted], *,
                  seed: int) -> Workload:
    """``sessions`` chats of one user, the facts spread over all of them. A message
    is three of short_script's turns of its role (about 65 tokens: a chat, not a
    paste), so a session nears the context budget as a long chat does."""
    short = short_script(6 * sessions * per_session, seed=seed + 1)
    said = {role: [t for r, t in short if r == role] for role in ("user", "assistant")}
    chat = []
    for k in range(sessions * per_session):
        role = "user" if k % 2 == 0 else "assistant"
        chat.append((role, " ".join(said[role][3 * (k // 2):3 * (k // 2) + 3])))
    woven = weave(chat, facts)
    parts = tuple((f"w-multi-{k + 1}", tuple(woven[k * per_session:(k + 1) * per_session]))
                  for k in range(sessions))
    return Workload("multi", parts, tuple(facts), USER_ID)


_FILES = ("deploy/values.yaml", "docs/runbook.md", "src/billing/ledger.py",
          "logs/api-2026-11-20.log", "schema/migrations.sql", "ops/oncall.md",
          "src/api/routes.py", "reports/latency-q3.csv")
_KEYS = ("replicas", "timeout_ms", "pool_size", "max_retries", "batch", "port", "shard",
         "quota", "threshold", "window_s")


def document(path: str, tokens: int, *, seed: int) -> str:
    """A deterministic document of about ``tokens`` tokens (config lines, log lines
    with ids and times), each line carrying specifics."""
    rng = random.Random(f"{seed}:{path}")
    lines = [f"# {path}"]
    size = 0
    while size < tokens:
        key = rng.choice(_KEYS)
        line = (f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} "
                f"{key}={rng.randint(1, 9999)} host=db-{rng.randint(1, 40)} "
                f"req=r{rng.randint(10**5, 10**6 - 1)} status={rng.choice((200, 201, 429, 503))} "
                f"latency_ms={rng.randint(3, 2500)}")
        lines.append(line)
        size += 38  # tiktoken counts about 38 tokens for such a line
    return "\n".join(lines)


def tasks_typed(messages: Sequence[Message]) -> tuple[int, ...]:
    """The replies to the user's own text turns (each a new task typed after a
    person's pause), not to tool results."""
    replies = referring.reply_indices(messages)
    return tuple(replies[i] for i, (role, c) in enumerate(messages)
                 if role == "user" and isinstance(c, str))


def agent_script(tasks: int, facts: Sequence[Planted], *, seed: int) -> list[Message]:
    """``tasks`` user tasks; each reads 2-4 documents (sizes 2k-20k tokens, drawn
    once per document, so a re-read returns the same text) and ends with a short
    answer. The facts ride on the task messages."""
    rng = random.Random(seed)
    sizes = {p: rng.randint(2000, 20000) for p in _FILES}
    docs: dict[str, str] = {}
    tasks = max(tasks, len(facts) * 10 // 9 + 1)  # weave plants in the first 90%
    asks = weave([("user", f"Task {t + 1}: check {rng.choice(_FILES)} against "
                   f"{rng.choice(_FILES)} and tell me what changed.") for t in range(tasks)],
                 facts)
    out: list[Message] = []
    call = 0
    for t, (_, ask) in enumerate(asks):
        out.append(("user", ask))
        for _ in range(rng.randint(2, 4)):
            path = rng.choice(_FILES)
            call += 1
            tool_id = f"toolu_{call:04d}"
            out.append(("assistant", [
                {"type": "text", "text": f"Reading {path}."},
                {"type": "tool_use", "id": tool_id, "name": "read_file",
                 "input": {"path": path}}]))
            text = docs.setdefault(path, document(path, sizes[path], seed=seed))
            out.append(("user", [{"type": "tool_result", "tool_use_id": tool_id,
                                  "content": text}]))
        out.append(("assistant", f"Done with task {t + 1}: the files agree except for "
                    f"{rng.choice(_KEYS)} on db-{rng.randint(1, 40)}."))
    return out
