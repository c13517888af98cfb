"""Import-only stand-in for ``torchvision.transforms.v2``, no op computes (why: torchvision/__init__.py)."""
from cpu_standin import module_getattr

__getattr__ = module_getattr(__name__)
