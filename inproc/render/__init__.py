"""Renderers: results -> text for people (terminal matrix, Markdown, HTML, CSV)."""
