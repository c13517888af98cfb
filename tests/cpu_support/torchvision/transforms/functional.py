"""Import-only stand-in for ``torchvision.transforms.functional``, no op computes.

SGLang's model-config and multimodal modules import torchvision at load, and there is
no torchvision build for torch 2.13.0+cpu. A text model never calls it.
Every public name is a placeholder that raises when called (see cpu_standin.py).
"""
from cpu_standin import module_getattr

__getattr__ = module_getattr(__name__)
