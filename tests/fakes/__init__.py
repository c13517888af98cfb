"""Fakes for tests: stand-ins named as fakes, never mistaken for the real thing."""
