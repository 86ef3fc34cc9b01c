"""Reach: how many rooms one reply and one job pass through.

Counts the files of the package ``recap/`` whose code runs (the stand-in, the
evals and the benchmarks aside), and the functions called, while Recap serves

- one reply: ``add_message`` (user), ``add_message`` (assistant), ``after_reply``
  and ``build_context``, the second of two replies so that nothing is counted
  for first-use imports;
- one summarize job: the Celery task body run in this process (eagerly), the
  stand-in answering the model call.

A smaller figure means a reader follows fewer modules to understand the path.
It measures structure, not speed: the figures do not depend on the machine.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import recap
from recap.bench.harness import env as benv
from recap.bench.harness.stats import report, table

PACKAGE = Path(recap.__file__).resolve().parent
ROOT = PACKAGE.parent
ROOMS = (str(PACKAGE) + "/",)
# The Messages API stand-in and the benchmark itself run in this process too; they
# are not part of the path.
NOT_ROOMS = tuple(str(PACKAGE / room) + "/" for room in ("testing", "evals", "bench"))
# Code objects that are not functions a reader follows on their own.
NOT_FUNCTIONS = ("<module>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<lambda>")
TARGET_REPLY_FILES = 18


@dataclass
class Reach:
    files: set[str] = field(default_factory=set)
    functions: set[tuple[str, str]] = field(default_factory=set)

    def note(self, frame: FrameType) -> None:
        code = frame.f_code
        path = code.co_filename
        if not path.startswith(ROOMS) or path.startswith(NOT_ROOMS):
            return
        rel = str(Path(path).relative_to(ROOT))
        self.files.add(rel)
        if code.co_name not in NOT_FUNCTIONS:
            self.functions.add((rel, code.co_qualname))


@contextmanager
def traced() -> Iterator[Reach]:
    """Record every Python call into recap/ (all threads) while open."""
    reach = Reach()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            reach.note(frame)

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield reach
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def one_reply(session_id: str, i: int) -> None:
    from recap.api.context import build_context
    from recap.api.ingest import add_message, after_reply

    add_message(session_id, "user", f"Question {i}: how do I rotate the staging keys?")
    add_message(session_id, "assistant", f"Answer {i}: run the rotation job, then redeploy.")
    after_reply(session_id)
    build_context(session_id, system_prompt=benv.SYSTEM_PROMPT)


def measure_reply() -> Reach:
    benv.reset_state()
    one_reply("reach-reply", 0)  # first use: imports, caches, engine
    with traced() as reach:
        one_reply("reach-reply", 1)
    return reach


def measure_job() -> Reach:
    from recap.api.ingest import add_message
    from recap.worker.tasks import summarize_session

    benv.reset_state()
    benv.configure(RECAP_POLICY="threshold", RECAP_TRIGGER_MESSAGES=10,
                   RECAP_TRIGGER_TOKENS=50, RECAP_BATCH_SIZE=5, RECAP_KEEP_RECENT=4)
    sid = "reach-job"
    for i in range(12):
        add_message(sid, "user" if i % 2 == 0 else "assistant",
                    f"Message {i}: the invoice INV-{1000 + i} is due on 14 March.")
    summarize_session.apply(args=[f"{sid}-warm"])  # first use of the task path
    with traced() as reach:
        outcome = summarize_session.apply(args=[sid]).result
    if not str(outcome).startswith("applied"):
        raise RuntimeError(f"the measured job did not apply: {outcome}")
    return reach


def rows_of(name: str, reach: Reach, target: str) -> list[object]:
    return [name, len(reach.files), len(reach.functions), target]


def run(quick: bool = False) -> str:
    benv.setup(0.0)
    reply, job = measure_reply(), measure_job()
    body = table(["path", "files", "functions", "target"],
                 [rows_of("one reply (2 x add_message, after_reply, build_context)", reply,
                          f"<= {TARGET_REPLY_FILES} files"),
                  rows_of("one summarize job (task body)", job, "")])
    listing = "".join(f"\n\nFiles of {name}: " + ", ".join(sorted(r.files))
                      for name, r in (("one reply", reply), ("one job", job)))
    return report("reach: files and functions one reply and one job run through",
                  body + listing)

