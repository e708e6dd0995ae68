"""pytest fixtures of the compressed-tensors leg. run.sh builds ckpt and
passes it in $CKPT_BIN; run by hand (pytest .ci/interop/ctools) the fixture
builds it with `go build`."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(__file__)))  # .ci/interop: ckptrun

from ckptrun import Ckpt, build, hubless_env  # noqa: E402


def pytest_report_header(config):
    import compressed_tensors
    import safetensors
    import torch
    return f"compressed-tensors {compressed_tensors.__version__}, torch {torch.__version__}, safetensors {safetensors.__version__}"


@pytest.fixture(scope="session")
def ckpt(tmp_path_factory):
    return Ckpt(build(tmp_path_factory), hubless_env())


