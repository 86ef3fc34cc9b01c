"""The benchmarks' messages: the demo's scripted conversation, and bulk loading with COPY.

``add_message`` costs a few milliseconds per row; a million rows need COPY.
Counters (message_count, active_tokens) are set from what was loaded, exactly
as ``add_message`` would have left them.
"""

from __future__ import annotations

from collections.abc import Sequence


def demo_script(n: int) -> list[tuple[str, str]]:
    """The first ``n`` ``(role, content)`` messages of the demo's scripted conversation
    (recap.demo's data file, 1,000 messages); ValueError past its end."""
    from recap.demo.conversation import load

    return load(n)


def short_script(n: int, seed: int = 14) -> list[tuple[str, str]]:
    """``n`` short alternating user/assistant messages (a chat of many quick turns,
    about 25 tokens each), a third of them carrying a specific (an amount, an id,
    a time, a path), deterministic for ``seed``."""
    import random

    rng = random.Random(seed)
    asks = ("can you check {x}?", "what about {x}", "ok, and {x}?", "{x} again please",
            "remind me of {x}", "is {x} still open?", "thanks. next: {x}")
    answers = ("Done, {x} is updated.", "Checked: {x} looks fine.", "Noted {x}; anything else?",
               "I found {x} in the last report.", "Yes, {x} is scheduled.")
    things = ("the invoice", "the deploy", "the refund", "the rollout", "the canary",
              "the ledger", "the alert", "the replica")
    tails = ("We talked about this with the team yesterday and nobody was sure.",
             "It matters for the weekly review, so please be careful with it.",
             "Let me know if anything looks off compared to last week.",
             "No rush, but I would like to close this today if we can.")
    out = []
    for i in range(n):
        thing = rng.choice(things)
        if rng.random() < 1 / 3:
            thing += " " + rng.choice((f"#{rng.randint(100, 9999)}", f"{rng.randint(2, 90)}.50 EUR",
                                       f"at {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
                                       f"/srv/app/{rng.choice(things).split()[1]}.yml"))
        role = "user" if i % 2 == 0 else "assistant"
        tail = rng.choice(tails)
        out.append((role, rng.choice(asks if role == "user" else answers).format(x=thing)
                    + " " + tail))
    return out


def filler(i: int, words: int) -> str:
    """A deterministic message of about ``words`` words (~1.3 tokens each)."""
    vocab = ("latency deploy postgres invoice refund timeout pool replica index vacuum "
             "rollout canary metrics alert budget schema migration ledger customer").split()
    return " ".join(vocab[(i * 7 + k) % len(vocab)] for k in range(words)) + f" ({i})."


def bulk_load(session_ids: Sequence[str], per_session: int, *, words: int = 60) -> int:
    """Load ``per_session`` alternating user/assistant messages into each session.

    Returns the number of messages loaded. Sessions must not exist yet.
    """
    from recap.db import get_engine
    from recap.llm.tokens import count_tokens

    texts = [filler(i, words) for i in range(per_session)]
    tokens = [count_tokens(t) for t in texts]
    raw = get_engine().raw_connection()
    try:
        conn = raw.driver_connection
        assert conn is not None
        with conn.cursor() as cur:
            with cur.copy("COPY chat_sessions (id, message_count, active_tokens) "
                          "FROM STDIN") as copy:
                for sid in session_ids:
                    copy.write_row((sid, per_session, sum(tokens)))
            with cur.copy("COPY chat_messages (session_id, role, content, token_count) "
                          "FROM STDIN") as copy:
                for sid in session_ids:
                    for i in range(per_session):
                        copy.write_row((sid, "user" if i % 2 == 0 else "assistant",
                                        texts[i], tokens[i]))
        conn.commit()
        with conn.cursor() as cur:
            cur.execute("ANALYZE chat_sessions")
            cur.execute("ANALYZE chat_messages")
        conn.commit()
    finally:
        raw.close()
    return len(session_ids) * per_session


def job_thresholds(words: int = 60) -> dict[str, object]:
    """Settings under which a 31-message session of ``filler`` text needs exactly one job
    (the fixed rule, RECAP_POLICY=threshold).

    The batch (20 of 31 messages outside keep_recent=10) exceeds the token trigger;
    the 11 left behind do not trigger again.
    """
    from recap.llm.tokens import count_tokens

    per = count_tokens(filler(0, words))
    return {"RECAP_POLICY": "threshold", "RECAP_TRIGGER_MESSAGES": 30,
            "RECAP_TRIGGER_TOKENS": 10 * per,
            "RECAP_BATCH_SIZE": 20, "RECAP_KEEP_RECENT": 10}


JOB_MESSAGES = 31
