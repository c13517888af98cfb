"""``inproc graphs``: the padding a list of CUDA-graph capture sizes costs on the steps a run saw.

A decode step of T tokens runs the smallest captured graph of size >= T, so the graph
computes (size − T) padded tokens for nothing; a step above the largest size runs without
a graph. ``padding`` holds that arithmetic, ``suggest`` the exact least-waste list of K
sizes (a dynamic programme over the token counts seen), ``steps`` reads the counts from a
results file, ``analysis`` puts them together for the command and the report, ``cost``
reads what capture took at build, ``sweepfile`` writes the lists for ``inproc sweep``.
Plain Python and numpy: no engine.
"""
