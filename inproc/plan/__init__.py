"""What a run will measure, fixed before any cell runs: the matrix settings (``settings``), the
cells and their verdicts made beforehand (``matrix``), the KV arithmetic (``capacity``) and
the synthetic prompts (``prompts``). Plain Python and numpy."""
