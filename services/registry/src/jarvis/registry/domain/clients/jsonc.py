"""JSON and JSONC (comments, trailing commas) parsing with source positions, and small text edits.

Edits change only the bytes of the member being added, replaced or removed, so comments,
formatting and every unrelated key of a client's config survive exactly as they were.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 256
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_WHITESPACE = " \t\r\n"


class JsonSyntaxError(ValueError):
    """A document that is not valid JSON (or JSONC); the message says where."""

    def __init__(self, message: str, text: str, pos: int) -> None:
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        super().__init__(f"{message} at line {line}, column {column}")
        self.line = line
        self.column = column


@dataclass
class Token:
    kind: str  # one of "{}[]:," or "string", "number", "literal"
    start: int
    end: int


@dataclass
class Node:
    kind: str  # "object", "array" or "value"
    start: int
    end: int
    value: Any
    members: list[Member] = field(default_factory=list)


@dataclass
class Member:
    key: str
    key_start: int
    value: Node
    comma_end: int | None = None  # end of the comma right after the value, when there is one


@dataclass
class Document:
    text: str
    root: Node
    tokens: list[Token]

    def next_token_start(self, pos: int) -> int:
        """Start of the first token at or after `pos` (len(text) when there is none)."""
        starts = [t.start for t in self.tokens]
        index = bisect.bisect_left(starts, pos)
        return self.tokens[index].start if index < len(self.tokens) else len(self.text)


def parse(text: str, *, jsonc: bool) -> Document:
    tokens = _tokenize(text, jsonc)
    parser = _Parser(text, tokens, jsonc)
    root = parser.value(0)
    if parser.index < len(tokens):
        raise JsonSyntaxError("unexpected content after the end of the document", text, tokens[parser.index].start)
    return Document(text, root, tokens)


def _tokenize(text: str, jsonc: bool) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _WHITESPACE:
            i += 1
        elif ch == "/" and text.startswith(("//", "/*"), i):
            if not jsonc:
                raise JsonSyntaxError("comments are not allowed in this JSON file", text, i)
            if text[i + 1] == "/":
                newline = text.find("\n", i)
                i = n if newline < 0 else newline
            else:
                close = text.find("*/", i + 2)
                if close < 0:
                    raise JsonSyntaxError("unterminated comment", text, i)
                i = close + 2
        elif ch in "{}[]:,":
            tokens.append(Token(ch, i, i + 1))
            i += 1
        elif ch == '"':
            match = _STRING.match(text, i)
            if match is None:
                raise JsonSyntaxError("invalid or unterminated string", text, i)
            tokens.append(Token("string", i, match.end()))
            i = match.end()
        elif ch == "-" or ch.isdigit():
            match = _NUMBER.match(text, i)
            if match is None:
                raise JsonSyntaxError("invalid number", text, i)
            tokens.append(Token("number", i, match.end()))
            i = match.end()
        else:
            word = re.match(r"[A-Za-z0-9_$]+", text[i:])
            if word is None or word.group() not in _LITERALS:
                raise JsonSyntaxError(f"unexpected character {ch!r}", text, i)
            tokens.append(Token("literal", i, i + len(word.group())))
            i += len(word.group())
    return tokens


class _Parser:
    def __init__(self, text: str, tokens: list[Token], jsonc: bool) -> None:
        self.text, self.tokens, self.jsonc, self.index = text, tokens, jsonc, 0

    def _peek(self) -> Token:
        if self.index >= len(self.tokens):
            raise JsonSyntaxError("unexpected end of document", self.text, len(self.text))
        return self.tokens[self.index]

    def _take(self, kind: str) -> Token:
        token = self._peek()
        if token.kind != kind:
            raise JsonSyntaxError(f"expected {kind!r}", self.text, token.start)
        self.index += 1
        return token

    def value(self, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise JsonSyntaxError("document nested too deeply", self.text, self._peek().start)
        token = self._peek()
        if token.kind == "{":
            return self._object(depth)
        if token.kind == "[":
            return self._array(depth)
        if token.kind in {"string", "number", "literal"}:
            self.index += 1
            raw = self.text[token.start : token.end]
            return Node("value", token.start, token.end, json.loads(raw))
        raise JsonSyntaxError("expected a value", self.text, token.start)

    def _trailing_comma(self, comma: Token) -> None:
        if not self.jsonc:
            raise JsonSyntaxError("trailing commas are not allowed in this JSON file", self.text, comma.start)

    def _object(self, depth: int) -> Node:
        start = self._take("{").start
        members: list[Member] = []
        value: dict[str, Any] = {}
        while self._peek().kind != "}":
            key_token = self._take("string")
            self._take(":")
            member = Member(
                json.loads(self.text[key_token.start : key_token.end]), key_token.start, self.value(depth + 1)
            )
            members.append(member)
            value[member.key] = member.value.value
            if self._peek().kind == ",":
                comma = self._take(",")
                member.comma_end = comma.end
                if self._peek().kind == "}":
                    self._trailing_comma(comma)
            elif self._peek().kind != "}":
                raise JsonSyntaxError("expected ',' or '}'", self.text, self._peek().start)
        end = self._take("}").end
        return Node("object", start, end, value, members)

    def _array(self, depth: int) -> Node:
        start = self._take("[").start
        items: list[Any] = []
        while self._peek().kind != "]":
            items.append(self.value(depth + 1).value)
            if self._peek().kind == ",":
                comma = self._take(",")
                if self._peek().kind == "]":
                    self._trailing_comma(comma)
            elif self._peek().kind != "]":
                raise JsonSyntaxError("expected ',' or ']'", self.text, self._peek().start)
        end = self._take("]").end
        return Node("array", start, end, items)


# --- formatting helpers -------------------------------------------------------------------------


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def indent_unit(text: str) -> str:
    """The file's indentation step: a tab, or the smallest indentation in use (default two spaces)."""
    widths = []
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        if stripped and stripped != line and stripped[0] in '"{}[]':
            lead = line[: len(line) - len(stripped)]
            if "\t" in lead:
                return "\t"
            widths.append(len(lead))
    return " " * min(widths) if widths else "  "


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def _line_end(text: str, pos: int) -> int:
    """Position of the line break ending the line holding `pos` (before a CR of CRLF)."""
    end = text.find("\n", pos)
    if end < 0:
        return len(text)
    return end - 1 if end > 0 and text[end - 1] == "\r" else end


