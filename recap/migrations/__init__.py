"""Recap's Alembic migrations, the package ``recap.migrations`` (``recap db upgrade``
runs them from the installed package; ``alembic upgrade head`` from a checkout)."""
