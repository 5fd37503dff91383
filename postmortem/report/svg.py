"""Geometry of the timeline SVG: numbers only, the template `_timeline.svg.j2` draws them.

Two bands share the lanes.  The *placed* band is a time axis: a dot at each event's
time, a bar for its uncertainty when the time was inferred.  The *unplaced* band holds
events with no time at all, spread in reading order, so nobody mistakes their
position for a time.

The placed band spans the job (its window and its own events, the root among them);
context outside the job (kernel history from earlier runs) is drawn in a chart of its
own (`history_layout`), which the page keeps folded.  Each placed dot carries its times
(`t`, `t_end`, `u`) so the page's script can zoom and pan without a server.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime, timezone

from postmortem.report.text import short
from postmortem.report.timeline_view import PLACED, UNPLACED, Lane, Mark, TimelineView, utc_text

WIDTH = 1000
LABEL_WIDTH = 180          # lane names on the left
PLOT_LEFT, PLOT_RIGHT = LABEL_WIDTH + 12, WIDTH - 16
LANE_HEIGHT = 20
BAND_TITLE = 24            # room for the band's title above its lanes
AXIS = 20                  # room for tick labels below the placed band
RADIUS = {"fatal": 5.5, "error": 5.0, "warning": 4.0, "info": 3.0, "debug": 2.5}


@dataclass(frozen=True)
class Dot:
    x: float
    x_end: float               # end of the repeat span (== x when the row appears once here)
    bar_left: float | None     # uncertainty bar, inferred times only
    bar_right: float | None
    y: float
    r: float
    source: str
    severity: str
    is_root: bool
    root_label: bool           # the word "root" is written next to the first root dot only
    lane: int
    href: str
    title: str
    t: float | None = None     # POSIX seconds of the first / last event, its uncertainty (placed band)
    t_end: float | None = None
    u: float = 0.0


@dataclass(frozen=True)
class LaneRow:
    y: float                   # centre line
    label: str
    full_label: str
    number: int


@dataclass(frozen=True)
class Band:
    name: str
    title: str
    top: float
    lanes: list[LaneRow]
    dots: list[Dot]
    ticks: list[tuple[float, str]]
    bottom: float
    t0: float | None = None    # the time range drawn (placed band)
    t1: float | None = None
    full: tuple[float, float] | None = None  # every placed event of this band, for "zoom out"


@dataclass(frozen=True)
class Layout:
    width: int
    height: float
    label_width: int
    plot_left: int
    plot_right: int
    bands: list[Band]


def layout(view: TimelineView) -> Layout:
    """The job's chart: its placed events over its own range, then the unplaced ones."""
    bands: list[Band] = []
    top = 4.0
    placed = [m for m in view.marks if m.band == PLACED and not m.context]
    unplaced = [m for m in view.marks if m.band == UNPLACED and not m.context]
    span = view.job_range if view.job_range else view.placed_range
    if placed and span:
        band = _placed_band(view, placed, top, span, "On the clock")
        bands.append(band)
        top = band.bottom + 10
    if unplaced:
        band = _unplaced_band(view, unplaced, top)
        bands.append(band)
        top = band.bottom + 4
    return Layout(WIDTH, top, LABEL_WIDTH, PLOT_LEFT, PLOT_RIGHT, bands)


def history_layout(view: TimelineView) -> Layout | None:
    """Context outside the job (kernel history ...), on its own axis; None when there is none."""
    placed = [m for m in view.marks if m.band == PLACED and m.context]
    if not placed or not view.history_range:
        return None
    what = ", ".join(f"{why}: {n}" for why, n in view.folded.items())
    band = _placed_band(view, placed, 4.0, view.history_range, f"Outside the job ({what})")
    return Layout(WIDTH, band.bottom + 10, LABEL_WIDTH, PLOT_LEFT, PLOT_RIGHT, [band])


def _lane_rows(lanes: list[Lane], used: set[int], top: float) -> tuple[list[LaneRow], dict[int, float]]:
    rows, y_of = [], {}
    y = top + BAND_TITLE + LANE_HEIGHT / 2
    for lane in lanes:
        if lane.number not in used:
            continue
        rows.append(LaneRow(y, short(lane.label, 28), lane.label, lane.number))
        y_of[lane.number] = y
        y += LANE_HEIGHT
    return rows, y_of


