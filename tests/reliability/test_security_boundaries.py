"""Security boundaries: Flower is never shipped without auth, SQL is only ever
parameterized, and one session's job never touches another's rows."""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import re
from typing import Any

import pytest
import yaml
from sqlalchemy import inspect, select

from recap.api.context import build_context
from recap.api.ingest import add_message, after_reply
from recap.core.context.assemble import system_text
from recap.db import get_engine, transaction
from recap.errors import Superseded
from recap.llm.summarizer import SummaryResult
from recap.models import ChatMessage, ChatSession
from recap.settings import get_settings
from recap.testing import FakeAnthropic
from recap.worker.jobs.apply import apply_summary
from recap.worker.jobs.claim import Claim, claim_session
from recap.worker.jobs.failure import record_failure
from recap.worker.jobs.outcome import Job
from recap.worker.jobs.resources import build_resources
from recap.worker.jobs.retain import fold_of
from recap.worker.jobs.summarize import summarize
from tests.env import ROOT
from tests.helpers import (
    as_dict,
    assert_invariants,
    message_ids,
    run_and_wait,
    runs,
    seed,
    sentence,
    statuses,
    wait_for,
)
from tests.reliability.common import (
    low_thresholds,  # noqa: F401
    worker_thread,
)

pytestmark = pytest.mark.system

# -- Flower is never shipped open --------------------------------------------------------

NO_DEFAULT_PASSWORD = re.compile(r"\$\{FLOWER_PASSWORD:\?[^}]+\}")


def applied(sid: str) -> bool:
    return "applied" in statuses(sid)


def flower_auth(command: str, env: dict[str, str]) -> str | None:
    """The basic-auth credentials a flower command runs with, as written."""
    m = re.search(r"--basic[-_]auth[= ]?(\"[^\"]*\"|'[^']*'|\S+)", command)
    if m:
        return m.group(1)
    m = re.search(r"FLOWER_BASIC_AUTH=(\"[^\"]*\"|'[^']*'|\S+)", command)
    if m:
        return m.group(1)
    return env.get("FLOWER_BASIC_AUTH")


def assert_auth_from_env(auth: str | None, where: str) -> None:
    assert auth, f"{where}: flower runs without --basic-auth / FLOWER_BASIC_AUTH"
    # USER:PASSWORD, where USER may be ${FLOWER_USER:-admin} (a colon of its own).
    m = re.fullmatch(r"(\$\{[^}]*\}|[^:$]+):(.+)", auth.strip("\"'"))
    assert m, f"{where}: not USER:PASSWORD: {auth!r}"
    password = m.group(2)
    assert NO_DEFAULT_PASSWORD.fullmatch(password), (
        f"{where}: the password must come from the environment with no default "
        f"(${{FLOWER_PASSWORD:?...}}), got {password!r}")


def test_flower_in_docker_compose_requires_auth_from_env() -> None:
    path = ROOT / "docker-compose.yml"
    services = yaml.safe_load(path.read_text())["services"]
    flowers = {name: svc for name, svc in services.items()
               if "flower" in json.dumps(svc.get("command", ""))}
    assert flowers, "no flower service in docker-compose.yml"
    for name, svc in flowers.items():
        command = svc["command"] if isinstance(svc["command"], str) else " ".join(svc["command"])
        env = svc.get("environment") or {}
        assert isinstance(env, dict)
        assert_auth_from_env(flower_auth(command, env), f"docker-compose.yml {name}")
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} publicly"
    assert not re.search(r"FLOWER_PASSWORD:?-", path.read_text()), "a default password"


def test_flower_in_procfile_requires_auth_from_env() -> None:
    path = ROOT / "Procfile"
    lines = [ln for ln in path.read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#") and "flower" in ln]
    assert lines, "no flower process in the Procfile"
    for line in lines:
        assert_auth_from_env(flower_auth(line, {}), f"Procfile {line.split(':', 1)[0]}")
        assert "--address=0.0.0.0" not in line
    assert not re.search(r"FLOWER_PASSWORD:?-", path.read_text()), "a default password"


def test_env_example_ships_no_flower_password() -> None:
    path = ROOT / ".env.example"
    values = [ln.split("=", 1)[1].strip() for ln in path.read_text().splitlines()
              if ln.startswith("FLOWER_PASSWORD=")]
    assert values == [""] or values == [], f"FLOWER_PASSWORD has a value: {values}"


# -- SQL only through bound parameters ----------------------------------------------------

SQL_CALLS = frozenset({"text", "execute", "exec_driver_sql", "executemany", "executescript"})


def _is_dynamic_string(node: ast.AST) -> bool:
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        return any(isinstance(side, ast.Constant | ast.JoinedStr) and
                   isinstance(getattr(side, "value", ""), str)
                   for side in (node.left, node.right))
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format")


def formatted_sql(source: str, filename: str = "<src>") -> list[str]:
    """Calls that hand SQL built by string formatting to text()/execute()."""
    tree = ast.parse(source, filename)
    dynamic_names = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
                     and _is_dynamic_string(n.value) for t in n.targets
                     if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else \
            func.attr if isinstance(func, ast.Attribute) else None
        arg = node.args[0]
        if name in SQL_CALLS and (_is_dynamic_string(arg) or
                                  (isinstance(arg, ast.Name) and arg.id in dynamic_names)):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)[:120]}")
    return found


