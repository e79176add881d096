"""MkDocs hooks of the docs site (mkdocs.yml `hooks:`).

Placeholders written bare in prose (`<name>`, `<data dir>`) are shown as written, not taken for HTML tags that
vanish; the few tags a page may mean (`<br>`, `<details>`, …) and autolinks (`<https://…>`) are left alone.

Pages under docs/ sometimes link to files of the repository outside docs/ (a decision record to its benchmark's
results in bench/results/). Read in the repository those links work; the site holds no such file, so strict mode
would refuse them. A link whose target exists in the repository outside docs/ is shown as its text and the file's
path instead; a link to a file that exists nowhere is left alone, for strict mode to refuse.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

# A placeholder: `<`, then anything but an HTML tag this site uses, an autolink or a comment, then `>`.
PLACEHOLDER = re.compile(
    r"<(?!!--|/|(?:https?|mailto):|(?:br|details|summary|kbd|sup|a|img|span|div|p|em|strong|code|pre)\b[^<>]*>)"
    r"([^<>\n]+)>"
)
# [text](target) outside code: a target without spaces, not an absolute URL or a bare anchor.
LINK = re.compile(r"(?<!!)\[(?P<text>[^\]\n]+)\]\((?P<target>(?![a-z][a-z0-9+.-]*:|#)[^)\s]+)\)")


def outside_target(docs_dir: Path, page_path: str, target: str) -> str | None:
    """The repository path `target` (relative to the page) names when it lies outside docs/ and exists; else None."""
    root = docs_dir.parent
    path = target.split("#", 1)[0]
    if not path:
        return None
    joined = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page_path), path))
    if joined == "docs" or joined.startswith(("docs/", "../")):
        return None
    return joined if (root / joined).exists() else None


def rewrite(markdown: str, docs_dir: Path, page_path: str) -> str:
    """`markdown` with its links to repository files outside docs/ turned into text naming the file."""

    def replace(match: re.Match[str]) -> str:
        found = outside_target(docs_dir, page_path, match["target"])
        if found is None:
            return match[0]
        return f"{match['text']} (`{found.rstrip('/')}` in the repository)"

    def prose(text: str) -> str:
        # Outside code spans only: the odd parts of a split on them are code.
        spans = re.split(r"(`+[^`]*`+)", text)
        return "".join(s if i % 2 else PLACEHOLDER.sub(r"&lt;\1&gt;", s) for i, s in enumerate(spans))

    # Only outside fenced code blocks: the odd parts of a split on fences are code.
    parts = re.split(r"(^(?:```|~~~).*?^(?:```|~~~)[^\n]*$)", markdown, flags=re.MULTILINE | re.DOTALL)
    return "".join(part if index % 2 else prose(LINK.sub(replace, part)) for index, part in enumerate(parts))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any, **_: Any) -> str:
    return rewrite(markdown, Path(config["docs_dir"]), page.file.src_uri)
