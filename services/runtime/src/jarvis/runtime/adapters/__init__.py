"""Adapters of the runtime's ports: the Docker engine (Docker SDK) and git (argv subprocesses)."""
