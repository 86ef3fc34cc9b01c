"""The fixed rule replayed: a scripted conversation through the planner under
``RECAP_POLICY=threshold`` with the original thresholds folds exactly where the
fixed rule always folded (the expected folds are literal data, recorded from it)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from recap.core.planning.policy import MessageInfo, Thresholds, might_trigger, plan
from recap.settings import load_settings

pytestmark = pytest.mark.unit

# Each fold: (index of the reply after which it ran, mode, first id, last id, messages).
Fold = tuple[int, str, int, int, int]

PASTED: list[Fold] = [
    (25, 'capacity', 1, 16, 16),
    (35, 'capacity', 17, 26, 10),
    (45, 'capacity', 27, 36, 10),
    (63, 'capacity', 37, 54, 18),
    (79, 'capacity', 55, 70, 16),
    (89, 'capacity', 71, 80, 10),
    (103, 'capacity', 81, 94, 14),
    (115, 'capacity', 95, 106, 12),
    (127, 'capacity', 107, 118, 12),
    (141, 'capacity', 119, 132, 14),
    (155, 'capacity', 133, 146, 14),
    (175, 'capacity', 147, 166, 20),
    (197, 'aggressive', 167, 193, 27),
    (221, 'capacity', 194, 212, 19),
    (245, 'capacity', 213, 232, 20),
    (261, 'capacity', 233, 252, 20),
    (273, 'capacity', 253, 264, 12),
    (285, 'capacity', 265, 276, 12),
    (297, 'capacity', 277, 288, 12),
    (319, 'normal', 289, 308, 20),
    (337, 'capacity', 309, 328, 20),
    (351, 'capacity', 329, 342, 14),
    (365, 'capacity', 343, 356, 14),
    (379, 'capacity', 357, 370, 14),
    (391, 'capacity', 371, 382, 12),
]

MIXED: list[Fold] = [
    (31, 'normal', 1, 21, 20),
    (51, 'normal', 22, 41, 20),
    (77, 'capacity', 42, 61, 20),
    (91, 'normal', 62, 81, 20),
    (115, 'capacity', 82, 103, 20),
    (131, 'capacity', 104, 121, 18),
    (155, 'capacity', 122, 141, 20),
    (169, 'normal', 142, 160, 19),
    (203, 'capacity', 161, 180, 20),
    (211, 'normal', 181, 201, 20),
    (237, 'capacity', 202, 221, 20),
    (247, 'normal', 222, 238, 17),
    (271, 'capacity', 239, 258, 20),
    (285, 'normal', 259, 275, 17),
    (309, 'capacity', 276, 296, 20),
    (321, 'normal', 297, 312, 16),
    (343, 'capacity', 313, 332, 20),
    (361, 'normal', 333, 352, 20),
    (381, 'capacity', 353, 372, 20),
    (397, 'normal', 373, 388, 16),
]


def pasted() -> list[MessageInfo]:
    """Chat with pasted blocks: a 6,000-token paste every 14 messages."""
    rng = random.Random(25)
    out = []
    for i in range(400):
        if i % 2 == 0:
            size = rng.choice([40, 80, 120, 200, 1500, 3000]) if i % 14 else 6000
        else:
            size = rng.choice([150, 300, 600, 900])
        out.append(MessageInfo(i + 1, "assistant" if i % 2 else "user", size))
    return out


def mixed() -> list[MessageInfo]:
    """Shorter turns, a long paste every 38 messages, pinned messages and tool calls."""
    rng = random.Random(25)
    out = []
    for i in range(400):
        if i % 2 == 0:
            size = rng.choice([40, 80, 120, 200, 400, 900]) if i % 38 else 9000
        else:
            size = rng.choice([150, 300, 600, 900, 1200])
        called = i % 2 == 1 and i % 11 == 0
        answered = i % 2 == 0 and (i - 1) % 11 == 0
        out.append(MessageInfo(i + 1, "assistant" if i % 2 else "user", size,
                               pinned=i % 97 == 3, calls=(f"c{i}",) if called else (),
                               answers=(f"c{i - 1}",) if answered else ()))
    return out


def replay(script: list[MessageInfo], t: Thresholds) -> list[Fold]:
    """The hook's check after every reply, then the job's plan; a fold's summary is
    half the previous one plus a tenth of its batch (at most 1,024 tokens)."""
    active: list[MessageInfo] = []
    summary = 0
    folds: list[Fold] = []
    for i, message in enumerate(script):
        active.append(message)
        if message.role != "assistant":
            continue
        tokens = sum(m.token_count for m in active)
        if not might_trigger(message_count=len(active), active_tokens=tokens,
                             summary_tokens=summary, t=t):
            continue
        p = plan(active, summary_tokens=summary, t=t)
        if not p.should_summarize:
            continue
        folds.append((i, str(p.mode), p.batch_ids[0], p.batch_ids[-1], len(p.batch_ids)))
        taken = set(p.batch_ids)
        active = [m for m in active if m.id not in taken]
        summary = min(1024, summary // 2 + p.batch_tokens // 10)
    return folds


ORIGINAL = Thresholds(trigger_messages=30, trigger_tokens=15000, batch_size=20,
                      keep_recent=10, context_budget_tokens=32000)


@pytest.mark.parametrize(("script", "expected"), [(pasted, PASTED), (mixed, MIXED)])
def test_threshold_policy_folds_as_the_fixed_rule(script: Callable[[], list[MessageInfo]],
                                                   expected: list[Fold]) -> None:
    assert replay(script(), ORIGINAL) == expected


def test_threshold_setting_gives_the_original_thresholds() -> None:
    t = load_settings(policy="threshold").thresholds()
    assert (t.trigger_messages, t.trigger_tokens, t.batch_size, t.keep_recent,
            t.context_budget_tokens, t.condense_to) == (30, 15000, 20, 10, 32000, 0.0)
    assert replay(pasted(), t) == PASTED
    assert replay(mixed(), t) == MIXED
