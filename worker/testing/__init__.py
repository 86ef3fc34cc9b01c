"""A local stand-in of the Anthropic Messages API for your own tests, no key needed.

Point the real SDK at it with ``base_url``::

    from worker.testing import FakeAnthropic, ok, error

    fake = FakeAnthropic().start()
    fake.script(ok("a summary"), error(529, "Overloaded"))
    ...  # RECAP_ANTHROPIC_BASE_URL=fake.url
    fake.stop()

Unscripted calls get a deterministic answer; every request is validated as the
API does and recorded (``fake.requests``). ``fake.trickle(0.05)`` sends every
answer one byte every 50 ms (a slow or hostile server or proxy), to test that
your calls have a total deadline and not only a per-read timeout.
``fake.act_weak(Weak(...))`` makes unscripted answers misbehave like a small
model (echo the schema, loop facts to the cap, replace memories with junk, an
echoing or over-long title): see worker.testing.weak.
"""

from worker.testing.server import FakeAnthropic, Gate, Reply, error, ok
from worker.testing.weak import Weak

__all__ = ["FakeAnthropic", "Gate", "Reply", "Weak", "error", "ok"]
