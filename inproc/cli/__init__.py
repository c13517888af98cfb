"""Command line: one module per command; bodies parse, call the library, render."""
