"""The stylesheet every HTML page inlines (the run report, compare, history, sweep, graphs and bisect pages):
one file, nothing fetched. ``inproc.render.html`` hands it on to the pages that import it from there."""
from __future__ import annotations

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1400px;padding:0 16px;color:#222}
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
.sub{color:#555}.warn{background:#fff4d6;border-left:4px solid #e6a700;padding:6px 10px;margin:8px 0}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td.l,th.l{text-align:left}td.reason{white-space:normal;text-align:left;min-width:240px;font-size:12px}
.heat td{text-align:center;min-width:92px}.heat .v{font-weight:600;font-size:15px}.heat .s{font-size:11px}
.heat td.na{background:#eee;color:#666}.heat td.q{outline:2px dashed #b00;outline-offset:-3px}
table.facts td{border:0;text-align:left;white-space:normal;vertical-align:top;padding:1px 14px 1px 0}
table.facts td:first-child{color:#555;white-space:nowrap}
pre{background:#f6f6f6;padding:6px 8px;margin:0;white-space:pre-wrap;word-break:break-all}
.charts{display:flex;flex-wrap:wrap;gap:16px}.panel{border:1px solid #eee;padding:6px}.panel h3{font-size:13px;margin:2px 0}
svg.chart text{font-size:11px;fill:#333}svg.chart .ct{font-size:12px;font-weight:600}
svg.chart .grid{stroke:#e5e5e5}svg.chart .axis{stroke:#888}svg.chart .band{fill:#e8f0fb}
.scroll{overflow-x:auto}
"""
