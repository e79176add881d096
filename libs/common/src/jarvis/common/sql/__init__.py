"""SQL plumbing every stateful service shares: engines, transactions, UTC columns, migrations."""
