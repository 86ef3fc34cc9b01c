"""A local stand-in of the Anthropic Messages API for your own tests, no key needed.

Point the real SDK at it with ``base_url``::

    from recap.testing import FakeAnthropic, ok, error

    fake = FakeAnthropic().start()
    fake.script(ok("a summary"), error(529, "Overloaded"))
    fake.route(lambda r: ok("A title") if r.system.startswith("You write short titles")
               else None)
    ...  # ANTHROPIC_BASE_URL=fake.url
    fake.stop()

Each call is answered by the routes the test set, then (for a call that is not
Recap's own: an agent's) the assistant queue, then the script, then ``always``, then
a deterministic default answer: a forced tool gets Recap's summary tool input, any
other call text, so an agent's loop ends. An agent's turns are scripted with
``fake.assistant(tool_call("weather", {"city": "Lisbon"}), ok("Sunny."))``.
``"stream": true`` is answered with the API's event stream, and
``/v1/chat/completions`` is the OpenAI-compatible route (``base_url=fake.url + "/v1/"``).
Every request is validated as the API does and
recorded (``fake.requests``). ``fake.trickle(0.05)`` sends every answer one byte every
50 ms (a slow or hostile server or proxy), to test that your calls have a total
deadline and not only a per-read timeout. ``POST /v1/messages/count_tokens`` is
answered with the count ``usage`` would report (``fake.count_tokens(1.5)``: a
tokenizer that counts half again as many; ``None``: a 404, as a server without
it); ``fake.counts(count(10**15), ok(trickle=0.05))`` scripts the next answers.
``fake.route(weak_model(Weak(...)))``
answers like a small model (echo the schema, loop facts to the cap, replace
memories with junk, an echoing or over-long title): see recap.testing.weak.
``fake.route(hostile_model(Hostile(obey=..., oversize_tokens=...)))`` answers like a
model that follows an injected instruction or ignores its length cap: see
recap.testing.hostile.
``FakeAnthropic(neutral=True)`` answers every caller by one summarizing rule, blind
to prompts and tool schemas (first sentence of each message, capped): see
recap.testing.neutral.
See docs/TESTING.md.
"""

from recap.testing.answers import default_summary, drop_specifics, tool_input
from recap.testing.gate import Gate
from recap.testing.hostile import Hostile, hostile_model
from recap.testing.neutral import Neutral
from recap.testing.recap import recap_kind
from recap.testing.replies import Reply, Request, Route, count, error, ok, tool_call
from recap.testing.server import FakeAnthropic
from recap.testing.usage import fake_tokens, request_usage
from recap.testing.validate import validate_cache_control, validate_messages_request
from recap.testing.weak import Weak, weak_model

__all__ = ["FakeAnthropic", "Gate", "Hostile", "Reply", "Request", "Route", "default_summary",
           "count", "drop_specifics", "error", "fake_tokens", "ok", "recap_kind", "request_usage",
           "hostile_model", "Neutral", "tool_call",
           "tool_input", "validate_cache_control", "validate_messages_request",
           "Weak", "weak_model"]
