"""``recap metrics``: the exposition, parsed with prometheus_client's own parser,
the command serving it over HTTP, and (when Debian's ``prometheus`` is installed)
a real Prometheus server scraping it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import delete

from recap.cli.metrics import serve
from recap.db import transaction, utcnow
from recap.models import ChatSession, Heartbeat, SummaryRun
from recap.ops.exporter import RecapCollector
from recap.worker.jobs.sweeper import SWEEP_HEARTBEAT, record_heartbeat
from tests.env import ROOT
from tests.helpers import free_port, require, wait_for

pytestmark = pytest.mark.system

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

NORMAL = "normal: 31 messages > 30 and batch 15200 tokens > 15000"


def samples(text: str) -> Samples:
    """{(sample name, sorted labels): value} of an exposition."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape_in_process() -> Samples:
    registry = CollectorRegistry()
    registry.register(RecapCollector())
    return samples(generate_latest(registry).decode())


def seed() -> float:
    """A few runs and sessions; returns the sweep heartbeat's Unix time."""
    now = utcnow()
    with transaction() as s:
        s.execute(delete(Heartbeat))  # conftest's TRUNCATE predates this table
        s.add_all([
            SummaryRun(session_id="a", status="applied", reason=NORMAL, messages_condensed=20,
                       input_tokens=1200, output_tokens=150),
            SummaryRun(session_id="a", status="applied", reason=NORMAL, messages_condensed=20,
                       input_tokens=1000, output_tokens=140),
            SummaryRun(session_id="b", status="skipped", reason="lease held by another job"),
            SummaryRun(session_id="c", status="failed", reason=NORMAL, input_tokens=30,
                       output_tokens=0),
            ChatSession(id="due", message_count=40, active_tokens=20000,
                        updated_at=now - timedelta(seconds=90)),
            ChatSession(id="pending", message_count=40, active_tokens=20000,
                        enqueued_at=now - timedelta(seconds=5)),
            ChatSession(id="dead", message_count=40, active_tokens=33000,
                        blocked_until=now + timedelta(hours=1), needs_escalation=True),
        ])
        at = now - timedelta(seconds=42)
        record_heartbeat(SWEEP_HEARTBEAT, db=s, at=at)
    return at.timestamp()


def test_exposition_carries_the_figures_of_the_database() -> None:
    swept = seed()
    got = scrape_in_process()
    runs = {(dict(k[1])["status"], dict(k[1])["reason"]): v
            for k, v in got.items() if k[0] == "recap_runs_total"}
    assert runs == {("applied", "normal"): 2, ("skipped", "lease-held"): 1,
                    ("failed", "normal"): 1}
    task = (("task", "summarize_session"),)
    assert got[("recap_api_input_tokens_total", task)] == 2230
    assert got[("recap_api_output_tokens_total", task)] == 290
    assert got[("recap_messages_condensed_total", ())] == 40
    expected = {"recap_up": 1, "recap_sessions": 3, "recap_sessions_due": 1,
                "recap_sessions_pending": 1, "recap_sessions_leased": 0,
                "recap_sessions_dead": 1, "recap_sessions_over_budget": 1,
                "recap_sessions_escalated": 1, "recap_active_messages": 120,
                "recap_active_tokens": 73000, "recap_summary_tokens": 0,
                "recap_last_sweep_timestamp_seconds": swept}
    assert {name: got[(name, ())] for name in expected} == pytest.approx(expected)
    # Ages are measured at scrape time: at least what was seeded, and not absurdly more.
    assert 90 <= got[("recap_oldest_due_session_age_seconds", ())] < 90 + 120
    assert 5 <= got[("recap_oldest_pending_job_age_seconds", ())] < 5 + 120
    assert got[("recap_scrape_duration_seconds", ())] >= 0


def test_an_empty_database_exposes_zeros() -> None:
    with transaction() as s:
        s.execute(delete(Heartbeat))
    got = scrape_in_process()
    assert got[("recap_up", ())] == 1
    assert got[("recap_sessions_due", ())] == 0
    assert got[("recap_oldest_due_session_age_seconds", ())] == 0
    assert got[("recap_last_sweep_timestamp_seconds", ())] == 0
    assert got[("recap_api_input_tokens_total", (("task", "summarize_session"),))] == 0
    assert not [k for k in got if k[0] == "recap_runs_total"]


def test_an_unreachable_database_reads_as_down(settings_env: Callable[..., None],
                                               caplog: pytest.LogCaptureFixture) -> None:
    from recap.db import reset_engines

    reset_engines()
    settings_env(DATABASE_URL="postgresql+psycopg://recap:secret@127.0.0.1:1/none")
    try:
        got = scrape_in_process()
    finally:
        reset_engines()
    assert got[("recap_up", ())] == 0
    assert {k[0] for k in got} == {"recap_up", "recap_scrape_duration_seconds"}
    assert "could not read the database" in caplog.text
    assert "secret" not in caplog.text


