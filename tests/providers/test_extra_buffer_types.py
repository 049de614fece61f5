"""llama.cpp's `use_extra_bufts` reaches the loaded model off by default (AMX CPUs crashed with it on), on if set.

The value is read back from the parameters the model process's llama.cpp server was built from, not from a mock.
"""

from __future__ import annotations

import pytest
from precis.core.providers.local import LocalProvider, find_model_path
from precis.core.providers.model_server import parse, server_params
from precis.core.providers.registry import make_provider
from precis.core.providers.vocabulary import model_params


def test_llama_cpp_defaults_to_extra_buffer_types():
    # llama.cpp's own default is on: without Precis's loading, AMX CPUs take the repacking path.
    assert model_params().flags[2] is True
    assert model_params(extra_buffer_types=False).flags[2] is False


@pytest.mark.model
@pytest.mark.slow
def test_the_local_provider_loads_without_extra_buffer_types(local_provider):
    # Read back by the model process from the parameters its server took.
    assert local_provider.load().loaded_params == {"use_extra_bufts": False}


@pytest.mark.model
@pytest.mark.slow
def test_the_setting_reaches_the_model_process():
    provider = LocalProvider(extra_buffer_types=True)
    try:
        assert provider.load().loaded_params == {"use_extra_bufts": True}
    finally:
        provider.close()


def test_make_provider_passes_the_setting_to_the_local_model():
    assert make_provider("local")._extra_buffer_types is False
    assert make_provider("local", extra_buffer_types=True)._extra_buffer_types is True
    assert LocalProvider()._extra_buffer_types is False


@pytest.mark.parametrize("on", [False, True])
def test_the_model_server_loads_with_the_setting(on):
    args = ["--model", str(find_model_path())] + (["--extra_buffer_types"] if on else [])
    assert server_params(parse(args)).no_extra_bufts is not on
