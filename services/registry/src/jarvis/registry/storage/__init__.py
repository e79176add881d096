"""Relational storage of the registry: ORM models, engines, transactions and migrations."""
