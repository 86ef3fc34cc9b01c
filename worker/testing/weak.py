"""A weak model, on demand: the stand-in's answers misbehave the way a small model's do.

Turn behaviours on with ``FakeAnthropic.act_weak(Weak(...))`` (``reset()`` turns
them off). Each one reproduces a failure seen with a real small model, so a test
can show what Recap does about it:

- ``echo_schema``: every summary (and the facts list) repeats the tool schema's
  description of the summary ("The updated summary text, at most N tokens.").
- ``loop_facts``: a forced ``record_summary`` answer repeats one fact until the
  answer's max_tokens, and is cut off there (``stop_reason: max_tokens``). A
  summary asked for without the tool is answered normally.
- ``junk_replaces``: each stored fact offered as known (``<known_facts>``) is
  "replaced" by a junk fact that keeps none of its specifics.
- ``title``: the answer to every title request; cut off at the request's
  max_tokens (4 characters a token) like any answer that runs long.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

JUNK_FACT = "The user said something about it."
LOOPED_FACT = {"fact": "The user likes the conversation.", "category": "other",
               "importance": 1}
CHARS_PER_OUTPUT_TOKEN = 4
_KNOWN = re.compile(r"<known_facts>\n(.*?)\n</known_facts>", re.S)


@dataclass(frozen=True)
class Weak:
    """Which weak-model behaviours the stand-in shows (see the module docstring)."""

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


def is_title_request(body: dict[str, Any]) -> bool:
    return str(body.get("system", "")).startswith("You write short titles")


def weaken_tool_input(weak: Weak, body: dict[str, Any], prompt: str,
                      data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The forced tool's input as the weak model answers it; True if it ran to
    max_tokens (the caller reports ``stop_reason: max_tokens``)."""
    data = dict(data)
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
    data["facts"] = facts
    if weak.loop_facts:
        room = int(body.get("max_tokens", 1024)) * CHARS_PER_OUTPUT_TOKEN
        looped = max(1, room // len(str(LOOPED_FACT)))
        data["facts"] = facts + [dict(LOOPED_FACT) for _ in range(looped)]
        return data, True
    return data, False


def weaken_text(weak: Weak, body: dict[str, Any], text: str) -> tuple[str, bool]:
    """A plain-text answer as the weak model gives it; True if cut off at max_tokens."""
    if weak.title is not None and is_title_request(body):
        room = int(body.get("max_tokens", 30)) * CHARS_PER_OUTPUT_TOKEN
        return weak.title[:room], len(weak.title) > room
    if weak.echo_schema and not is_title_request(body):
        return f"{text}\n{schema_echo(body)}".strip(), False
    return text, False
