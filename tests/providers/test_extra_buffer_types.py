"""llama.cpp's `use_extra_bufts` reaches the loaded model off by default (AMX CPUs crash with it on), on if set.

The value is read back from the `model_params` each Llama passed to llama.cpp's loader, not from a mock.
"""

from __future__ import annotations

import ctypes

import llama_cpp
import pytest
from precis.core.providers.local import LocalProvider, find_model_path, llama_class
from precis.core.providers.model_server import use_precis_loading
from precis.core.providers.registry import make_provider


def test_llama_cpp_has_the_field():
    assert ("use_extra_bufts", ctypes.c_bool) in llama_cpp.llama_model_params._fields_
    # llama.cpp's own default is on: without Precis's loading, AMX CPUs take the crashing path.
    assert llama_cpp.llama_model_default_params().use_extra_bufts is True


@pytest.mark.model
def test_the_local_provider_loads_without_extra_buffer_types(local_provider):
    # Read back by the model process from its loaded Llama's model_params.
    assert local_provider.load().loaded_params == {"use_extra_bufts": False}


@pytest.mark.model  # hybrid summaries and loading run the embedded model
@pytest.mark.parametrize("on", [False, True])
def test_the_setting_reaches_the_loader(on):
    # vocab_only loads through the same model_params, without the weights.
    llm = llama_class(on)(model_path=str(find_model_path()), vocab_only=True, verbose=False)
    try:
        assert llm.model_params.use_extra_bufts is on
    finally:
        llm.close()


def test_make_provider_passes_the_setting_to_the_local_model():
    assert make_provider("local")._extra_buffer_types is False
    assert make_provider("local", extra_buffer_types=True)._extra_buffer_types is True
    assert LocalProvider()._extra_buffer_types is False


@pytest.mark.model  # hybrid summaries and loading run the embedded model
@pytest.mark.parametrize("on", [False, True])
def test_the_model_server_wrapper_loads_with_the_setting(monkeypatch, on):
    from llama_cpp.server.model import LlamaProxy
    from llama_cpp.server.settings import ModelSettings

    monkeypatch.setattr(llama_cpp, "Llama", llama_cpp.Llama)  # undone after the test
    use_precis_loading(on)
    llm = LlamaProxy.load_llama_from_model_settings(
        ModelSettings(model=str(find_model_path()), vocab_only=True, verbose=False))
    try:
        assert llm.model_params.use_extra_bufts is on
    finally:
        llm.close()