def test_the_sql_check_catches_formatted_sql() -> None:
    bad = '''
text(f"SELECT * FROM t WHERE id = '{x}'")
session.execute("DELETE FROM t WHERE id = '%s'" % x)
conn.exec_driver_sql("DROP TABLE " + name)
sa.text("SELECT {}".format(x))
q = f"SELECT {x}"
session.execute(text(q))
'''
    assert len(formatted_sql(bad)) == 5
    assert formatted_sql('text("SELECT 1")\ns.execute(select(t).where(t.c.id == x))') == []


def test_no_formatted_sql_in_the_code() -> None:
    files = sorted((ROOT / "recap").rglob("*.py"))
    assert len(files) > 10
    problems = [p for f in files
                for p in formatted_sql(f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)))]
    assert problems == []


EVIL_IDS = [
    "x'; DROP TABLE chat_messages; --",
    "'); DELETE FROM chat_sessions WHERE ('1'='1",
    'quote"double\'single`back',
    "back\\slash\\\\end\\",
    "percent %s %(id)s %% {0} {id}",
    "semi;colon -- comment /* block */ $1 $$dollar$$ :name ?",
    "unicode Ünïcødé 日本語 🙂 \u202e rtl",
    "line\nbreak\ttab",
]


@worker_thread
def test_sql_metacharacters_in_session_ids_round_trip(fake_api: FakeAnthropic) -> None:
    written = {}
    for sid in EVIL_IDS:
        written[sid] = [add_message(sid, "user" if i % 2 == 0 else "assistant",
                                    f"{sentence(i, 40)} {sid}") for i in range(12)]
        assert after_reply(sid)
    for sid in EVIL_IDS:
        wait_for(functools.partial(applied, sid), timeout=60, what=f"the summary of {sid!r}")
    assert set(inspect(get_engine()).get_table_names()) >= {
        "chat_messages", "chat_sessions", "summary_runs"}
    for sid, ids in written.items():
        assert statuses(sid) == ["applied"]
        assert message_ids(sid) == ids[5:]
        context = build_context(sid, system_prompt="You are helpful.")
        assert "SUMMARY_OF_PRIOR_CONTEXT" in system_text(context["system"])
        assert len(context["messages"]) >= 1
    with transaction() as s:
        assert set(s.scalars(select(ChatSession.id))) == set(EVIL_IDS)
    assert_invariants(written)


# -- one session never touches another -------------------------------------------------

def snapshot(session_ids: list[str]) -> dict[str, Any]:
    with transaction() as s:
        return {
            "messages": s.execute(select(ChatMessage.id, ChatMessage.session_id,
                                         ChatMessage.content, ChatMessage.token_count)
                                  .where(ChatMessage.session_id.in_(session_ids))
                                  .order_by(ChatMessage.id)).all(),
            "sessions": [as_dict(r) for r in s.scalars(
                select(ChatSession).where(ChatSession.id.in_(session_ids))
                .order_by(ChatSession.id))],
        }


@worker_thread
def test_each_job_reads_and_writes_only_its_own_session(fake_api: FakeAnthropic) -> None:
    marks = {"iso-a": "ALPHA-MARK", "iso-b": "BRAVO-MARK", "iso-c": "CHARLIE-MARK"}
    written: dict[str, list[int]] = {sid: [] for sid in marks}
    for i in range(12):  # interleaved: ids alternate between the sessions
        for sid, mark in marks.items():
            written[sid].append(add_message(sid, "user" if i % 2 == 0 else "assistant",
                                            f"{mark} {sentence(i, 40)}"))
    seen = 0
    for sid, mark in marks.items():
        others = [o for o in marks if o != sid]
        before = snapshot(others)
        run_and_wait(sid)
        assert statuses(sid) == ["applied"]
        prompts = fake_api.prompts()[seen:]
        seen += len(prompts)
        assert prompts and all(mark in p for p in prompts)
        assert not any(marks[o] in p for p in prompts for o in others)
        assert snapshot(others) == before
        assert message_ids(sid) == written[sid][5:]
    assert_invariants(written)


def test_apply_never_deletes_another_sessions_rows(fake_api: FakeAnthropic) -> None:
    mine, theirs = seed("forge-a", 12), seed("forge-b", 12)
    settings = get_settings()
    job = Job(task_id="forged")
    claim = claim_session("forge-a", job=job, res=build_resources(settings))
    assert isinstance(claim, Claim)
    before = snapshot(["forge-a", "forge-b"])
    result = SummaryResult(text="forged summary", model="m")

    forgeries = [
        dataclasses.replace(claim, plan=dataclasses.replace(
            claim.plan, batch_ids=tuple(theirs[:5]))),
        dataclasses.replace(claim, plan=dataclasses.replace(
            claim.plan, batch_ids=(*claim.plan.batch_ids[:4], theirs[0]))),
        dataclasses.replace(claim, session_id="forge-b"),  # their session, my lease
    ]
    for forged in forgeries:
        with pytest.raises(Superseded):
            apply_summary(forged, fold_of(forged, result), job=job, latency_ms=0)
        assert snapshot(["forge-a", "forge-b"]) == before  # rolled back entirely

    record_failure(claim, Superseded("forged"), job=job, status="superseded", model=None,
                   latency_ms=None)
    assert statuses("forge-a") == ["superseded"] and runs("forge-b") == []
    outcome = summarize("forge-a", job=job, res=build_resources(settings))
    assert outcome.status == "applied"
    assert message_ids("forge-a") == mine[5:] and message_ids("forge-b") == theirs
    assert_invariants({"forge-a": mine, "forge-b": theirs})
