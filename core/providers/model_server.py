"""`python -m precis.core.providers.model_server --model GGUF [--n_ctx N] [--n_threads N] [--host H] [--port P]
[--alias NAME] [--api_key KEY] [--extra_buffer_types]`: llama.cpp's OpenAI-compatible HTTP server (xllamacpp's),
loading its model as the model process does (extra buffer types off unless `--extra_buffer_types` is given), answering
only requests that bear KEY when one is given (others get HTTP 401), with Jinja chat templates and
llama.cpp's native tool calls. A ChatML model whose own template has no tools (SmolLM2) is served with
chatml_tools.jinja, which renders them, so the server offers them and constrains a call; another model keeps its own.
Serves until it is terminated.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from importlib import resources
from pathlib import Path

from .gguf import read_metadata

TOOLS_TEMPLATE = "chatml_tools.jinja"


def chat_template(own: str) -> str:
    """The template to serve a model with, given its own: chatml_tools.jinja for a ChatML template without tools, else
    "" (llama.cpp then uses the model's own)."""
    if "<|im_start|>" in own and "tools" not in own:
        return resources.files(__package__).joinpath(TOOLS_TEMPLATE).read_text(encoding="utf-8")
    return ""


def server_params(args: argparse.Namespace):  # -> xllamacpp.CommonParams
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    if args.alias:
        params.model_alias = {args.alias}
    params.n_ctx = args.n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = args.n_threads
    params.no_extra_bufts = not args.extra_buffer_types
    params.use_jinja = True  # tool calls through the template
    params.chat_template = chat_template(str(read_metadata(Path(args.model)).get("tokenizer.chat_template", "")))
    if args.api_key:
        params.api_keys = [args.api_key]
    params.hostnames = [args.host]
    params.port = args.port
    params.warmup = False
    return params


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m precis.core.providers.model_server", description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--alias", help="the model's name in /v1/models (default: llama.cpp's, from the file)")
    parser.add_argument("--n_ctx", type=int, default=8192)
    parser.add_argument("--n_threads", type=int, default=2)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--api_key", help="answer only requests with this bearer key (default: any request)")
    parser.add_argument("--extra_buffer_types", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    # As in the model process (local.py): llama.cpp's OpenMP threads wait passively, not spinning beside the tests.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import xllamacpp

    server = xllamacpp.Server(server_params(parse(argv)))
    print(f"serving on {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    main(sys.argv[1:])
