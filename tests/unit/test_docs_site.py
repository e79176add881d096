"""The docs site (issue 46): it builds in strict mode, its reference pages are what the code gives now, and the
README stays an introduction that fits on a screen and links into it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_BYTES = 12 * 1024
START = "scripts/bootstrap && .venv/bin/jarvis up"
TEST = "scripts/test"


def test_the_generated_reference_pages_match_the_code() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "docs" / "gen_reference.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_site_builds_in_strict_mode(tmp_path: Path) -> None:
    """A broken link or anchor, a missing snippet or a page left out of the navigation fails the build."""
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2, on every build
    build = ["build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)]
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", *build],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    home = (site / "index.html").read_text()
    assert "aggregator: one port" in home, "the README's picture is on the home page"
    assert "--8&lt;--" not in home, "a snippet marker left as text"
    assert 'code_run(code="""' in (site / "code-mode" / "index.html").read_text().replace("&quot;", '"')


class ConfigLoader(yaml.SafeLoader):
    """mkdocs.yml with MkDocs' own tags (`!relative`) read as nothing: only the navigation is wanted here."""


ConfigLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def test_every_page_is_in_the_navigation_or_is_a_decision_record() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=ConfigLoader)  # tags are ignored
    pages: list[str] = []

    def collect(items: list[object]) -> None:
        for item in items:
            for value in item.values() if isinstance(item, dict) else [item]:
                if isinstance(value, list):
                    collect(value)
                else:
                    pages.append(str(value))

    collect(config["nav"])
    docs = ROOT / "docs"
    on_disk = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")}
    records = {p for p in on_disk if re.fullmatch(r"decisions/\d{4}-.+\.md", p)}
    assert sorted(on_disk - records - set(pages)) == []
    assert sorted(set(pages) - on_disk) == []


def test_the_readme_fits_on_a_screen_and_keeps_its_two_commands() -> None:
    text = README.read_text()
    assert len(text.encode()) <= MAX_README_BYTES, (
        f"README.md is {len(text.encode())} bytes (at most {MAX_README_BYTES})"
    )
    blocks = re.findall(r"```sh\n(.*?)```", text, re.DOTALL)
    assert f"{START}\n" in blocks, "the command that starts Jarvis, as one block"
    assert f"{TEST}\n" in blocks, "the test command, as one block"
    assert (ROOT / "scripts" / "bootstrap").exists()
    assert (ROOT / TEST).exists()


def test_the_readmes_links_reach_files() -> None:
    links = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", README.read_text())
    assert links, "the README links into the docs"
    assert sorted(link for link in links if not (ROOT / link).exists()) == []
    assert any(link.startswith("docs/") for link in links)


def test_the_hook_shows_placeholders_and_names_files_outside_the_site() -> None:
    from tools.docs.hooks import rewrite

    docs = ROOT / "docs"
    code = "see <name in words>, `<kept>` and <br>\n```\n<kept>\n```\n"
    page = code + "[results](../../bench/results/) [gone](../../nope.md)"
    shown = rewrite(page, docs, "decisions/README.md")
    assert shown.startswith(code.replace("<name in words>", "&lt;name in words&gt;"))
    assert "results (`bench/results` in the repository)" in shown
    assert "[gone](../../nope.md)" in shown, "a link to nothing is left for strict mode to refuse"
