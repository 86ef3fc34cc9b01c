"""uvicorn's HTTP protocols with one change: a request uvicorn cannot read (a request
line or a header over the parser's limit, e.g. an id of tens of kilobytes, or
bytes that are not HTTP) is answered with the API's JSON error body, not
uvicorn's plain text. ``recap serve`` runs :data:`JsonErrorsProtocol`."""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from recap.http.errors import error_body

# The answer's message: the request never reached the app, so nothing was stored.
UNREADABLE = ("the request could not be read: its request line or a header is malformed or "
              "too long (an id is at most 255 characters); nothing was stored")


def unreadable_response() -> tuple[list[tuple[bytes, bytes]], bytes]:
    """Headers and body of the 400 for a request uvicorn could not parse."""
    body = error_body("bad_request", UNREADABLE)
    return [(b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"connection", b"close")], body


class JsonErrorsH11Protocol(H11Protocol):
    """uvicorn's h11 protocol answering an unreadable request as JSON."""

    def send_400_response(self, msg: str) -> None:
        headers, body = unreadable_response()
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                      h11.Data(data=body), h11.EndOfMessage()):
            output = self.conn.send(event)
            if output:
                self.transport.write(output)
        self.transport.close()


def _httptools_400(protocol: Any) -> None:
    headers, body = unreadable_response()
    lines = [b"HTTP/1.1 400 Bad Request\r\n",
             *(name + b": " + value + b"\r\n"
               for name, value in [*protocol.server_state.default_headers, *headers]),
             b"\r\n", body]
    protocol.transport.write(b"".join(lines))
    protocol.transport.close()


# The httptools protocol when httptools is installed (as uvicorn's "auto" picks),
# else the h11 one. Classes at module level: `recap serve --workers N` pickles
# the one it runs by name.
JsonErrorsProtocol: type[asyncio.Protocol] = JsonErrorsH11Protocol
try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # uvicorn without its [standard] extra
    pass
else:
    class JsonErrorsHttpToolsProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol answering an unreadable request as JSON."""

        def send_400_response(self, msg: str) -> None:
            _httptools_400(self)

    JsonErrorsProtocol = JsonErrorsHttpToolsProtocol
