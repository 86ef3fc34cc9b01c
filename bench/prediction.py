"""Does a fold's predicted saving hold? Each fold the adaptive policy made because
"a fold pays (over N replies: fold call C + write W vs S saved)" is checked against
the session's own account (recap.core.spend, what ``recap stats --session`` shows)
N replies later.

Recap (its defaults, the real pipeline on the bench's PostgreSQL database, the
stand-in in neutral mode summarizing) replays each verdict workload
(bench.verdict.workloads, quick size) as bench.verdict.drive does: store a
message, and after each reply run the summarize jobs it queued. After every reply
the session's account is read (its saved tokens: full history with caching less
Recap's requests and summarizing, in the reply model's base-input tokens). Each
applied fold's reason is read back from its audit row (summary_runs); a fold whose
reason says it pays is a **prediction**: predicted = S - C - W over N replies.

**Accounted** is the account's saving attributable to that fold over its N replies:
the account's cumulative saving N replies after the fold's reply, less the saving
just before the fold's call was accounted, less N times the saving of the reply
before the fold (what the session already saved a reply without this fold: the
earlier folds' doing, which goes on whether or not this one is made). A later
fold inside the window is charged to the window (its call and rewrite land
there), so a fold that holds has paid for whatever followed it too. A prediction
**holds** when accounted >= 0 (it said the fold pays: the account agrees that it
did not lose). A fold less than N replies before its session ends is **not
reached** and is left out of the share held. Folds made for the capacity rule
(the context must fit its budget) predict nothing and are counted apart.

No pauses: calls follow each other within the cache's lifetime, as in the spend
benchmark (recap bench --only spend). Figures come from the stand-in: they measure
the mechanism (what is resent, what is cached), not a model.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from recap.bench.harness import env as benv
from recap.bench.harness.stats import report, section, table

# The priced part of a fold's reason (recap.core.planning.pricing.choose); a bounded
# pattern anchored on literal text, so the scan is linear.
PAYS = re.compile(r"a fold pays \(over (\d+) replies: fold call (\d+) \+ write (\d+) vs "
                  r"(\d+) saved\)")
MUST = "the context must fit its budget"
TARGET = 0.9  # share of reached predictions that should hold
NOTE = ("Predicted and accounted are in the reply model's base-input tokens; held: "
        "accounted >= 0; reached N: the session went on N replies after the fold; "
        "kept share: the summary's growth over the tokens a fold condensed (the "
        "prediction assumes KEPT_SHARE); unpriced folds: made whatever the sums say "
        "(the capacity rule, aggressive). Target: at least 90% held.")


@dataclass
class Fold:
    """One applied fold that predicted a saving, and what the account said."""

    session: str
    reply: int  # replies of the session when the fold was planned
    replies: int  # N, the replies the prediction is over
    predicted: int  # S - C - W
    kept: float  # the summary's growth over the tokens the fold condensed (KEPT_SHARE)
    accounted: float | None = None  # None: the session ended before N replies


@dataclass
class Result:
    workload: str
    folds: list[Fold] = field(default_factory=list)
    unpriced: int = 0  # folds made whatever the sums say (capacity, aggressive): no prediction

    @property
    def reached(self) -> list[Fold]:
        return [f for f in self.folds if f.accounted is not None]

    @property
    def held(self) -> int:
        return sum(1 for f in self.reached if (f.accounted or 0) >= 0)


def _saved(session_id: str) -> float:
    """The session's account: full history's cost less Recap's, unrounded, at the
    prices ``recap stats --session`` shows it at (the settings' reply model and
    summarizer: no session here has overrides)."""
    from recap.db import transaction
    from recap.settings import get_settings
    from recap.store.spend import session_spend

    with transaction() as s:
        spent = session_spend(session_id, db=s, prices=get_settings().prices_of())
    return 0.0 if spent is None else spent.full_cost - spent.recap_cost


def _runs(session_id: str, after: int) -> list[tuple[int, str, int, int]]:
    """(id, reason, condensed tokens, summary tokens) of the session's applied runs
    with an id above ``after``."""
    from sqlalchemy import select

    from recap.db import transaction
    from recap.models.audit import SummaryRun

    with transaction() as s:
        rows = s.execute(select(SummaryRun.id, SummaryRun.reason, SummaryRun.condensed_tokens,
                                SummaryRun.summary_tokens)
                         .where(SummaryRun.session_id == session_id,
                                SummaryRun.status == "applied", SummaryRun.id > after)
                         .order_by(SummaryRun.id)).all()
    return [(int(i), r or "", int(c or 0), int(t or 0)) for i, r, c, t in rows]


def replay(name: str, size: str = "quick") -> Result:
    """Recap's defaults over workload ``name`` at ``size``, every fold's prediction
    checked."""
    from bench.verdict.drive import settle
    from bench.verdict.workloads import build
    from recap.api.ingest import add_message, after_reply

    w = build(name, size)
    benv.reset_state()
    result, seen = Result(name), 0
    for sid, messages in w.sessions:
        saved = [0.0]  # the account after each reply (saved[k]: after k replies)
        before: dict[int, float] = {}  # the account just before a fold's call, by reply
        folds: list[Fold] = []
        summary = 0  # the session's summary tokens after its last fold
        for role, content in messages:
            add_message(sid, role, content, user_id=w.user_id)
            if role != "assistant":
                continue
            saved.append(_saved(sid))
            if not after_reply(sid):
                continue
            settle(sid)
            for run_id, reason, condensed, tokens in _runs(sid, seen):
                seen, grown, summary = run_id, tokens - summary, tokens
                if (m := PAYS.search(reason)) is None or MUST in reason:
                    result.unpriced += 1
                    continue
                n, call, write, gain = (int(g) for g in m.groups())
                before[len(saved) - 1] = saved[-1]
                folds.append(Fold(sid, len(saved) - 1, n, gain - call - write,
                                  grown / condensed if condensed else 0.0))
        for f in folds:
            if f.reply + f.replies < len(saved):
                change = saved[f.reply + f.replies] - before[f.reply]
                rate = saved[f.reply] - saved[f.reply - 1] if f.reply else 0.0
                f.accounted = change - f.replies * rate
        result.folds += folds
    return result


HEADERS = ["workload", "folds predicted", "reached N", "held", "share held",
           "median predicted", "median accounted", "median accounted / predicted",
           "median N", "median kept share", "unpriced folds"]


def rows_of(results: list[Result]) -> list[list[object]]:
    """One row per workload and one for all of them (:data:`HEADERS`)."""
    every = Result("all", [f for r in results for f in r.folds],
                   sum(r.unpriced for r in results))
    return [_row(r) for r in (*results, every)]


def _row(r: Result) -> list[object]:
    reached = r.reached
    return [r.workload, len(r.folds), len(reached), r.held,
            f"{r.held / len(reached):.0%}" if reached else "n/a",
            _median([f.predicted for f in reached]), _median([f.accounted or 0.0 for f in reached]),
            _median([(f.accounted or 0) / f.predicted for f in reached if f.predicted],
                    "{:.2f}"),
            _median([f.replies for f in reached]),
            _median([f.kept for f in r.folds], "{:.2f}"), r.unpriced]


def _median(values: Sequence[float], form: str = "{:.0f}") -> str:
    return form.format(statistics.median(values)) if values else "n/a"


def run(quick: bool = True, *, size: str = "quick",
        names: Sequence[str] | None = None) -> str:
    """The verdict workloads (``names``: all) at ``size``, quick whether ``python -m
    bench --only prediction`` has ``--quick`` or not: the check needs folds and the
    replies after them, which the quick workloads have, not the full size's hours."""
    from bench.verdict.workloads import NAMES

    env = benv.setup()
    latency, neutral = env.latency, env.fake.neutral
    benv.setup(0.0)  # the account does not depend on the stand-in's latency
    env.fake.neutral = True
    try:
        results = [replay(name, size) for name in names or NAMES]
    finally:
        benv.setup(latency)
        env.fake.neutral = neutral
    return section("prediction", report(
        "prediction: does a fold's predicted saving hold N replies later? (Recap's "
        "defaults, quick workloads, the stand-in in neutral mode; no pauses)",
        table(HEADERS, rows_of(results)) + "\n\n" + NOTE))
