"""Gate: holds calls to the fake API until the test releases them, so a test acts
*during* a call instead of sleeping and hoping (see FakeAnthropic.hold)."""

from __future__ import annotations

import threading


class Gate:
    """Holds calls to the fake API until the test releases them (see FakeAnthropic.hold).

    ``entered`` is set once a call is being held, so a test can act *during* the
    call (write a message, take the lease) and then ``release()`` it.
    """

    def __init__(self, calls: int | None) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()
        self._remaining = calls  # None: every call until released
        self.held = 0

    def take(self) -> bool:
        """Whether the gate holds one more call (counts it when it does)."""
        if self._remaining is not None:
            if self._remaining <= 0:
                return False
            self._remaining -= 1
        return True

    def wait_entered(self, timeout: float = 30.0) -> None:
        """Return once a call is held; fail the test after ``timeout`` seconds."""
        if not self.entered.wait(timeout):
            raise AssertionError(f"no call reached the fake API within {timeout}s")

    def release(self) -> None:
        self.released.set()
