"""The README and the pages of docs/ hold together: every relative link and image resolves to a file in the
repository (an anchor to a heading of its page), and the README stays short enough to read on one screen."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md")), ROOT / "tests" / "spec" / "README.md"]
README_WORDS = 400

# [text](target) and ![alt](target), the target up to a space (a title may follow) or the closing bracket.
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
CODE = re.compile(r"`[^`\n]*`")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def links(page: Path) -> list[str]:
    return LINK.findall(CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8"))))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    found = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves_in_the_repository(page):
    broken = []
    for target in links(page):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # a web address: not this repository's to check
        path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(f"{target}: no such file in the repository")
        elif parts.fragment and path.suffix == ".md" and parts.fragment not in anchors(path):
            broken.append(f"{target}: no heading #{parts.fragment} in {path.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_every_page_of_docs_is_linked_from_the_readme_or_another_page():
    linked = {(page.parent / urlsplit(target).path).resolve() for page in PAGES for target in links(page)
              if not urlsplit(target).scheme}
    orphans = [str(page.relative_to(ROOT)) for page in PAGES[1:] if page not in linked]
    assert not orphans, f"pages no link leads to: {orphans}"


def test_the_readme_fits_on_a_screen():
    words = len(HTML_COMMENT.sub(" ", README.read_text(encoding="utf-8")).split())  # as `wc -w` counts them
    assert words <= README_WORDS, f"README.md has {words} words; at most {README_WORDS}: move the details to docs/"
