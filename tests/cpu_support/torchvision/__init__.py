"""Import-only stand-in for ``torchvision``, no op computes.

SGLang's model-config and multimodal modules import torchvision at load, and there is
no torchvision build for torch 2.13.0+cpu. A text model never calls it.
Every public name is a placeholder that raises when called (see cpu_standin.py).
"""
from cpu_standin import module_getattr

# transformers finds this folder with find_spec, then parses the version it reports;
# 0.0.0 reads as older than any torchvision it has a code path for, and the local
# label says what this is to anyone who prints it.
__version__ = "0.0.0+importonly"

__getattr__ = module_getattr(__name__)