@pytest.fixture
def exporter() -> Iterator[subprocess.Popen[str]]:
    """``recap metrics --port 0`` as its own process; its first line names its URL."""
    code = "import sys; from recap.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, "metrics", "--port", "0"],
                            cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()


def test_recap_metrics_serves_the_exposition_and_stops_on_sigterm(
        exporter: subprocess.Popen[str]) -> None:
    seed()
    assert exporter.stdout is not None
    line = exporter.stdout.readline()  # blocks until the server listens
    assert line.startswith("recap metrics: serving http://127.0.0.1:"), line
    url = line.split()[-1]
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200
        got = samples(response.read().decode())
    assert got[("recap_up", ())] == 1
    assert got[("recap_sessions_due", ())] == 1
    assert got[("recap_runs_total", (("reason", "normal"), ("status", "applied")))] == 2
    exporter.send_signal(signal.SIGTERM)
    assert exporter.wait(timeout=30) == 0


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_bad_port_is_a_usage_error(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    from recap.cli import main

    assert main(["metrics", "--port", port]) == 2
    assert "argument --port" in capsys.readouterr().err


def _query(base: str, promql: str) -> list[dict[str, Any]]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.load(response)
    except OSError:
        return []  # not listening yet
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


PROMETHEUS = shutil.which("prometheus")


def test_a_real_prometheus_scrapes_the_exporter(tmp_path: Path) -> None:
    require(PROMETHEUS, "Debian's prometheus package is not installed (apt-get install "
                        "prometheus): no real server to scrape the exporter")
    seed()
    registry = CollectorRegistry()
    registry.register(RecapCollector())
    server = serve(registry, address="127.0.0.1", port=0)
    target = f"127.0.0.1:{server.server_address[1]}"
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                      "scrape_configs:\n  - job_name: recap\n"
                      f"    static_configs:\n      - targets: ['{target}']\n")
    listen = f"127.0.0.1:{free_port()}"
    assert PROMETHEUS is not None
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={config}",
                             f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address={listen}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://{listen}"
    try:
        wait_for(lambda: _query(base, 'recap_up{job="recap"} == 1'), timeout=90,
                 what="Prometheus to scrape recap_up 1")
        (health,) = _query(base, 'up{job="recap"}')
        assert health["value"][1] == "1"
        (runs,) = _query(base, 'recap_runs_total{status="applied",reason="normal"}')
        assert runs["value"][1] == "2"
        (due,) = _query(base, "recap_sessions_due")
        assert due["value"][1] == "1"
    finally:
        prom.terminate()
        _out, err = prom.communicate(timeout=60)
        server.shutdown()
        server.server_close()
    assert "level=error" not in err, err


DASHBOARD = ROOT / "docs" / "grafana" / "recap.json"
METRICS_PAGE = ROOT / "docs" / "operations" / "metrics.md"


def dashboard_queries() -> list[str]:
    data = json.loads(DASHBOARD.read_text())
    assert data["uid"] and data["title"] == "Recap"
    return [t["expr"] for p in data["panels"] for t in p.get("targets", [])]


def test_the_dashboard_and_the_documented_alerts_use_only_exposed_series() -> None:
    seed()
    exposed = {name for name, _labels in scrape_in_process()}
    rules = documented_rules()
    used = {name for text in [*dashboard_queries(), rules]
            for name in re.findall(r"\brecap_[a-z_]+", text)}
    assert used <= exposed, used - exposed
    # The dashboard shows every series (Prometheus' own scrape_duration_seconds too).
    assert {name.removesuffix("_total") for name in exposed} <= {
        name.removesuffix("_total") for name in used}
    documented = set(re.findall(r"`(recap_[a-z_]+)", METRICS_PAGE.read_text()))
    assert exposed <= documented, exposed - documented


def documented_rules() -> str:
    """The alerting rules docs/operations/metrics.md shows (its ``groups:`` YAML block)."""
    (block,) = re.findall(r"```yaml\n(groups:\n.*?)```", METRICS_PAGE.read_text(), re.S)
    return str(block)


PROMTOOL = shutil.which("promtool")


def test_promtool_accepts_the_documented_rules_and_the_dashboard_queries(
        tmp_path: Path) -> None:
    require(PROMTOOL, "Debian's prometheus package is not installed (apt-get install "
                      "prometheus): no promtool to check PromQL")
    alerts = tmp_path / "alerts.yml"
    alerts.write_text(documented_rules())
    records = tmp_path / "dashboard.yml"
    # Grafana's variables, as Grafana would substitute them.
    exprs = [e.replace("$__rate_interval", "5m").replace("$job", ".*")
             for e in dashboard_queries()]
    records.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": [
        {"record": f"recap:dashboard_{i}", "expr": e} for i, e in enumerate(exprs)]}]}))
    assert PROMTOOL is not None
    done = subprocess.run([PROMTOOL, "check", "rules", str(alerts), str(records)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
