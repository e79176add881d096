"""Serves an ASGI app on a free loopback port in a background thread (for HTTP-level fakes of SaaS APIs)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from tests.support.stack import free_port


@contextmanager
def serve_app(app: Any, port: int = 0) -> Iterator[str]:
    """Yield the base URL of `app` served by uvicorn on 127.0.0.1 (on `port`, else a free one); stop it afterwards."""
    port = port or free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off")
    )
    thread = threading.Thread(target=server.run, name=f"fake-http-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"fake HTTP server on port {port} did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
