"""Installing the catalog's filesystem server through the `jarvis` surface (issue 37 item 8): it serves the
directories given in `args`, else the project roots, and the answer says which."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.stack import RunningJarvis, error_text, mcp_client, result_json

pytestmark = pytest.mark.anyio


async def test_the_answer_names_the_directories_served(jarvis: RunningJarvis, tmp_path: Path) -> None:
    async with mcp_client(jarvis.url()) as client:
        install = {"action": "install", "name": "filesystem", "new_name": "files", "args": [str(tmp_path)]}
        done = result_json(await client.call_tool("jarvis_server", install))
        assert done["note"] == f"serves {tmp_path}: the directories given"
        assert done["installed"]["launch"]["args"][-1] == str(tmp_path)

        unasked = result_json(await client.call_tool("jarvis_server", {"action": "install", "name": "filesystem"}))
        assert "the project roots (JARVIS_PROJECT_ROOTS)" in unasked["note"]
        assert "." not in unasked["installed"]["launch"]["args"]

        relative = {"action": "install", "name": "filesystem", "new_name": "here", "args": ["."]}
        assert "is not absolute; give full paths" in error_text(await client.call_tool("jarvis_server", relative))
        plain = result_json(await client.call_tool("jarvis_server", {"action": "install", "name": "fetch"}))
        assert "note" not in plain
