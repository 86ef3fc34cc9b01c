"""Settings a person can hold: every setting in one group, described; docs/SETTINGS.md
and .env.example generated from the model (stale files fail here); the chained timing
values derived from the two knobs and validated when set by hand; RECAP_SUMMARIZER
takes one name per meaning."""

from __future__ import annotations

import ast

import pytest

from recap.config.reference import FILES, GROUPS
from recap.config.timing import DERIVED
from recap.errors import ConfigError
from recap.settings import Settings, load_settings
from tests.env import ROOT

pytestmark = pytest.mark.unit

TIMINGS = ("RECAP_TASK_TIME_LIMIT_S", "RECAP_RETRY_BACKOFF_MAX_S", *(
    "RECAP_" + f.upper() for f in DERIVED))


@pytest.fixture
def no_timing_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in TIMINGS:  # the test environment sets short limits of its own
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("rel", sorted(FILES))
def test_generated_files_are_current(rel: str) -> None:
    assert (ROOT / rel).read_text() == FILES[rel](), (
        f"{rel} is stale: run `python -m recap.config.reference`")


def test_every_setting_is_in_exactly_one_group_and_described() -> None:
    owners: dict[str, list[str]] = {}
    for group in GROUPS:
        for field, info in group.model_fields.items():
            owners.setdefault(field, []).append(group.__name__)
            assert info.description and "\n" not in info.description, field
    assert {f: g for f, g in owners.items() if len(g) > 1} == {}
    missing = sorted(set(Settings.model_fields) - set(owners))
    assert missing == [], f"give these settings a group in recap/config: {missing}"


@pytest.mark.usefixtures("no_timing_env")
def test_the_chain_follows_the_time_limit() -> None:
    s = load_settings()
    assert (s.task_soft_time_limit_s, s.task_time_limit_s, s.lease_s,
            s.visibility_timeout_s, s.llm_timeout_s) == (240, 300, 360, 3600, 30.0)
    s = load_settings(task_time_limit_s=1800)
    assert (s.task_soft_time_limit_s, s.lease_s, s.visibility_timeout_s,
            s.llm_timeout_s) == (1440, 2160, 4200, 180.0)
    s = load_settings(task_time_limit_s=60, retry_backoff_max_s=10)
    assert (s.task_soft_time_limit_s, s.lease_s, s.visibility_timeout_s,
            s.llm_timeout_s) == (48, 72, 3600, 6.0)


@pytest.mark.usefixtures("no_timing_env")
def test_a_blank_derived_value_is_derived(monkeypatch: pytest.MonkeyPatch) -> None:
    # docker compose passes ${RECAP_LEASE_S:-} as an empty string.
    monkeypatch.setenv("RECAP_TASK_TIME_LIMIT_S", "600")
    monkeypatch.setenv("RECAP_LEASE_S", "")
    assert load_settings().lease_s == 720


@pytest.mark.usefixtures("no_timing_env")
def test_a_value_set_by_hand_is_kept_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECAP_LEASE_S", "900")
    assert load_settings().lease_s == 900
    monkeypatch.setenv("RECAP_TASK_TIME_LIMIT_S", "1200")  # now above the lease set by hand
    with pytest.raises(ConfigError, match="RECAP_LEASE_S must be greater than "
                                          "RECAP_TASK_TIME_LIMIT_S"):
        load_settings()


@pytest.mark.usefixtures("no_timing_env")
def test_a_bad_knob_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECAP_TASK_TIME_LIMIT_S", "soon")
    monkeypatch.setenv("RECAP_LEASE_S", "")
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "RECAP_TASK_TIME_LIMIT_S" in str(info.value)
    assert "RECAP_LEASE_S" not in str(info.value)  # blank means derived, not wrong


def test_summarizer_auto_is_read_as_claude() -> None:
    assert load_settings(summarizer="auto").summarizer == "claude"
    assert load_settings(summarizer="offline").summarizer_kind == "offline"
    with pytest.raises(ConfigError, match="RECAP_SUMMARIZER"):
        load_settings(summarizer="gpt")


def _writes_environ(node: ast.AST) -> bool:
    """``os.environ[...] = / del``, or ``os.environ.update/pop/setdefault/clear(...)``."""
    def is_environ(n: ast.AST) -> bool:
        return isinstance(n, ast.Attribute) and n.attr == "environ" and \
            isinstance(n.value, ast.Name) and n.value.id == "os"

    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
        return is_environ(node.value)
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("update", "pop", "setdefault", "clear", "popitem")
            and is_environ(node.func.value))


def test_library_code_never_writes_the_process_environment() -> None:
    # Settings are built at an edge and installed (recap.settings.use_settings); only
    # a command (recap/cli, and recap/bench, which `recap bench` runs) may set variables
    # for the processes it starts.
    writers = []
    for path in sorted((ROOT / "recap").rglob("*.py")):
        if path.relative_to(ROOT).parts[:2] in (("recap", "cli"), ("recap", "bench")):
            continue
        tree = ast.parse(path.read_text())
        writers += [f"{path.relative_to(ROOT)}:{getattr(n, 'lineno', 0)}"
                    for n in ast.walk(tree) if _writes_environ(n)]
    assert writers == []


def test_an_edge_installs_its_settings_and_reset_forgets_them() -> None:
    from recap.settings import get_settings, use_settings
    from recap.worker.jobs.resources import reset_process_state

    mine = load_settings(policy="threshold", batch_size=7)
    use_settings(mine)
    try:
        assert get_settings() is mine
    finally:
        reset_process_state()
    assert get_settings() is not mine and get_settings().batch_size != 7


def test_every_number_and_text_has_an_upper_bound() -> None:
    # A setting without one can ask a computation (or a column) for more than it holds.
    unbounded = []
    for field, info in Settings.model_fields.items():
        kinds = {k for m in info.metadata for k in ("le", "max_length")
                 if getattr(m, k, None) is not None}
        annotation = str(info.annotation)
        if any(t in annotation for t in ("int", "float", "str", "Secret")) and \
                "Literal" not in annotation and not kinds:
            unbounded.append(field)
    assert unbounded == []
