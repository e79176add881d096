"""Runtime persistence: SQLAlchemy models and Alembic migrations."""
