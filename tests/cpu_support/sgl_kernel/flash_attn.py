"""Import-only stand-in for ``sgl_kernel.flash_attn``, no op computes (why: sgl_kernel/__init__.py)."""
from cpu_standin import module_getattr

__getattr__ = module_getattr(__name__)
