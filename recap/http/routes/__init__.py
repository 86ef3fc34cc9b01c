"""The API's routes, one module per resource; each route is the twin of one Python call.

Importing the package registers the ``{name:id}`` path parameter its routes use
(recap.http.ids), before any of them is built."""

from recap.http.ids import IdConvertor

__all__ = ["IdConvertor"]
