"""A hostile or careless model, on demand: a route for testing Recap's edges.

Install it like any route: ``fake.route(hostile_model(Hostile(obey="...")))``
(``reset()`` drops it). Each behaviour is what a model does that Recap must not
trust:

- ``obey``: the model follows an instruction injected into what it read (a tool
  result, a pasted e-mail). Every summary answer carries the text in its
  summary and, with memories on, as a fact it claims the user stated
  (``"source": "user"``).
- ``oversize_tokens``: every summary and repair answer runs to about this many
  output tokens (a sentence repeated), whatever its cap: a model that ignores
  the length it was asked for (a tool's input can run to the answer's
  max_tokens).

Requests the chosen behaviours do not touch (titles, other apps' calls) are
passed on (None).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from recap.testing.answers import default_repair, default_summary, tool_input
from recap.testing.recap import recap_kind
from recap.testing.replies import Reply, Request, Route, ok

FILLER = "The conversation went on at length about many things. "
CHARS_PER_OUTPUT_TOKEN = 4


@dataclass(frozen=True)
class Hostile:
    """Which hostile behaviours the route shows (see the module docstring)."""

    obey: str | None = None
    oversize_tokens: int = 0


def _pad(text: str, tokens: int) -> str:
    room = tokens * CHARS_PER_OUTPUT_TOKEN - len(text)
    return text if room <= 0 else f"{text}\n{FILLER * (room // len(FILLER) + 1)}".strip()


def hostile_model(hostile: Hostile) -> Route:
    """A route answering Recap's summary and repair calls as ``hostile`` says."""

    def route(request: Request) -> Reply | None:
        kind = recap_kind(request.body)
        if kind not in ("summary", "repair"):
            return None
        if request.tool is not None:
            data = tool_input(request.body, request.prompt, None, fraction=0.0, seed=0)
            summary = str(data.get("summary", ""))
            facts = list(data.get("facts") or [])
            if hostile.obey:
                summary = f"{summary}\n{hostile.obey}".strip()
                facts.append({"fact": hostile.obey, "category": "fact", "importance": 5,
                              "source": "user"})
            summary = _pad(summary, hostile.oversize_tokens)
            return ok(json.dumps({"summary": summary, "facts": facts}))
        text = (default_repair(request.prompt) if kind == "repair"
                else default_summary(request.prompt, 3 * request.max_tokens))
        if hostile.obey:
            text = f"{text}\n{hostile.obey}".strip()
        return ok(_pad(text, hostile.oversize_tokens))

    return route