def _placed_band(view: TimelineView, marks: list[Mark], top: float, span: tuple[float, float],
                 name: str) -> Band:
    t0, t1 = span
    if t1 - t0 < 1.0:           # a single instant: give it a second of room
        t0, t1 = t0 - 0.5, t1 + 0.5
    pad = (t1 - t0) * 0.02      # the first and last marks off the plot's edges
    t0, t1 = t0 - pad, t1 + pad
    scale = (PLOT_RIGHT - PLOT_LEFT) / (t1 - t0)

    def x(t: float) -> float:
        return round(PLOT_LEFT + (t - t0) * scale, 1)

    def clamp(v: float) -> float:  # marks outside the range sit at its edge (the page clips them)
        return min(max(v, PLOT_LEFT - 40), PLOT_RIGHT + 40)

    lanes, y_of = _lane_rows(view.lanes, {m.lane for m in marks}, top)
    dots = [dataclasses.replace(
        _dot(m, clamp(x(m.first)), clamp(x(m.last)),
             clamp(x(m.first - m.uncertainty)) if m.uncertainty else None,
             clamp(x(m.last + m.uncertainty)) if m.uncertainty else None, y_of[m.lane], view),
        t=m.first, t_end=m.last, u=m.uncertainty) for m in marks]
    bottom = top + BAND_TITLE + LANE_HEIGHT * len(lanes)
    ticks = [(x(t0 + (t1 - t0) * i / 4), _tick_label(t0 + (t1 - t0) * i / 4, t1 - t0)) for i in range(5)]
    title = f"{name}: {utc_text(t0)} → {utc_text(t1)} (bars: uncertainty of inferred times)"
    every = [v for m in marks for v in (m.first, m.last)]
    return Band(PLACED, title, top, lanes, _draw_order(dots), ticks, bottom + AXIS, t0, t1,
                (min(every), max(every)))


def _unplaced_band(view: TimelineView, marks: list[Mark], top: float) -> Band:
    n = max(1, view.unplaced_count)
    step = (PLOT_RIGHT - PLOT_LEFT) / n

    def x(ordinal: float) -> float:
        return round(PLOT_LEFT + (ordinal + 0.5) * step, 1)

    lanes, y_of = _lane_rows(view.lanes, {m.lane for m in marks}, top)
    dots = [_dot(m, x(m.first), x(m.last), None, None, y_of[m.lane], view) for m in marks]
    bottom = top + BAND_TITLE + LANE_HEIGHT * len(lanes)
    title = f"Unplaced: {view.unplaced_count} events with no time, in reading order (position is not time)"
    return Band(UNPLACED, title, top, lanes, _draw_order(dots), [], bottom)


def _dot(m: Mark, x: float, x_end: float, bar_left, bar_right, y: float, view: TimelineView) -> Dot:
    row = m.row
    severity = row.severity.value
    lane = next((l.label for l in view.lanes if l.number == m.lane), "")
    repeat = f" ×{m.count}" if m.count > 1 else ""
    title = f"{short(row.text, 160)}\n{row.kind} · {severity}{repeat} · {lane}"
    if m.is_root:
        title = "ROOT · " + title
    return Dot(x, x_end, bar_left, bar_right, y, RADIUS.get(severity, 3.0), row.source, severity, m.is_root,
               False, m.lane, f"#{row.anchor}", title)


def _draw_order(dots: list[Dot]) -> list[Dot]:
    """Quiet dots first so loud ones and the root are drawn on top; one "root" label per band."""
    dots = sorted(dots, key=lambda d: (d.is_root, d.r))
    first_root = min((i for i, d in enumerate(dots) if d.is_root), key=lambda i: dots[i].x, default=None)
    if first_root is not None:
        dots[first_root] = dataclasses.replace(dots[first_root], root_label=True)
    return dots


def _tick_label(t: float, span: float) -> str:
    at = datetime.fromtimestamp(t, timezone.utc)
    if span < 10:
        return at.strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}"
    if span < 2 * 86400:
        return at.strftime("%H:%M:%S")
    return at.strftime("%m-%d %H:%M")

