"""Chart geometry for the console's inline SVG (the Usage page): numbers in, shapes out, drawn by the templates with
no script and no chart library (decision 0068). Each chart is also a table on its page: the shapes are for the eye,
the numbers for everyone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 640, 160  # the viewBox of a time chart; the stylesheet scales it to the page
ROW = 22  # a bar's height in a chart of one bar per name


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: float


def _scale(values: Sequence[float]) -> float:
    """What a chart's full height stands for: the largest value, 1 for an empty or all-zero chart."""
    return max([*values, 0.0]) or 1.0


def columns(values: Sequence[float], labels: Sequence[str], top: float | None = None) -> list[Bar]:
    """One upright bar per value, left to right, on a common scale (`top`, else the largest value)."""
    if not values:
        return []
    full, step = top or _scale(values), WIDTH / len(values)
    answer = []
    for i, (value, label) in enumerate(zip(values, labels, strict=True)):
        height = HEIGHT * value / full
        answer.append(Bar(i * step + 1, HEIGHT - height, max(step - 2, 1), height, label, value))
    return answer


def line(values: Sequence[float]) -> str:
    """An SVG polyline's points through the middle of each value's column."""
    if not values:
        return ""
    full, step = _scale(values), WIDTH / len(values)
    return " ".join(f"{(i + 0.5) * step:.1f},{HEIGHT - HEIGHT * v / full:.1f}" for i, v in enumerate(values))


def rows(named: Sequence[tuple[str, float]]) -> list[Bar]:
    """One bar per name, top to bottom, as wide as its value on the largest's scale."""
    full = _scale([value for _, value in named])
    return [Bar(0, i * ROW, WIDTH * value / full, ROW - 4, name, value) for i, (name, value) in enumerate(named)]
