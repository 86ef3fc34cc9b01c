"""A chat app's own Alembic history, written into a folder: what an app beside
Recap has (alembic.ini, migrations/env.py, two revisions, a table of its own).

Its first revision is named ``0001``, as Recap's first one is: an app's history
may use the same ids, and Recap must still tell the two apart. Its env.py reads
DATABASE_URL as an app's would (or the Config's ``url`` attribute, in process)
and passes :func:`recap.migrate.outside_recap` to autogenerate, so the app's
``alembic check`` sees none of Recap's tables."""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config

APP_FIRST = "0001"
APP_HEAD = "a1b2c3d4app"
APP_TABLE = "app_orders"

INI = """[alembic]
script_location = %(here)s/migrations
path_separator = os
"""

ENV = '''"""The app's Alembic environment: its history in alembic_version (Alembic's default)."""
import os

from alembic import context
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine

from recap.migrate import outside_recap

metadata = MetaData()
Table("app_orders", metadata, Column("id", Integer, primary_key=True),
      Column("note", String(200)))

url = context.config.attributes.get("url") or os.environ["DATABASE_URL"]
engine = create_engine(url)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=metadata,
                      include_name=outside_recap)
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
'''

REVISION = '''from alembic import op
import sqlalchemy as sa

revision = {revision!r}
down_revision = {down!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
    {upgrade}


def downgrade() -> None:
    {downgrade}
'''


def write_app_history(folder: Path) -> Path:
    """``folder`` with the app's alembic.ini and migrations/ (created or replaced)."""
    versions = folder / "migrations" / "versions"
    versions.mkdir(parents=True, exist_ok=True)
    (folder / "alembic.ini").write_text(INI)
    (folder / "migrations" / "env.py").write_text(ENV)
    (versions / "0001_orders.py").write_text(REVISION.format(
        revision=APP_FIRST, down=None,
        upgrade="op.create_table('app_orders', sa.Column('id', sa.Integer(), "
                "primary_key=True))",
        downgrade="op.drop_table('app_orders')"))
    (versions / "a1b2c3d4app_note.py").write_text(REVISION.format(
        revision=APP_HEAD, down=APP_FIRST,
        upgrade="op.add_column('app_orders', sa.Column('note', sa.String(200)))",
        downgrade="op.drop_column('app_orders', 'note')"))
    return folder


def app_config(folder: Path, url: str) -> Config:
    """The app's Alembic configuration, in process, for the database at ``url``."""
    cfg = Config(str(folder / "alembic.ini"))
    cfg.attributes["url"] = url
    return cfg


def app_migrate(folder: Path, url: str, revision: str = "head", *,
                down: bool = False) -> None:
    """What ``alembic upgrade|downgrade REVISION`` does in the app's folder."""
    from alembic import command

    (command.downgrade if down else command.upgrade)(app_config(folder, url), revision)
