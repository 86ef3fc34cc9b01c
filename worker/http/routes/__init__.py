"""The API's routes, one module per resource; each route is the twin of one Python call."""
