"""`jarvis up` serves before the embedding model loads (issue 46 item 2: the model loads in the background and never
delays serving).

Deterministic: ONNX Runtime is replaced, for this `jarvis up` only, by a module whose import waits until the test
lets it go. The model's thread is then held inside its load for as long as the test likes; were serving to wait for
the model, /livez would never answer and start_jarvis would fail. Let go, the import fails as a missing package does
and discovery goes on without the model (lexical search)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx2
import pytest

from tests.support.stack import mcp_client, result_json, start_jarvis

pytestmark = pytest.mark.anyio

HELD_ONNXRUNTIME = '''"""Stands in for ONNX Runtime: waits at import until the test lets go, then fails."""
import os
import time
from pathlib import Path

gate = Path(os.environ["JARVIS_TEST_MODEL_GATE"])
gate.with_suffix(".waiting").touch()
while not gate.exists():
    time.sleep(0.05)
raise ImportError("onnxruntime held back by the test", name="onnxruntime")
'''


async def test_livez_and_mcp_answer_while_the_model_is_still_loading(tmp_path: Path) -> None:
    fake = tmp_path / "held" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(HELD_ONNXRUNTIME)
    gate = tmp_path / "gate"
    pythonpath = os.pathsep.join(p for p in (str(fake.parent), os.environ.get("PYTHONPATH", "")) if p)
    env = {"HOME": str(tmp_path), "PYTHONPATH": pythonpath, "JARVIS_TEST_MODEL_GATE": str(gate)}
    running = start_jarvis(tmp_path / "data", env=env)
    try:
        deadline = time.monotonic() + 120
        while not gate.with_suffix(".waiting").exists():  # the model's thread is inside its load, held there
            assert time.monotonic() < deadline, "the model never started loading\n" + running.log()
            time.sleep(0.1)
        live = httpx2.get(running.base_url + "/livez", timeout=10)
        assert live.status_code == 200
        async with mcp_client(running.url("/mcp")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names, "the discovery surface lists its tools"
            found = result_json(await client.call_tool("tool_find", {"query": "list installed servers"}))
            assert found, "lexical search answers without the model"
        assert "discovery embedding model loaded" not in running.log()
        assert not gate.exists()  # still held: everything above happened before the model could load
    finally:
        gate.touch()
        running.stop()
