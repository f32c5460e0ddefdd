"""What the engine and serving benchmark reports share: percentiles, the machine a run was on,
Markdown tables, and a run written out as JSON beside a Plotly chart.

The JSON is committed under docs/bench; the HTML chart is written by the commands and ignored.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots


def percentile(values: Sequence[float], p: float) -> float | None:
    """The p-th percentile (0 to 100) of the values, None when there are none."""
    return float(np.percentile(values, p)) if len(values) else None


def machine(**extra) -> dict:
    """The machine a run was on, with what else the report wants to say about it."""
    return {"platform": platform.platform(), "processor": platform.processor(), **extra}


def num(value: float | None, digits: int = 0) -> str:
    """A table cell: thousands separated, a dash for a missing value."""
    return "–" if value is None else f"{value:,.{digits}f}"


def table(header: Sequence[str], rows: Iterable[Sequence]) -> list[str]:
    """A Markdown table's lines: the header, its rule, then one line a row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def figure(titles: Sequence[str], *, cols: int, rows: int = 1, **options) -> go.Figure:
    """A grid of subplots, titled in reading order."""
    return make_subplots(rows=rows, cols=cols, subplot_titles=tuple(titles), **options)


def axes(fig: go.Figure, col: int, *, x: str, y: str, row: int = 1, x_options=None, y_options=None) -> None:
    """Name one subplot's axes (options: plotly's axis settings, e.g. type="log")."""
    fig.update_xaxes(title_text=x, row=row, col=col, **(x_options or {}))
    fig.update_yaxes(title_text=y, row=row, col=col, **(y_options or {}))


def write(result: dict, fig: go.Figure, out_dir: Path, name: str, *, title: str, size: tuple[int, int]):
    """Write out_dir/NAME.json (the result) and out_dir/NAME.html (the chart, grouped bars, with
    plotly.js inline so it opens offline); returns the two paths."""
    width, height = size
    fig.update_layout(title=title, barmode="group", width=width, height=height)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"{name}.json"
    json_path.write_text(json.dumps(result, indent=2))
    html_path = out_dir / f"{name}.html"
    fig.write_html(html_path, include_plotlyjs=True, full_html=True)
    return json_path, html_path


def write_json(result: dict, out_dir: Path, name: str) -> Path:
    """The result as out_dir/<name>.json (the folder made if missing)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(result, indent=2))
    return path
