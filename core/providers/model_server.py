"""`python -m precis.core.providers.model_server [--extra_buffer_types] ARGS`: llama_cpp.server with Precis's loading.

llama_cpp.server has no flag for llama.cpp's `use_extra_bufts`, so this entry point has the server build its
models with `local.llama_class` (extra buffer types off unless `--extra_buffer_types` is given), then runs the
server's own command line with the remaining ARGS.
"""

from __future__ import annotations

import sys

from .local import llama_class

EXTRA_BUFFER_TYPES_FLAG = "--extra_buffer_types"


def use_precis_loading(extra_buffer_types: bool) -> None:
    """Make llama_cpp.server load its models through `llama_class` with the given buffer-type choice."""
    import llama_cpp

    llama_cpp.Llama = llama_class(extra_buffer_types)


def main(argv: list[str]) -> None:
    use_precis_loading(EXTRA_BUFFER_TYPES_FLAG in argv)
    sys.argv = [sys.argv[0], *(arg for arg in argv if arg != EXTRA_BUFFER_TYPES_FLAG)]
    from llama_cpp.server.__main__ import main as server_main

    server_main()


if __name__ == "__main__":
    main(sys.argv[1:])
