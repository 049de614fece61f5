"""Settings → Provider (and `precis chat --base-url`) given an address that is no API: a website, a path that is
not there, text that is no URL. Each is told as such, with what to do, and nothing is retried in vain."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from precis.core.cli.main import main
from precis.core.model.messages import Message
from precis.core.providers.base import MalformedResponse, ModelNotFound, ProviderError, complete
from precis.core.providers.registry import check_connection, make_provider
from precis.core.settings import ProviderChoice
from pydantic import ValidationError

from tests.conftest import TRANSCRIPTS_DIR

PAGE = "<!DOCTYPE html>\n<html><head><title>Home</title><style>p {color: red}</style></head>\n" \
       "<body><h1>Welcome to my site</h1><p>Nothing &amp; no API here.</p></body></html>\n"
CHECK_THE_URL = "Check the base URL: it is the API's address, such as http://localhost:11434/v1 for Ollama"


class CountingHandler(SimpleHTTPRequestHandler):
    """Python's own static file server, as a website is; each request is counted."""

    def log_request(self, code="-", size="-") -> None:  # once a response, errors included
        self.server.requests.append(self.command)  # type: ignore[attr-defined]

    def log_message(self, *args) -> None:
        pass


class CatchAllHandler(CountingHandler):
    """A web app whose every route, POST included, answers with its page (as single-page apps do). http.server has
    no such mode, so this one adds it."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.path = "/index.html"
        self.do_GET()


@pytest.fixture
def website(tmp_path) -> Iterator[ThreadingHTTPServer]:
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "models").write_text(PAGE)  # served as application/octet-stream: told by its content
    yield from _serve(partial(CountingHandler, directory=str(tmp_path)))


@pytest.fixture
def web_app(tmp_path) -> Iterator[ThreadingHTTPServer]:
    (tmp_path / "index.html").write_text(PAGE)
    yield from _serve(partial(CatchAllHandler, directory=str(tmp_path)))


def _serve(handler) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server: ThreadingHTTPServer, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def test_a_website_as_the_base_url_is_told_as_one_and_not_retried(website):
    """Test connection said 'sent a response that is not JSON (HTTP 200)', and a reply retried the site's 501 four
    times, then quoted its HTML: '(HTTP 501): <!DOCTYPE HTML>\\n<html lang="en">…'."""
    provider = make_provider("openai", base_url=_url(website, "/v1"), model="m")
    with pytest.raises(MalformedResponse) as tested:
        check_connection(provider)
    assert f"{_url(website, '/v1')} answered with a web page (HTML, HTTP 200), not an API's JSON. {CHECK_THE_URL}" \
        in str(tested.value)
    website.requests.clear()
    with pytest.raises(ProviderError) as replied:
        complete(provider, [Message("user", "hi")], max_tokens=5)
    said = str(replied.value)
    assert "does not take this request (HTTP 501)" in said and CHECK_THE_URL in said
    assert "<" not in said and "Unsupported method ('POST')" in said
    assert website.requests == ["POST"]


def test_a_path_that_is_not_there_quotes_the_page_in_words_not_markup(website):
    provider = make_provider("openai", base_url=_url(website, "/nothere"), model="m")
    with pytest.raises(ModelNotFound) as tested:
        check_connection(provider)
    said = str(tested.value)
    assert "(HTTP 404): a web page: " in said and "File not found" in said and "<" not in said
    assert said.endswith("Check the model name and base URL.")


def test_a_web_app_answering_a_reply_request_with_its_page_is_told_as_one(web_app):
    """Its page, read as a stream, was 'ended the stream before the reply was complete'."""
    provider = make_provider("openai", base_url=_url(web_app, "/v1"), model="m")
    with pytest.raises(MalformedResponse, match=r"answered with a web page \(HTML, HTTP 200\), not an API's JSON"):
        complete(provider, [Message("user", "hi")], max_tokens=5)


def test_html_quoted_in_an_error_is_its_words():
    from precis.core.providers.transport import server_detail

    assert server_detail(PAGE) == "a web page: Welcome to my site Nothing & no API here."
    assert server_detail('{"error": {"message": "no such model"}}') == "no such model"
    assert server_detail("plain words") == "plain words"


@pytest.mark.parametrize("url, said", [
    ("notaurl", "must start with http:// or https://, as in http://localhost:11434/v1, not 'notaurl'"),
    ("localhost:11434/v1", "must start with http:// or https://"),
    ("http://", "names no server after http://"),
    ("https:///v1", "names no server after https://"),
])
def test_a_base_url_that_is_no_address_is_refused_naming_the_field(tmp_path, capsys, url, said):
    """`precis chat --provider openai --base-url notaurl` said 'cannot connect to notaurl: Request URL is missing an
    'http://' or 'https://' protocol' (exit 1), and without --provider it printed pydantic's dump; 'http://' passed
    the settings' check."""
    with pytest.raises(ValidationError, match=said):
        ProviderChoice(kind="openai", base_url=url)
    with pytest.raises(ValueError, match=f"Base URL {said}"):
        make_provider("openai", base_url=url, model="m")
    data = str(tmp_path / "data")
    for chosen in (["--provider", "openai"], []):
        assert main(["chat", "--data-dir", data, *chosen, "--base-url", url, "--model", "m", "hi"]) == 2
        err = capsys.readouterr().err
        assert f"precis chat: Base URL {said}" in err and "validation error" not in err, err
    assert main(["compact", "--provider", "openai", "--base-url", url, str(TRANSCRIPTS_DIR / "sweagent_1.jsonl")]) == 2
    assert f"precis compact: Base URL {said}" in capsys.readouterr().err
