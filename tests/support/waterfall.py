"""A trace drawn as a waterfall (SVG), from the spans a test received: one bar per span, indented under its parent,
placed on a shared time axis. docs/operations.md shows one, drawn by tests/e2e/test_traces.py from a real call."""

from __future__ import annotations

from html import escape

from tests.support.otlp_receiver import ReceivedSpan

ROW, LABEL, WIDTH, INDENT = 22, 300, 520, 14


def _ordered(spans: list[ReceivedSpan]) -> list[tuple[int, ReceivedSpan]]:
    """Depth-first from the roots (spans whose parent is not in the trace), children by start time."""
    ids = {s.span_id for s in spans}
    children: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        children.setdefault(span.parent_id if span.parent_id in ids else "", []).append(span)
    ordered: list[tuple[int, ReceivedSpan]] = []

    def walk(parent: str, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_ns):
            ordered.append((depth, span))
            walk(span.span_id, depth + 1)

    walk("", 0)
    return ordered


def waterfall_svg(spans: list[ReceivedSpan], title: str) -> str:
    rows = _ordered(spans)
    start = min(s.start_ns for s in spans)
    total = max(max(s.end_ns for s in spans) - start, 1)
    height = ROW * (len(rows) + 2)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL + WIDTH + 90}" height="{height}" '
        'font-family="monospace" font-size="12">',
        f'<text x="4" y="15" font-weight="bold">{escape(title)}</text>',
    ]
    for n, (depth, span) in enumerate(rows, start=1):
        y = ROW * n + 6
        x = LABEL + WIDTH * (span.start_ns - start) / total
        width = max(WIDTH * (span.end_ns - span.start_ns) / total, 1.0)
        colour = "#c0392b" if span.status_code == 2 else ("#2471a3" if span.service == "jarvis" else "#7d3c98")
        label = f"{span.service}: {span.name}"
        millis = (span.end_ns - span.start_ns) / 1e6
        parts += [
            f'<text x="{4 + INDENT * depth}" y="{y + 12}">{escape(label)}</text>',
            f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="14" fill="{colour}" rx="2"/>',
            f'<text x="{x + width + 4:.1f}" y="{y + 12}">{millis:.2f} ms</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
