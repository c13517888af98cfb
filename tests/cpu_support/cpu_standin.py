"""Shared machinery for the import-only stand-ins in this folder (no op computes).

SGLang imports ``torchvision`` and ``sgl_kernel`` at module level, but neither has a
build for this CPU. The stand-ins let those imports succeed; any name they hand out
is a :class:`Missing` placeholder that raises the moment it is called, so a code
path that really needs the kernel fails loudly instead of computing something false.
"""
from __future__ import annotations


class StandInCalled(RuntimeError):
    """A stand-in was called: the code path needs the real package."""


class Missing:
    """Placeholder for a name of a package that is not installed; attributes chain, calls raise."""

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def __getattr__(self, name: str) -> "Missing":
        if name.startswith("__"):
            raise AttributeError(name)
        return Missing(f"{self._qualname}.{name}")

    def __call__(self, *args: object, **kwargs: object) -> object:
        raise StandInCalled(
            f"{self._qualname} was called, but only an import-only stand-in is installed "
            "(tests/cpu_support); this code path needs the real package."
        )

    def __repr__(self) -> str:
        return f"<import-only stand-in {self._qualname}>"


def module_getattr(module_name: str):
    """A PEP 562 ``__getattr__`` that hands out :class:`Missing` for public names only."""

    def __getattr__(name: str) -> Missing:
        # Dunder look-ups (__version__, __path__, __file__...) must fail as for a real
        # module, or importlib and feature probes would mistake the stand-in for the package.
        if name.startswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        return Missing(f"{module_name}.{name}")

    return __getattr__
