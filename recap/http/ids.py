"""Ids in paths: every id the Python API accepts, "/" included, is one path segment,
percent-encoded (``/v1/sessions/tenant%2F42``).

Servers decode ``%2F`` before routing, which would make ``tenant%2F42`` two
segments. The guard rebuilds the path it routes on from the raw one
(:func:`routed_path`): each segment decoded, then ``%`` and ``/`` escaped again,
so a segment stays one; the routes' ``{name:id}`` parameters (:class:`IdConvertor`)
decode those two escapes back.
"""

from __future__ import annotations

from urllib.parse import unquote

from starlette.convertors import Convertor, register_url_convertor


def routed_path(raw_path: bytes) -> str:
    """The path to route on: each segment of ``raw_path`` decoded, with ``%`` and ``/``
    inside it escaped (``%25``, ``%2F``), so one segment stays one."""
    # Some clients' ASGI scopes carry the query in raw_path too: it is not routed on.
    segments = raw_path.partition(b"?")[0].decode("utf-8", "replace").split("/")
    return "/".join(unquote(s).replace("%", "%25").replace("/", "%2F") for s in segments)


def segment_value(segment: str) -> str:
    """An id from a segment of :func:`routed_path` (its two escapes decoded)."""
    return segment.replace("%2F", "/").replace("%25", "%")


class IdConvertor(Convertor[str]):
    """``{name:id}``: one segment of the routed path, as the id it encodes."""

    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return segment_value(value)

    def to_string(self, value: str) -> str:
        return value.replace("%", "%25").replace("/", "%2F")


register_url_convertor("id", IdConvertor())
