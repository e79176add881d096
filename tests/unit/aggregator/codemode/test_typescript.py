"""Declarations from JSON Schemas, checked by Deno's own TypeScript checker (offline, no permissions)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jarvis.aggregator.codemode.runner import deno_binary
from jarvis.aggregator.codemode.typescript import declaration

CONFIG = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["list", "get", "set"], "description": "what to do */ evil"},
        "key": {"type": "string", "description": "a setting's name"},
        "value": {"type": ["string", "number", "null"]},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"a-b": {"type": "integer"}}}},
        "extra": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "either": {"anyOf": [{"type": "string"}, {"const": 3}]},
    },
    "required": ["action"],
}
OUTPUT = {"type": "object", "properties": {"settings": {"type": "array", "items": {"type": "string"}}}}


def declared() -> str:
    tools = [
        declaration("jarvis_config", "Read and write settings", CONFIG, OUTPUT),
        declaration("time-now", "The time", {"type": "object"}),
    ]
    return "declare const tools: {\n" + "\n".join(tools) + "\n};\n"


def test_a_declaration_reads_like_typescript() -> None:
    text = declaration("jarvis_config", "Read and write settings", CONFIG, OUTPUT)
    assert text.startswith("/** Read and write settings */\njarvis_config(args: {")
    assert '  action: "list" | "get" | "set";' in text
    assert "  /** a setting's name */\n  key?: string;" in text
    assert '"a-b"?: number;' in text
    assert "evil" in text
    assert "*/ evil" not in text  # a description cannot close its comment early
    assert text.endswith("}>;")
    assert "Promise<{\n  settings?: Array<string>;\n}>" in text
    assert declaration("x", "", {"type": "object"}).endswith(
        "x(args?: {\n  [key: string]: unknown;\n}): Promise<unknown>;"
    )


def check(tmp_path: Path, program: str) -> subprocess.CompletedProcess[str]:
    source = tmp_path / "program.ts"
    source.write_text(declared() + "export {};\n" + program)
    command = [deno_binary(), "check", "--no-remote", "--no-npm", "--no-config", "--no-lock", str(source)]
    env = {"DENO_DIR": str(tmp_path / "deno"), "NO_COLOR": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


@pytest.mark.parametrize(
    ("program", "ok"),
    [
        ('const r = await tools.jarvis_config({ action: "list" });\nconst s: string[] | undefined = r.settings;', True),
        ('await tools["time-now"]();\nawait tools.jarvis_config({ action: "get", either: 3, value: null });', True),
        ('await tools.jarvis_config({ action: "nope" });', False),
        ("await tools.jarvis_config({});", False),
    ],
)
def test_deno_checks_programs_against_the_declarations(tmp_path: Path, program: str, ok: bool) -> None:
    done = check(tmp_path, program)
    assert (done.returncode == 0) is ok, done.stdout + done.stderr
