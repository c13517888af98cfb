"""``inproc bisect``: from a regressed cell to the engine commit that caused it (docs/bisect.md)."""
