"""Sending an HTTP answer one byte at a time, as a slow or hostile server or proxy does
(see FakeAnthropic.trickle): no single read waits long, so only a total deadline
ends the call."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def raw_response(status: int, reason: str, fields: Sequence[tuple[str, str]],
                 body: bytes) -> bytes:
    """The bytes of an HTTP/1.1 response: status line, header fields, body."""
    head = "".join(f"{k}: {v}\r\n" for k, v in fields)
    return f"HTTP/1.1 {status} {reason}\r\n{head}\r\n".encode("latin-1") + body


def send_trickled(write: Callable[[bytes], object], data: bytes, seconds_per_byte: float, *,
                  stopped: Callable[[], bool], last: Callable[[], object] = lambda: None) -> bool:
    """Write ``data`` a byte at a time, ``seconds_per_byte`` apart, until done or
    ``stopped()``; True when every byte went out. ``last()`` runs just before the
    final byte, so whatever it records is there before the client can have the
    whole answer. A client that hangs up (what a deadline does) ends it quietly."""
    try:
        for i in range(len(data)):
            if stopped():
                return False
            if i == len(data) - 1:
                last()
            write(data[i:i + 1])
            time.sleep(seconds_per_byte)
    except OSError:
        return False
    return True
