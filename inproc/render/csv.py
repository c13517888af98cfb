"""All measurements as CSV: one row per entry, every column, numbers unformatted.

The header is the published matrices' column names (docs/reference-matrices.md), unchanged
so that scripts written for their table work (its units: TTFT and Time between tokens in ms, Measured for in s), then
ours, with their units in the name. Every column is always present, so files from different runs line
up; a figure that is absent or not shown for the entry's status is an empty field.
"""
from __future__ import annotations

import csv
import io

from inproc.render.measurements import COLUMNS, measurements
from inproc.record.schema import RunRecord


def render_csv(rec: RunRecord) -> str:
    """The measurements table as CSV text (RFC 4180 quoting, ``\\n`` line ends)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([c.csv_name or c.name for c in COLUMNS])
    for m in measurements(rec):
        writer.writerow(["" if (v := c.value(m)) is None else v for c in COLUMNS])
    return out.getvalue()
