"""`jarvis` on PATH after scripts/bootstrap (issue 46): a link in ~/.local/bin where that is on PATH, offered on a
terminal, made with --link, never with --no-link; elsewhere the `export PATH=...` line. Each printed command works
as printed. Run in a temporary HOME with a PATH made for the test; without a terminal nothing is asked (CI)."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "jarvis-on-path"
TARGET = REPO / ".venv" / "bin" / "jarvis"
SYSTEM = "/usr/local/bin:/usr/bin:/bin"  # the shell's tools; no `jarvis` there


def run(home: Path, path: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {"HOME": str(home), "PATH": path, "LANG": "C.UTF-8", **(env or {})}
    return subprocess.run(
        [str(SCRIPT), *args], env=full, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def by_name(home: Path, path: str, line: str = "") -> subprocess.CompletedProcess[str]:
    """`jarvis --help` typed by name in a shell with `path`, after `line` (a printed export, say)."""
    return subprocess.run(
        ["bash", "-c", f"{line}\njarvis --help"],
        env={"HOME": str(home), "PATH": path, "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / ".local" / "bin").mkdir(parents=True)
    return tmp_path


def local_bin(home: Path) -> str:
    return f"{home}/.local/bin:{SYSTEM}"


def test_without_a_terminal_nothing_is_asked_and_the_printed_command_links(home: Path) -> None:
    path = local_bin(home)
    said = run(home, path)
    assert said.returncode == 0, said.stderr
    assert not (home / ".local" / "bin" / "jarvis").exists()
    command = said.stdout.strip().rsplit(": ", 1)[1]
    assert command.endswith("jarvis-on-path --link"), said.stdout
    assert by_name(home, path).returncode != 0  # not on PATH yet
    linked = subprocess.run(
        ["bash", "-c", command], env={"HOME": str(home), "PATH": path}, capture_output=True, text=True, timeout=60
    )
    assert linked.returncode == 0, linked.stderr
    assert (home / ".local" / "bin" / "jarvis").resolve() == TARGET.resolve()
    help_text = by_name(home, path)
    assert help_text.returncode == 0, help_text.stderr
    assert "one MCP endpoint" in help_text.stdout
    assert "jarvis is on PATH" in run(home, path).stdout  # once there, it says so and changes nothing


def test_link_and_no_link_decide_without_asking(home: Path) -> None:
    path = local_bin(home)
    refused = run(home, path, env={"JARVIS_LINK": "0"})
    assert "not linked" in refused.stdout
    assert not (home / ".local" / "bin" / "jarvis").exists()
    assert run(home, path, "--no-link").returncode == 0
    assert not (home / ".local" / "bin" / "jarvis").exists()
    linked = run(home, path, env={"JARVIS_LINK": "1"})
    assert "linked" in linked.stdout
    assert by_name(home, path).returncode == 0


def test_elsewhere_the_export_line_works_as_printed(home: Path) -> None:
    said = run(home, SYSTEM, "--link")
    assert said.returncode == 0, said.stderr
    assert not (home / ".local" / "bin" / "jarvis").exists()  # a link there would not be found
    line = next(line.strip() for line in said.stdout.splitlines() if line.strip().startswith("export PATH="))
    help_text = by_name(home, SYSTEM, line)
    assert help_text.returncode == 0, help_text.stderr


def test_a_file_not_made_by_jarvis_is_left_and_an_old_link_is_replaced_when_asked(home: Path) -> None:
    path = local_bin(home)
    mine = home / ".local" / "bin" / "jarvis"
    mine.write_text("#!/bin/sh\necho mine\n")
    said = run(home, path, "--link")
    assert "left as it is" in said.stdout
    assert mine.read_text() == "#!/bin/sh\necho mine\n"
    mine.unlink()
    mine.symlink_to(home / "old-checkout" / ".venv" / "bin" / "jarvis")
    said = run(home, path, "--link")
    assert "replacing the link to" in said.stdout
    assert mine.resolve() == TARGET.resolve()


def test_a_jarvis_earlier_on_path_is_named(home: Path) -> None:
    earlier = home / "earlier"
    earlier.mkdir()
    (earlier / "jarvis").write_text("#!/bin/sh\n")
    (earlier / "jarvis").chmod(0o755)
    said = run(home, f"{earlier}:{local_bin(home)}", "--link")
    assert f"{earlier / 'jarvis'} comes first on PATH" in said.stdout


def test_bad_arguments_are_refused_before_anything_is_done(home: Path) -> None:
    assert run(home, local_bin(home), "--lnk").returncode == 2
    assert run(home, local_bin(home), env={"JARVIS_LINK": "yes"}).returncode == 2
    bootstrap = subprocess.run(
        [str(REPO / "scripts" / "bootstrap"), "--lnk"],
        env={"HOME": str(home), "PATH": local_bin(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bootstrap.returncode == 2
    assert "--link or --no-link" in bootstrap.stderr


def test_on_a_terminal_it_asks(home: Path) -> None:
    path = local_bin(home)
    main, secondary = os.openpty()
    process = subprocess.Popen(
        [str(SCRIPT)],
        env={"HOME": str(home), "PATH": path},
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        close_fds=True,
    )
    os.close(secondary)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"[Y/n]" not in seen and time.monotonic() < deadline:
            if select.select([main], [], [], 1)[0]:
                seen += os.read(main, 4096)
        assert b"[Y/n]" in seen, seen
        os.write(main, b"y\n")
        assert process.wait(60) == 0
        while select.select([main], [], [], 0.5)[0]:
            try:
                seen += os.read(main, 4096)
            except OSError:  # the terminal closed with the process
                break
    finally:
        os.close(main)
        if process.poll() is None:
            process.kill()
    assert re.search(rb"linked .*jarvis", seen), seen
    assert by_name(home, path).returncode == 0
