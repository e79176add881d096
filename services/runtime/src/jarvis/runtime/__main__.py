"""`python -m jarvis.runtime`: serve the runtime on its own."""

from __future__ import annotations

from jarvis.common.service import serve
from jarvis.runtime.server import build
from jarvis.runtime.settings import RuntimeSettings


def main() -> None:
    serve("runtime", RuntimeSettings, build)


if __name__ == "__main__":
    main()
