"""The archive lookup's statement: one per number of cues and dialect, its cues
bound by name, so SQLAlchemy builds and compiles it once."""

from __future__ import annotations

import pytest

from recap.core.context.lookback import Cue
from recap.store.lookback import lookup_query

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
def test_one_statement_per_number_of_cues_the_cues_bound_by_name(dialect: str) -> None:
    first, values = lookup_query("s1", [Cue("lgr-3621", 4.0), Cue("loader", 1.0)],
                                 dialect=dialect)
    again, other = lookup_query("s2", [Cue("a3f9c2d", 4.0), Cue("ledger", 1.0)],
                                dialect=dialect)
    assert again is first
    assert values["session_id"] == "s1" and other["session_id"] == "s2"
    assert (values["cue_0"], values["cue_1"]) == ("lgr-3621", "loader")
    assert ("phrase_0" in values) == (dialect == "sqlite")
    assert lookup_query("s1", [Cue("loader", 1.0)], dialect=dialect)[0] is not first
    compiled = first.compile()
    assert {"session_id", "cue_0", "cue_1"} <= set(compiled.params)
    assert "lgr-3621" not in str(compiled)


def test_no_cues_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="at least one cue"):
        lookup_query("s", [], dialect="postgresql")
