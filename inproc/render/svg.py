"""Line and scatter charts as inline SVG, written by hand: no plotting library, no external reference.

The SVG is meant to sit inside an HTML5 page, so it carries no ``xmlns`` (HTML parsers
put ``<svg>`` in the SVG namespace themselves) and the page stays free of URLs.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

import numpy as np

# Colour-blind-safe categorical palette (Okabe–Ito), then greys for very many series.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000",
           "#7f7f7f", "#b0b0b0")

_MARGIN_LEFT, _MARGIN_RIGHT, _MARGIN_TOP, _MARGIN_BOTTOM = 64, 16, 28, 44
_LEGEND_ROW = 16


@dataclass(frozen=True)
class Series:
    """One line: points (x, y); a y of None or NaN breaks the line there."""

    name: str
    xs: Sequence[float]
    ys: Sequence[float | None]


@dataclass(frozen=True)
class Chart:
    title: str
    x_label: str
    y_label: str
    series: tuple[Series, ...]
    log_x: bool = False  # base-2 axis: contexts and concurrency levels double
    x_ticks: tuple[tuple[float, str], ...] = ()  # (x, label); empty: evenly spaced numbers
    bands: tuple[tuple[float, float], ...] = ()  # shaded x ranges (a measurement window)
    markers: bool = False  # dots on the points (few points, e.g. one per matrix cell)
    scatter: bool = False  # dots only, no lines (one per engine step)
    x_range: tuple[float, float] | None = None  # the x span to show even where no series has a point
    width: int = 480
    height: int = 260


def t(s: object) -> str:
    """Text for SVG/HTML: escaped, and '://' written as an entity so that no text looks like a URL."""
    return escape(str(s)).replace("://", "&#58;//")


def nice_step(span: float, target: int = 5) -> float:
    """A 1, 2 or 5 × 10^k step giving about ``target`` intervals over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def tick_label(v: float) -> str:
    if abs(v) >= 10_000:
        return f"{v / 1000:,.0f}K"
    return f"{v:,.0f}" if v == int(v) else f"{v:,.1f}"


def downsample(xs: np.ndarray, ys: np.ndarray, max_points: int = 150) -> tuple[np.ndarray, np.ndarray]:
    """Bin means, so a long trace costs a bounded number of points in the page."""
    if xs.size <= max_points:
        return xs, ys
    edges = np.linspace(0, xs.size, max_points + 1).astype(int)
    starts, counts = edges[:-1], np.diff(edges)  # every bin holds at least one point (xs.size > max_points)
    return (np.add.reduceat(np.asarray(xs, dtype=float), starts) / counts,
            np.add.reduceat(np.asarray(ys, dtype=float), starts) / counts)


def line_chart(c: Chart) -> str:
    """The chart as one ``<svg>`` element; "no data" text when no series has a point."""
    pts = [(x, float(y)) for s in c.series for x, y in zip(s.xs, s.ys) if y is not None and _ok(y)]
    legend_rows = math.ceil(len(c.series) / _legend_columns(c)) if len(c.series) > 1 or (c.scatter and c.series) else 0
    height = c.height + legend_rows * _LEGEND_ROW
    out = [(f'<svg class="chart" viewBox="0 0 {c.width} {height}" width="{c.width}" height="{height}" '
            f'role="img" aria-label="{t(c.title)}"><title>{t(c.title)}</title>'),
           f'<text x="{c.width / 2}" y="16" text-anchor="middle" class="ct">{t(c.title)}</text>']
    if not pts:
        out.append(f'<text x="{c.width / 2}" y="{c.height / 2}" text-anchor="middle">no data</text></svg>')
        return "".join(out)
    ax = _Axes(c, [p[0] for p in pts], [p[1] for p in pts])
    out += ax.frame()
    for i, s in enumerate(c.series):
        color = PALETTE[i % len(PALETTE)]
        out += _dots(ax, s, color) if c.scatter else _polyline(ax, s, color, c.markers)
    out += _legend(c, legend_rows)
    return "".join(out + ["</svg>"])


def _ok(y: float | None) -> bool:
    return y is not None and math.isfinite(y)


