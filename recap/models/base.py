from __future__ import annotations

from sqlalchemy import BigInteger, Integer, MetaData
from sqlalchemy.orm import DeclarativeBase

# Alembic's recommended naming convention: every constraint gets a stable,
# predictable name, so migrations can drop and alter them on any database.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# BIGINT on PostgreSQL; SQLite only auto-increments an INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


# Search structures the migrations build outside the models, per database (an
# expression GIN index on PostgreSQL; an FTS5 table and its shadow tables on
# SQLite): schema comparison leaves them alone (:func:`modelled`).
SEARCH_OBJECTS = ("ix_archived_messages_search", "archived_messages_fts")


def modelled(name: str | None, type_: str, parent_names: object = None) -> bool:
    """Alembic's ``include_name`` hook: False for :data:`SEARCH_OBJECTS`."""
    return not (name and name.startswith(SEARCH_OBJECTS))
