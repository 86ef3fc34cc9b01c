"""Benchmark: ``build_context`` p50/p99 with 10,000 archived messages in the session,
recall on and off (``recap bench --only recall``).

One session on PostgreSQL: a summary, 60 active messages (~10k tokens) and
10,000 archived ones (chat turns and tool logs of 200-2,000 characters, each
carrying identifiers, hashes and paths). Timed: ``build_context`` with
RECAP_RECALL_TOKENS=0 (what a reply costs without recall), and with recall when
the newest user turn names an archived identifier (a hit: the lookup, excerpts
and the block) or only words found nowhere (a miss: the lookup alone). No model
call is made on this path; the stand-in is not involved.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from recap.bench.harness import env as benv
from recap.bench.harness.stats import ms, percentile, report, table, timed

SESSION = "recall-bench"
ARCHIVED = 10_000
ACTIVE = 60
WORDS = ("deploy schema latency release invoice budget retry timeout customer refund "
         "migration kubernetes postgres cache replica ledger loader parser billing "
         "queue worker shard index vacuum backup restore rollout canary").split()


def _text(rng: random.Random, i: int) -> str:
    lines = []
    for j in range(rng.randint(3, 30)):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10)))
        lines.append(f"{words} E{i:05d}-{j} {rng.getrandbits(40):010x} src/mod{j}/f{i}.py:{j}")
    return "\n".join(lines)[:2000]


def seed(rng: random.Random) -> None:
    """The session: summary, active window, and ARCHIVED archived messages."""
    from sqlalchemy import insert, update

    from recap.api.ingest import add_message
    from recap.db import transaction
    from recap.llm.tokens import count_tokens
    from recap.models import ArchivedMessage, ChatSession

    for i in range(ACTIVE):
        add_message(SESSION, "user" if i % 2 == 0 else "assistant",
                    " ".join(rng.choice(WORDS) for _ in range(120)) + f" (turn {i})")
    summary = "The user is migrating the billing ledger. " * 40
    now = datetime.now(UTC)
    with transaction() as s:
        s.execute(update(ChatSession).where(ChatSession.id == SESSION).values(
            rolling_summary=summary, summary_tokens=count_tokens(summary)))
    for start in range(0, ARCHIVED, 1000):
        rows = [{"id": 50_000_000 + i, "session_id": SESSION,
                 "role": ("user", "assistant", "tool")[i % 3], "content": _text(rng, i),
                 "token_count": 300, "created_at": now, "run_id": 1}
                for i in range(start, min(start + 1000, ARCHIVED))]
        with transaction() as s:
            s.execute(insert(ArchivedMessage), rows)


def ask(text: str) -> None:
    from recap.api.ingest import add_message

    add_message(SESSION, "user", text)


def run(quick: bool = False) -> str:
    from sqlalchemy import text

    from recap.api.context import build_context
    from recap.db import transaction

    benv.setup()
    benv.reset_state()
    rng = random.Random(7)
    seed(rng)
    with transaction() as s:
        s.execute(text("ANALYZE archived_messages"))
    n = 60 if quick else 300
    rows: list[list[object]] = []
    ask("Where was E04242-3 raised, and which hash was next to it?")
    block = build_context(SESSION, system_prompt="")["messages"][-1]["content"]
    found = any("E04242-3" in b.get("text", "") for b in block if isinstance(b, dict))
    for label, recall, question in (
            ("recall off (RECAP_RECALL_TOKENS=0)", 0, None),
            ("recall on, turn names an archived identifier", 600, None),
            ("recall on, turn names nothing archived", 600,
             "Could you summarise the plan for tomorrow's zebra walkthrough?")):
        benv.configure(RECAP_RECALL_TOKENS=recall)
        if question:
            ask("Thanks.")  # keeps the turns alternating: the next is the user's
            ask(question)
        # warm: the tokenizer, the pool, the planner's statistics
        v = timed(lambda: build_context(SESSION, system_prompt="You are a helpful assistant."),
                  n, warm=5)
        rows.append([label, len(v), ms(percentile(v, 50)), ms(percentile(v, 99))])
    benv.configure(RECAP_RECALL_TOKENS=None)
    return report(f"recall: build_context with {ARCHIVED:,} archived messages in the session "
                  "(PostgreSQL)",
                  table(["build_context", "calls", "p50", "p99"], rows)
                  + f"\n\nThe identifier's archived line was recalled: {found}.")