class _Axes:
    """Maps data to pixels and draws the frame, grid, ticks, labels and bands."""

    def __init__(self, c: Chart, xs: list[float], ys: list[float]) -> None:
        self.c = c
        self.x0, self.x1 = _MARGIN_LEFT, c.width - _MARGIN_RIGHT
        self.y0, self.y1 = c.height - _MARGIN_BOTTOM, _MARGIN_TOP
        lo = min(xs + [a for a, _ in c.bands] + list(c.x_range or ()))
        hi = max(xs + [b for _, b in c.bands] + list(c.x_range or ()))
        lo, hi = (math.log2(lo), math.log2(hi)) if c.log_x else (lo, hi)
        if hi == lo:
            lo, hi = lo - 1, hi + 1
        pad = 0.04 * (hi - lo) if c.markers else 0.0  # room for the end dots and their tick labels
        self.lo, self.hi = lo - pad, hi + pad
        self.step = nice_step(max(ys) or 1.0, 4)
        self.top = max(self.step, math.ceil(max(ys) / self.step) * self.step)

    def px(self, x: float) -> float:
        v = math.log2(x) if self.c.log_x else x
        return self.x0 + (v - self.lo) / (self.hi - self.lo) * (self.x1 - self.x0)

    def py(self, y: float) -> float:
        return self.y0 - min(max(y, 0.0), self.top) / self.top * (self.y0 - self.y1)

    def frame(self) -> list[str]:
        c, out = self.c, []
        for a, b in c.bands:
            out.append(f'<rect class="band" x="{self.px(a):.1f}" y="{self.y1}" width="{self.px(b) - self.px(a):.1f}" '
                       f'height="{self.y0 - self.y1}"/>')
        y = 0.0
        while y <= self.top + 1e-9:
            out.append(f'<line class="grid" x1="{self.x0}" x2="{self.x1}" y1="{self.py(y):.1f}" y2="{self.py(y):.1f}"/>'
                       f'<text x="{self.x0 - 4}" y="{self.py(y) + 4:.1f}" text-anchor="end">{tick_label(y)}</text>')
            y += self.step
        for x, label in c.x_ticks or self._auto_x_ticks():
            out.append(f'<text x="{self.px(x):.1f}" y="{self.y0 + 16}" text-anchor="middle">{t(label)}</text>')
        out.append(f'<line class="axis" x1="{self.x0}" x2="{self.x1}" y1="{self.y0}" y2="{self.y0}"/>'
                   f'<text x="{(self.x0 + self.x1) / 2}" y="{self.y0 + 34}" text-anchor="middle">{t(c.x_label)}</text>'
                   f'<text transform="translate(14 {(self.y0 + self.y1) / 2}) rotate(-90)" text-anchor="middle">'
                   f'{t(c.y_label)}</text>')
        return out

    def _auto_x_ticks(self) -> list[tuple[float, str]]:
        step = nice_step(self.hi - self.lo, 5)
        first = math.ceil(self.lo / step) * step
        return [(v, tick_label(v)) for v in np.arange(first, self.hi + 1e-9, step)]


def _polyline(ax: _Axes, s: Series, color: str, markers: bool) -> list[str]:
    out, run = [], []
    pairs = list(zip(s.xs, s.ys)) + [(None, None)]  # the sentinel flushes the last run
    for x, y in pairs:
        if x is not None and y is not None and _ok(y):
            run.append((f"{ax.px(x):.1f}", f"{ax.py(y):.1f}", x, y))
            continue
        if len(run) > 1:
            points = " ".join(f"{a},{b}" for a, b, _, _ in run)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.8" points="{points}"/>')
        if markers or len(run) == 1:  # a lone point has no line to show it; data-x/-y: its values, unrounded
            out += [f'<circle cx="{a}" cy="{b}" r="2.5" fill="{color}" data-series="{t(s.name)}" '
                    f'data-x="{float(x)!r}" data-y="{float(y)!r}"/>' for a, b, x, y in run]
        run = []
    return out


def _dots(ax: _Axes, s: Series, color: str) -> list[str]:
    return [f'<circle cx="{ax.px(x):.1f}" cy="{ax.py(y):.1f}" r="1.8" fill="{color}" fill-opacity="0.6"/>'
            for x, y in zip(s.xs, s.ys) if x is not None and _ok(y)]


def _legend_columns(c: Chart) -> int:
    """As many legend entries per row as fit, judged from the longest name (~6.5 px a letter)."""
    longest = max(len(s.name) for s in c.series) * 6.5 + 24
    return max(1, int((c.width - 16) // longest))


def _legend(c: Chart, rows: int) -> list[str]:
    if rows == 0:
        return []
    columns = _legend_columns(c)
    out, col_w = [], (c.width - 16) / columns
    for i, s in enumerate(c.series):
        x = 16 + (i % columns) * col_w
        y = c.height + (i // columns) * _LEGEND_ROW + 4
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x:.1f}" y="{y - 8}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{x + 14:.1f}" y="{y + 1}">{t(s.name)}</text>')
    return out
