"""The import-only stand-ins in tests/cpu_support: importable, and never computing."""
from __future__ import annotations

import importlib

import pytest

from tests.engines.sglang.conftest import CPU_SUPPORT, needs_sglang

pytestmark = needs_sglang


def _standin(name: str):
    module = importlib.import_module(name)
    if not str(module.__file__).startswith(str(CPU_SUPPORT)):
        pytest.skip(f"the real {name} is installed here")
    return module


@pytest.mark.parametrize("name, attr", [("sgl_kernel", "silu_and_mul"), ("sgl_kernel.kvcacheio", "transfer_kv"),
                                        ("torchvision.transforms.functional", "resize")])
def test_every_name_raises_when_called(name, attr):
    from cpu_standin import StandInCalled

    fn = getattr(_standin(name), attr)
    with pytest.raises(StandInCalled, match=f"{name}.{attr} was called"):
        fn(1, 2)
    with pytest.raises(StandInCalled):
        fn.nested.deeper()


def test_stand_ins_do_not_pass_for_the_real_packages():
    import torch

    kernel = _standin("sgl_kernel")
    with pytest.raises(AttributeError):
        kernel.__version__  # feature probes must not find one
    # SGLang's CPU kernels are chosen by the ops the real library registers: none here.
    assert not hasattr(torch.ops.sgl_kernel, "convert_weight_packed")
    assert _standin("torchvision").__version__ == "0.0.0+importonly"
