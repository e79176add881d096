"""`python -m jarvis.cli` runs the jarvis command (used to re-execute on restart)."""

from jarvis.cli.main import cli

cli()
