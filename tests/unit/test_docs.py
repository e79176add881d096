"""The docs stay readable: short decision records with an index, and a README without repeated rows or paragraphs."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions"
README = ROOT / "README.md"
HEADINGS = ("## Context", "## Decision", "## Consequences")
MAX_RECORD_LINES = 80
# Two sentences opening with the same words (a paragraph or bullet pasted twice, then edited) say one thing twice.
OPENING_WORDS = 10


def records() -> list[Path]:
    return sorted(DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))


def prose(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        lines.append("" if fenced else line)
    return lines


def tables(lines: list[str]) -> list[list[str]]:
    found: list[list[str]] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            found.append(current)
            current = []
    return found


def row_key(row: str) -> str:
    """A row's first cell, or the first code span in it (`jarvis mcp --surface X` rows differ only in their options)."""
    cell = row.split("|")[1].strip()
    code = re.search(r"`([^`]+)`", cell)
    return code.group(1) if code else cell


def blocks(lines: list[str]) -> list[str]:
    """Paragraphs and top-level bullets (a nested bullet stays with its parent), whitespace normalised."""
    found: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        starts_item = line.startswith("- ")
        if (not line.strip() or starts_item or line.startswith(("|", "#"))) and current:
            found.append(" ".join(" ".join(current).split()))
            current = []
        if line.strip() and not line.startswith(("|", "#")):
            current.append(line)
    return found


def test_the_single_decisions_file_does_not_come_back() -> None:
    assert not (ROOT / "docs" / "decisions.md").exists(), "decisions are records under docs/decisions/"


def test_there_are_records() -> None:
    assert records()


@pytest.mark.parametrize("record", records(), ids=lambda path: path.name)
def test_each_record_has_its_three_sections_and_fits_on_a_page(record: Path) -> None:
    lines = record.read_text().splitlines()
    assert lines[0].startswith(f"# {record.name[:4]}. "), "the title is '# NNNN. Title'"
    for heading in HEADINGS:
        assert heading in lines, f"{record.name} lacks {heading!r}"
    assert len(lines) <= MAX_RECORD_LINES, f"{record.name} has {len(lines)} lines (at most {MAX_RECORD_LINES})"


def test_record_numbers_are_unique() -> None:
    numbers = Counter(path.name[:4] for path in records())
    assert [number for number, count in numbers.items() if count > 1] == []


def test_the_index_lists_every_record_and_nothing_else() -> None:
    index = (DECISIONS / "README.md").read_text()
    linked = set(re.findall(r"\]\((\d{4}-[^)]+\.md)\)", index))
    names = {path.name for path in records()}
    assert sorted(names - linked) == [], "records missing from docs/decisions/README.md"
    assert sorted(linked - names) == [], "the index links records that do not exist"


def test_readme_tables_have_no_repeated_row() -> None:
    repeated = []
    for table in tables(prose(README.read_text())):
        keys = Counter(row_key(row) for row in table if not re.fullmatch(r"\|[-:| ]+\|", row))
        repeated += [key for key, count in keys.items() if count > 1]
    assert repeated == []


def sentence_openings(paragraphs: list[str]) -> Counter[str]:
    sentences = [part for text in paragraphs for part in re.split(r"(?<=[.;:])\s+(?=[-*`A-Z])", text)]
    return Counter(" ".join(part.split()[:OPENING_WORDS]) for part in sentences if len(part.split()) >= OPENING_WORDS)


def test_readme_has_no_repeated_paragraph() -> None:
    found = blocks(prose(README.read_text()))
    assert [text for text, count in Counter(found).items() if count > 1] == []
    assert [opening for opening, count in sentence_openings(found).items() if count > 1] == []
