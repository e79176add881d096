"""`python -m jarvis.registry`: serve the registry on its own."""

from __future__ import annotations

from jarvis.common.service import serve
from jarvis.registry.server import build
from jarvis.registry.settings import RegistrySettings


def main() -> None:
    serve("registry", RegistrySettings, build)


if __name__ == "__main__":
    main()
