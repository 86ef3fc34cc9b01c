"""A weak model, on demand: a route whose answers misbehave the way a small model's do.

Install it like any route: ``fake.route(weak_model(Weak(echo_schema=True)))``
(``reset()`` drops it). Each behaviour reproduces a failure seen with a real
small model, so a test can show what Recap does about it:

- ``echo_schema``: every summary (and the facts list) repeats the tool schema's
  description of the summary ("The updated summary text, at most N tokens.").
- ``loop_facts``: a forced ``record_summary`` answer repeats one fact until the
  answer's max_tokens, and is cut off there (``stop_reason: max_tokens``). A
  summary asked for without the tool is answered normally.
- ``junk_replaces``: each stored fact offered as known (``<known_facts>``) is
  "replaced" by a junk fact that keeps none of its specifics.
- ``title``: the answer to every title request, cut off at the request's
  max_tokens (4 characters a token) like any answer that runs long.

Requests the chosen behaviours do not touch are passed on (None).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from recap.testing.answers import default_summary, tool_input
from recap.testing.recap import recap_kind
from recap.testing.replies import Reply, Request, Route, ok

JUNK_FACT = "The user said something about it."
LOOPED_FACT = {"fact": "The user likes the conversation.", "category": "other",
               "importance": 1}
CHARS_PER_OUTPUT_TOKEN = 4
_KNOWN = re.compile(r"<known_facts>\n(.*?)\n</known_facts>", re.S)


@dataclass(frozen=True)
class Weak:
    """Which weak-model behaviours the route shows (see the module docstring)."""

    echo_schema: bool = False
    loop_facts: bool = False
    junk_replaces: bool = False
    title: str | None = None


def schema_echo(body: dict[str, Any]) -> str:
    """The description of the summary in the request's tool schema, or the one
    Recap's tool uses when the request has no tool."""
    for tool in body.get("tools") or []:
        props = tool.get("input_schema", {}).get("properties", {})
        described = props.get("summary", {}).get("description")
        if isinstance(described, str):
            return described
    return f"The updated summary text, at most {body.get('max_tokens', 1024)} tokens."


def _tool_answer(weak: Weak, request: Request) -> Reply | None:
    body, prompt = request.body, request.prompt
    data = tool_input(body, prompt, None, fraction=0.0, seed=0)
    facts = list(data.get("facts") or [])
    if weak.echo_schema:
        echo = schema_echo(body)
        data["summary"] = f"{data.get('summary', '')}\n{echo}".strip()
        facts.append({"fact": echo, "category": "fact", "importance": 3})
    if weak.junk_replaces:
        known = _KNOWN.search(prompt)
        for line in known.group(1).splitlines() if known else []:
            head = line.split(":", 1)[0].strip()
            if head.isdigit():
                facts.append({"fact": JUNK_FACT, "category": "fact", "importance": 3,
                              "replaces": int(head)})
    if weak.loop_facts:
        room = request.max_tokens * CHARS_PER_OUTPUT_TOKEN
        facts += [dict(LOOPED_FACT) for _ in range(max(1, room // len(str(LOOPED_FACT))))]
        return ok(json.dumps({**data, "facts": facts}), stop_reason="max_tokens")
    if not (weak.echo_schema or weak.junk_replaces):
        return None
    return ok(json.dumps({**data, "facts": facts}))


def weak_model(weak: Weak) -> Route:
    """A route answering Recap's requests like a weak model (see the module docstring)."""

    def route(request: Request) -> Reply | None:
        kind = recap_kind(request.body)
        if kind == "title":
            if weak.title is None:
                return None
            room = request.max_tokens * CHARS_PER_OUTPUT_TOKEN
            return ok(weak.title[:room],
                      stop_reason="max_tokens" if len(weak.title) > room else "end_turn")
        if request.tool is not None:
            return _tool_answer(weak, request)
        if kind == "summary" and weak.echo_schema:
            text = default_summary(request.prompt, 3 * request.max_tokens)
            return ok(f"{text}\n{schema_echo(request.body)}")
        return None

    return route
