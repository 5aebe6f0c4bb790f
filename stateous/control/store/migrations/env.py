"""Alembic's environment for Stateous: runs on the connection that `migrate.upgrade` passes in."""

from __future__ import annotations

from alembic import context

from stateous.control.store.tables import metadata

VERSION_TABLE = "stateous_version"

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    render_as_batch=True,
)
# The caller's transaction holds every migration: a failed one changes nothing.
with context.begin_transaction():
    context.run_migrations()
