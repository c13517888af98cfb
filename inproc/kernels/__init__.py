"""Kernels: what ran inside a decode step, by name and category (the kernel pass's table and its categorizer)."""
