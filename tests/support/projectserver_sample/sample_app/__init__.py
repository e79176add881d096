"""A tiny application for the project-server tests: state, traps, a busy thread, a database, logs."""
