"""``inproc sweep``: the same decode cells measured once per variant of engine settings.

pyperf's manager/worker split: the parent plans the variants (``plan``), runs each in a
fresh child process, ``inproc run``, that writes one ordinary results file (``run``), and
keeps ``sweep.json`` (``manifest``) current; the summary is derived from the results
files when they are loaded (``summary``). The parent never imports an engine: GPU memory
and captured graphs are not reliably handed back inside one process.
"""
