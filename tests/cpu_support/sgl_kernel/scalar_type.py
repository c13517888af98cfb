"""Import-only stand-in for ``sgl_kernel.scalar_type``, no op computes.

SGLang imports sgl_kernel at module level, and there is no build of it for this CPU.
SGLang uses its CPU kernels only when the real package's compiled library has registered
them under torch.ops.sgl_kernel; this stand-in registers nothing, so SGLang stays on its
torch-native paths and never reaches a name handed out here.
Every public name is a placeholder that raises when called (see cpu_standin.py).
"""
from cpu_standin import module_getattr

__getattr__ = module_getattr(__name__)
