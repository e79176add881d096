"""The catalog of installable servers: bundled entries, imported files, storage."""