def _line_indent(text: str, pos: int) -> str:
    start = _line_start(text, pos)
    line = text[start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dump(value: Any, unit: str, base: str, newline: str) -> str:
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", newline + base)


def _member_text(key: str, value: Any, unit: str, base: str, newline: str) -> str:
    return f"{json.dumps(key, ensure_ascii=False)}: {_dump(value, unit, base, newline)}"


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


# --- edits --------------------------------------------------------------------------------------


def _walk(doc: Document, path: Sequence[str]) -> tuple[Node, int]:
    """The deepest object along `path` and how many path keys it consumed."""
    node = doc.root
    if node.kind != "object":
        raise ValueError("the top level is not a JSON object")
    for depth, key in enumerate(path):
        found = [m for m in node.members if m.key == key]
        if not found:
            return node, depth
        node = found[-1].value
        if node.kind != "object":
            raise ValueError(f"{key!r} is not a JSON object")
    return node, len(path)


def set_member(text: str, path: Sequence[str], key: str, value: Any, *, jsonc: bool) -> str:
    """Add `key: value` to the object at `path` (created when missing), or replace its value."""
    doc = parse(text, jsonc=jsonc)
    obj, depth = _walk(doc, path)
    for missing in reversed([*path[depth:], key][1:]):
        value = {missing: value}
    key = [*path[depth:], key][0]
    unit, newline = indent_unit(text), newline_of(text)
    inline = bool(obj.members) and "\n" not in text[obj.start : obj.members[0].key_start]

    existing = [m for m in obj.members if m.key == key]
    if existing:
        old = existing[-1].value
        new = (
            json.dumps(value, ensure_ascii=False)
            if inline
            else _dump(value, unit, _line_indent(text, existing[-1].key_start), newline)
        )
        return _splice(text, old.start, old.end, new)

    if not obj.members:
        parent = _line_indent(text, obj.start)
        member = _member_text(key, value, unit, parent + unit, newline)
        if text[obj.start + 1 : obj.end - 1].strip(_WHITESPACE) == "":
            return _splice(text, obj.start, obj.end, "{" + newline + parent + unit + member + newline + parent + "}")
        # Only comments inside: keep them, put the member first.
        return _splice(text, obj.start + 1, obj.start + 1, newline + parent + unit + member)

    last = obj.members[-1]
    if inline:
        member = f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}"
        return _splice(text, last.value.end, last.value.end, ", " + member)
    indent = _line_indent(text, last.key_start)
    member = _member_text(key, value, unit, indent, newline)
    if last.comma_end is not None:  # the file ends members with trailing commas: follow its style
        member += ","
    after = last.comma_end if last.comma_end is not None else last.value.end
    line_end = _line_end(text, after)
    if doc.next_token_start(after) > line_end and _only_comments(text[after:line_end]):
        # The rest of the last member's line is blank or a comment: the new member goes on the next line.
        text = _splice(text, line_end, line_end, newline + indent + member)
    else:
        text = _splice(text, after, after, newline + indent + member)
    if last.comma_end is None:
        text = _splice(text, last.value.end, last.value.end, ",")
    return text


def _only_comments(segment: str) -> bool:
    """True when `segment` (part of one line) holds only whitespace and complete comments."""
    rest = segment.strip(" \t")
    while rest:
        if rest.startswith("//"):
            return True
        close = rest.find("*/", 2) if rest.startswith("/*") else -1
        if close < 0:
            return False
        rest = rest[close + 2 :].strip(" \t")
    return True


def remove_member(text: str, path: Sequence[str], key: str, *, jsonc: bool) -> str:
    """Remove `key` from the object at `path`; a missing key is a KeyError."""
    doc = parse(text, jsonc=jsonc)
    obj, depth = _walk(doc, path)
    index = max((i for i, m in enumerate(obj.members) if m.key == key), default=None)
    if depth < len(path) or index is None:
        raise KeyError(key)
    member = obj.members[index]
    previous = obj.members[index - 1] if index > 0 else None
    end = member.comma_end if member.comma_end is not None else member.value.end
    start_of_line, end_of_line = _line_start(text, member.key_start), _line_end(text, end)
    own_lines = text[start_of_line : member.key_start].strip(" \t") == "" and text[end:end_of_line].strip(" \t") == ""
    if own_lines:
        cut_end = text.find("\n", end)
        text = _splice(text, start_of_line, len(text) if cut_end < 0 else cut_end + 1, "")
        if member.comma_end is None and previous is not None and previous.comma_end is not None:
            # The previous member becomes the last one: drop its comma so strict JSON stays strict.
            text = _splice(text, previous.comma_end - 1, previous.comma_end, "")
        return text
    if previous is not None:
        return _splice(text, previous.value.end, member.value.end, "")
    if index + 1 < len(obj.members):
        return _splice(text, member.key_start, obj.members[index + 1].key_start, "")
    return _splice(text, member.key_start, end, "")
