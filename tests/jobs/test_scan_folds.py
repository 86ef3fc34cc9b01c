"""What a user pastes never stops a session from folding: every text scan runs in
time linear in its input (recap/bench/scan.py times each shape), so a megabyte of one
unbroken token, of separators, of brackets or of digits folds within the default
time limits like any message, and what the user said around it is kept. Public
API, a real worker, PostgreSQL and the real SDK against the local Messages API
server."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recap.api.context import build_context
from recap.api.ingest import add_message
from recap.core.context.assemble import system_text
from recap.db import transaction
from recap.settings import get_settings
from recap.testing import FakeAnthropic, ok
from tests.checks import check_invariants
from tests.helpers import run_and_wait, runs, sentence, statuses

FEW = {"RECAP_POLICY": "threshold", "RECAP_TRIGGER_MESSAGES": 6, "RECAP_TRIGGER_TOKENS": 100,
       "RECAP_BATCH_SIZE": 200, "RECAP_KEEP_RECENT": 2}
# Units a pathological paste repeats: one token's alphabet, separators, brackets,
# digits, white space after a tag opener, quote and fence marks.
UNITS = ["QmFzZTY0a2V5", "a.-@_/:", "([{<", ">}])", "1", "9.", "< ", "\n> ```\n", "a@", "--",
         "<summary ", "http://x/", "“", "\n\n"]
SAID = "My order is ORD-77812 and the refund of $45.99 is due on 2026-03-15."


def blob(seed: int, size: int) -> str:
    """``size`` characters of one unbroken token: a hex dump (every character a word
    character, the e-mail and path shapes' worst case)."""
    return "".join(hashlib.sha256(f"{seed}:{i}".encode()).hexdigest()
                   for i in range(size // 64 + 1))[:size]


def fold(sid: str, pasted: str) -> None:
    """Fold ``pasted`` (after the user's own sentence) with a real worker: the run is
    applied and every specific the user stated is kept (the retention invariant)."""
    texts = {add_message(sid, "user", f"{SAID}\nHere is what the tool printed:\n{pasted}"):
             f"{SAID}\nHere is what the tool printed:\n{pasted}"}
    for i in range(6):
        text = sentence(i, 30)
        texts[add_message(sid, "assistant" if i % 2 == 0 else "user", text)] = text
    run_and_wait(sid, final={"applied", "dead", "failed"},
                 timeout=get_settings().task_time_limit_s + 30)
    assert statuses(sid) == ["applied"], runs(sid)[0].error
    with transaction() as s:
        assert check_invariants(s, written={sid: list(texts)},
                                written_texts={sid: texts}) == []


@pytest.mark.usefixtures("celery_worker_thread")
def test_a_megabyte_single_token_folds_within_the_default_limits(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    settings_env(**FEW, RECAP_RETENTION_GUARD="true")
    fold("megabyte", blob(0, 1_000_000))


@pytest.mark.usefixtures("celery_worker_thread")
@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(UNITS), st.integers(1_000, 60_000)),
                min_size=1, max_size=3))
def test_pathological_pastes_fold(fake_api: FakeAnthropic, settings_env: Callable[..., None],
                                  parts: list[tuple[str, int]]) -> None:
    settings_env(**FEW, RECAP_RETENTION_GUARD="true")
    fold(f"scan-{uuid.uuid4().hex[:8]}", "".join(unit * (n // len(unit)) for unit, n in parts))


@pytest.mark.usefixtures("celery_worker_thread")
def test_one_sentence_with_several_specifics_keeps_them_all(
        fake_api: FakeAnthropic, settings_env: Callable[..., None]) -> None:
    # A model that mentions no specific: the guard keeps the flight, the code and
    # the airline's name, in one details line that holds them with their neighbours.
    settings_env(**FEW, RECAP_RETENTION_GUARD="true")
    fake_api.always(ok("The user is travelling soon."))
    said = "I'm flying with TAP, flight TP1357, and my booking code is QX7K2P."
    add_message("crowded", "user", said)
    for i in range(6):
        add_message("crowded", "assistant" if i % 2 == 0 else "user", sentence(i, 30))
    run_and_wait("crowded", final={"applied", "dead"})
    assert statuses("crowded") == ["applied"], runs("crowded")[0].error
    context = build_context("crowded", system_prompt="Be helpful.")
    kept = system_text(context["system"]) + json.dumps(context["messages"])
    assert all(s in kept for s in ("TP1357", "QX7K2P", "TAP")), kept
    lines = [x for x in kept.split("\n") if "TP1357" in x and "QX7K2P" in x]
    assert lines, kept
