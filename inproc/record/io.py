"""The results file's public names: ``RESULTS.json`` (a manifest) and ``RESULTS.cells/`` (a cell file per entry).

``RESULTS.json`` (the path given to ``--out``, ``report``, ``compare``...) is the manifest:
the plan, the engine, the machine, and every entry's status, verdict and figures (cached,
with the version of the definitions that derived them). Each entry's raw records are in
its cell file in ``RESULTS.cells/`` (``inproc.record.cells``), written once when the entry
is measured.

This module holds no code: reading is ``inproc.record.load`` (its three stages: files,
document, fromjson), writing ``inproc.record.write``; no reader imports the writer. The
schema's history and the migration of older files are in ``inproc.record.migrate``.
"""
from __future__ import annotations

from inproc.record.files import check_version, read_json
from inproc.record.layout import BASELINE_KIND, RESULTS_HINT, cells_dir
from inproc.record.load import load_results, read_finished, record_from_json
from inproc.record.migrate import SCHEMA_VERSION, migrate
from inproc.record.tojson import plan_json, to_json
from inproc.record.write import ResultsWriter, write_manifest, write_results, write_text_atomic

__all__ = ["BASELINE_KIND", "RESULTS_HINT", "SCHEMA_VERSION", "ResultsWriter", "cells_dir", "check_version",
           "load_results", "migrate", "plan_json", "read_finished", "read_json", "record_from_json", "to_json",
           "write_manifest", "write_results", "write_text_atomic"]
