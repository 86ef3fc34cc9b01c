"""Recap's Alembic migrations, installed as the package ``recap._migrations``
(``recap db upgrade``); from a checkout, ``alembic upgrade head`` reads them here."""
