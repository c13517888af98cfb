"""Import-only stand-in for ``torchvision.io``, no op computes (why: torchvision/__init__.py)."""
from cpu_standin import module_getattr

__getattr__ = module_getattr(__name__)
