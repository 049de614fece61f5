"""Markdown to a QTextDocument that never loads anything from outside the text itself."""

from __future__ import annotations

import math
import re

from PySide6.QtCore import QSizeF, QUrl
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QFontMetricsF,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextOption,
)

from . import theme

# Images are shown as links: fetching them (remote or local) would leak that the chat was opened, or read files.
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]*)[^)]*\)")
# Raw HTML is never interpreted: the text comes from models and tool outputs.
_FEATURES = (QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
             | QTextDocument.MarkdownFeature.MarkdownNoHTML.value)


class SafeDocument(QTextDocument):
    """A document whose resources (images, style sheets) can only come from data: URLs."""

    def loadResource(self, kind: int, url: QUrl):  # noqa: N802 - Qt override
        if url.scheme() == "data":
            return super().loadResource(kind, url)
        return None


# "Files modified:" alone, or "Error names: A, B": a short label at the start of a line of a rule summary.
_SECTION = re.compile(r"^([A-Z][A-Za-z ()/'-]{0,40}):(?:\s+(.*))?$")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~!&])")
_BLOCK_START = re.compile(r"^(\s*(?:\d+)?)([-+=.)])")


# A fenced code block's opening or closing line: up to three spaces, then ``` or ~~~ (CommonMark).
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)


def closed_fences(text: str) -> str:
    """`text` with a code block it leaves open closed: a reply cut at its token limit inside code would otherwise
    take what is appended after it (its stop mark, its tool calls) into the code block."""
    opened: str | None = None
    for fence, rest in _FENCE.findall(text):
        if opened is None:
            opened = fence
        elif fence[0] == opened[0] and len(fence) >= len(opened) and not rest.strip():  # a closer has no info
            opened = None
    return text if opened is None else text.rstrip("\n") + "\n" + opened


def markdown_literal(text: str) -> str:
    """Text that Markdown shows exactly as written (no emphasis, links, headings or lists)."""
    return _BLOCK_START.sub(r"\1\\\2", _MARKDOWN_SPECIAL.sub(r"\\\1", text))


def summary_markdown(text: str) -> str:
    """A summary's text laid out for reading: "Label:" lines as bold headings, "- " lines as bullets.

    Only the presentation changes: every character of the text (what the model sees) is shown literally.
    """
    blocks: list[str] = []
    bullets: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("- "):
            bullets.append("- " + markdown_literal(stripped[2:]))
            continue
        if bullets:
            blocks.append("\n".join(bullets))
            bullets = []
        if not stripped:
            continue
        section = _SECTION.match(stripped)
        if section:
            label, rest = section.groups()
            blocks.append(f"**{markdown_literal(label)}:**" + (f" {markdown_literal(rest)}" if rest else ""))
        else:
            blocks.append(markdown_literal(stripped))
    if bullets:
        blocks.append("\n".join(bullets))
    return "\n\n".join(blocks)


def monospace_font(point_size: float | None = None) -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    if point_size:
        font.setPointSizeF(point_size)
    return font


def neutralize_images(text: str) -> str:
    return _IMAGE.sub(lambda m: f"[image: {m.group(1) or 'untitled'}]({m.group(2)})", text)


def markdown_document(text: str, font: QFont, width: float | None = None) -> SafeDocument:
    """A laid-out document for one message's Markdown, code blocks in monospace on a shaded background."""
    doc = SafeDocument()
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setMarkdown(neutralize_images(text), QTextDocument.MarkdownFeatures(_FEATURES))
    option = doc.defaultTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)  # a long URL or code line still fits
    doc.setDefaultTextOption(option)
    _style_code(doc, font)
    if width is not None:
        doc.setTextWidth(width)
    return doc


def plain_document(text: str, font: QFont, width: float | None = None) -> SafeDocument:
    doc = SafeDocument()
    doc.setDefaultFont(font)
    doc.setDocumentMargin(0)
    doc.setPlainText(text)
    if width is not None:
        doc.setTextWidth(width)
    return doc


COPY_LABEL = "Copy"
# Space between the Copy chip and the code beside it, and between the chip and the text's right edge.
CHIP_SPACING = 4


def copy_chip_font(font: QFont) -> QFont:
    """The Copy chip's label in text of `font`: smaller and bold, as a card's header."""
    label = QFont(font)
    label.setPointSizeF(font.pointSizeF() * 0.85)
    label.setBold(True)
    return label


def copy_chip_size(font: QFont) -> QSizeF:
    """The Copy chip beside code in text of `font`: its label with room around it, grown with the font (a size in
    pixels cut the label at a large font)."""
    metrics = QFontMetricsF(copy_chip_font(font))
    return QSizeF(math.ceil(metrics.horizontalAdvance(COPY_LABEL) + metrics.height()), math.ceil(metrics.height() + 2))


def code_chip_gutter(font: QFont) -> int:
    """The margin right of a code block in text of `font`, where its Copy chip sits."""
    return int(copy_chip_size(font).width()) + 2 * CHIP_SPACING
# Marks a code block once its lines are allowed to wrap (Qt's own mark, non-breakable lines, is then gone).
_CODE_BLOCK = QTextFormat.Property.UserProperty + 1


def _style_code(doc: QTextDocument, font: QFont) -> None:
    mono = monospace_font(font.pointSizeF() * 0.95)
    code_bg = QColor(theme.current.code_background)
    gutter = code_chip_gutter(font)
    block = doc.begin()
    while block.isValid():
        fmt = block.blockFormat()
        if is_code_block(block):
            cursor = QTextCursor(block)
            fmt.setBackground(code_bg)
            fmt.setLeftMargin(6)
            fmt.setRightMargin(gutter)  # the Copy chip sits here, never over the code
            # Long code lines wrap inside the card rather than run off its edge.
            fmt.setProperty(_CODE_BLOCK, True)
            fmt.setNonBreakableLines(False)
            cursor.setBlockFormat(fmt)
            cursor.select(QTextCursor.SelectionType.BlockUnderCursor)
            char = QTextCharFormat()
            char.setFont(mono)
            cursor.mergeCharFormat(char)
        else:
            if fmt.headingLevel():
                _tone_down_heading(block, fmt.headingLevel(), font)
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.charFormat().fontFixedPitch():
                    cursor = QTextCursor(doc)
                    cursor.setPosition(fragment.position())
                    cursor.setPosition(fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor)
                    char = QTextCharFormat()
                    char.setFont(mono)
                    char.setBackground(code_bg)
                    cursor.mergeCharFormat(char)
                it += 1
        block = block.next()


# A heading in a chat bubble is a section title, not a page title: only slightly larger than the text.
_HEADING_SCALE = {1: 1.25, 2: 1.15, 3: 1.05}


def _tone_down_heading(block, level: int, font: QFont) -> None:
    cursor = QTextCursor(block)
    cursor.select(QTextCursor.SelectionType.BlockUnderCursor)
    char = QTextCharFormat()
    char.setProperty(QTextFormat.Property.FontSizeAdjustment, 0)
    char.setFontPointSize(font.pointSizeF() * _HEADING_SCALE.get(level, 1.0))
    char.setFontWeight(QFont.Weight.Bold)
    cursor.mergeCharFormat(char)


def is_code_block(block) -> bool:
    fmt = block.blockFormat()
    return (fmt.hasProperty(QTextFormat.Property.BlockCodeFence) or fmt.nonBreakableLines()
            or fmt.boolProperty(_CODE_BLOCK))
