"""Agent transcripts as Messages API content arrays, for the block tests: small
real image/PDF headers, a scripted transcript, and a hypothesis strategy of
random ones (text, parallel tool calls, tool errors, thinking, images)."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

from hypothesis import strategies as st

Message = tuple[str, str | list[dict[str, Any]]]


def png(width: int, height: int) -> str:
    """A valid 1-bit PNG of ``width`` x ``height`` (blank), base64."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    row = b"\x00" + b"\x00" * ((width + 7) // 8)
    raw = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0,
                                                           0, 0))
           + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b""))
    return base64.b64encode(raw).decode()


def pdf(pages: int) -> str:
    """A minimal PDF with ``pages`` page objects, base64 (enough for page counting)."""
    body = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count " + str(pages).encode() + b" >> endobj\n"
    body += b"".join(str(i + 2).encode() + b" 0 obj << /Type /Page /Parent 1 0 R >> endobj\n"
                     for i in range(pages))
    return base64.b64encode(body + b"%%EOF\n").decode()


def image(width: int = 64, height: int = 48) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": png(width, height)}}


def thinking(text: str = "Let me check the weather and the calendar.") -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "c2lnbmF0dXJl"}


def call(ident: str, name: str = "get_weather", **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": args or {"city": "Lisbon"}}


def result(ident: str, text: str = "18C, sunny", *, error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": ident, "content": text}
    if error:
        block["is_error"] = True
    return block


def scripted() -> list[Message]:
    """The issue's transcript: parallel tool calls, a tool error, thinking, an image."""
    return [
        ("user", [{"type": "text", "text": "What's in this photo, and the weather there?"},
                  image(800, 600)]),
        ("assistant", [thinking(), {"type": "text", "text": "Checking two sources."},
                       call("toolu_01", city="Lisbon"), call("toolu_02", "get_calendar",
                                                            day="2026-03-14")]),
        ("tool", [result("toolu_01", "18C, sunny, wind 12 km/h"),
                  result("toolu_02", "calendar service timed out", error=True)]),
        ("assistant", [thinking("The calendar failed; retry once."),
                       call("toolu_03", "get_calendar", day="2026-03-14")]),
        ("tool", [result("toolu_03", "Flight TP1234 at 09:40")]),
        ("assistant", "The photo shows Lisbon's Alfama; 18C and sunny. Your flight TP1234 "
                      "leaves at 09:40."),
        ("user", "Thanks! Book a table for two at 20:00."),
        ("assistant", [call("toolu_04", "book_table", time="20:00", people=2)]),
        ("tool", [result("toolu_04", "Booked: Taberna, 20:00, ref R-8812")]),
        ("assistant", "Booked Taberna at 20:00 (ref R-8812)."),
    ]


_words = st.text(alphabet="abcdefghij klmnop0123456789", min_size=1, max_size=40).filter(
    lambda s: s.strip() != "")


@st.composite
def transcripts(draw: st.DrawFn, *, max_steps: int = 14) -> list[Message]:
    """A random agent transcript in the order an app stores it: user turns (text,
    sometimes an image), assistant turns (text, or 1-3 parallel tool calls with
    optional thinking), the results in one row or one row per result (some errors,
    sometimes left unanswered when the user interrupts)."""
    out: list[Message] = []
    n = 0
    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(["user", "user_image", "reply", "tools"]))
        if kind == "user":
            out.append(("user", draw(_words)))
        elif kind == "user_image":
            out.append(("user", [{"type": "text", "text": draw(_words)}, image()]))
        elif kind == "reply":
            out.append(("assistant", draw(_words)))
        else:
            ids = [f"toolu_{n + k}" for k in range(draw(st.integers(1, 3)))]
            n += len(ids)
            blocks = [thinking()] if draw(st.booleans()) else []
            out.append(("assistant", blocks + [call(i) for i in ids]))
            answer = draw(st.sampled_from(["one_row", "rows", "none"]))
            results = [result(i, draw(_words), error=draw(st.booleans())) for i in ids]
            if answer == "one_row":
                out.append(("tool", results))
            elif answer == "rows":
                out.extend(("tool", [r]) for r in results)
    return out
