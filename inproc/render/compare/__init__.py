"""The compare subject: its view (``view``: one row per cell and metric with its mark, the sentences of ``lines``,
the kernel section of ``kernels``, the diagnoses, built once from a comparison; ``side_by_side``: two engines'
rows), its arrangements as text and Markdown (``formats``) and as the HTML page with the runs' curves (``page``),
and its JSON (``data``: every figure unrounded, which no other format shows). Each arrangement places the view's
pieces with the shared writers (``inproc.render.writers``); none builds a row."""
