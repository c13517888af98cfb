"""The package's entry points for a notebook: ``inproc.open(path)``, read without importing an engine."""


def open(path):  # noqa: A001 - the notebook's entry point, as pyarrow.parquet.read_table or pandas.read_csv
    """A results file (``RESULTS.json``, any schema) as a :class:`inproc.record.notebook.Run`: its header,
    its cells' raw tables (``run.cell("decode-256x4").steps``, ``run.steps``) and its figures (``run.figures``)."""
    from inproc.record.notebook import open_run

    return open_run(path)
