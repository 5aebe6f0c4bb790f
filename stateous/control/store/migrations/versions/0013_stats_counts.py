"""The counts of GET /stats kept in the same transactions (spec 95 §3).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing yet."""


def downgrade() -> None:
    """Nothing yet."""
