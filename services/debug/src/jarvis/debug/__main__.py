"""`python -m jarvis.debug`: serve the debug gateway's backends on their own."""

from __future__ import annotations

from jarvis.common.service import serve
from jarvis.debug.server import build
from jarvis.debug.settings import DebugSettings


def main() -> None:
    serve("debug", DebugSettings, build)


if __name__ == "__main__":
    main()
