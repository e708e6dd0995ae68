"""pytest fixtures of the transformers leg. run.sh builds ckpt and passes it
in $CKPT_BIN; run by hand (pytest .ci/interop/transformers) the fixture
builds it with `go build`. Every checkpoint is made by code (tflib) once per
session, in the session's temporary directory (zoo)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(__file__)))  # .ci/interop: ckptrun

from ckptrun import Ckpt, build, hubless_env  # noqa: E402


def pytest_report_header(config):
    import safetensors
    import torch
    import transformers
    return f"transformers {transformers.__version__}, torch {torch.__version__}, safetensors {safetensors.__version__}"


@pytest.fixture(scope="session")
def ckpt(tmp_path_factory):
    return Ckpt(build(tmp_path_factory), hubless_env())


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    """The session's checkpoints, each made once on first use (zoo.Zoo)."""
    import zoo as z
    return z.Zoo(tmp_path_factory.mktemp("zoo"))
