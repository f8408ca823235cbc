"""A report as a list of blocks, rendered to Markdown and to a standalone HTML page.

Rendering both formats from the same blocks keeps them identical in content without a Markdown
parser dependency. The Markdown links its figures by relative path; the HTML page embeds them
(``data:`` URIs, PNG or SVG as written) so the one file opens anywhere, copied or mailed alone.
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

__all__ = [
    "Block",
    "Bullets",
    "Heading",
    "Image",
    "Para",
    "Table",
    "to_html",
    "to_markdown",
]


@dataclass(frozen=True)
class Heading:
    """A heading of ``level`` (1 is the title)."""

    level: int
    text: str


@dataclass(frozen=True)
class Para:
    """A paragraph of Markdown text."""

    text: str


@dataclass(frozen=True)
class Bullets:
    """A bulleted list, one item per entry."""

    items: Sequence[str]


@dataclass(frozen=True)
class Table:
    """A table: a header, rows of cells, and each column's alignment."""

    header: Sequence[str]
    rows: Sequence[Sequence[str]]
    align: Sequence[str] = field(default=())  # "l" or "r" per column (default: first left, rest right)


@dataclass(frozen=True)
class Image:
    """An image file (relative to the report) and its alternative text."""

    path: str
    alt: str


Block = Union[Heading, Para, Bullets, Table, Image]


def _align(table: Table) -> list[str]:
    if table.align:
        return list(table.align)
    return ["l"] + ["r"] * (len(table.header) - 1)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: Sequence[Block]) -> str:
    """Render ``blocks`` as GitHub-flavoured Markdown."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"{'#' * b.level} {b.text}")
        elif isinstance(b, Para):
            out.append(b.text)
        elif isinstance(b, Bullets):
            out.append("\n".join(f"- {item}" for item in b.items))
        elif isinstance(b, Table):
            rule = ["---:" if a == "r" else ":---" for a in _align(b)]
            lines = ["| " + " | ".join(_md_cell(h) for h in b.header) + " |", "| " + " | ".join(rule) + " |"]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
            out.append("\n".join(lines))
        elif isinstance(b, Image):
            out.append(f"![{b.alt}]({b.path})")
        else:
            raise ValueError(f"Unknown report block {type(b).__name__}.")
    return "\n\n".join(out) + "\n"


def _inline(text: str) -> str:
    """Escape text for HTML, then turn `code` and **bold** spans into tags."""
    escaped = html.escape(str(text))
    parts = escaped.split("`")
    escaped = "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
    parts = escaped.split("**")
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))


_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f6f6f6; padding: 0 0.2em; }
"""


#: The figure formats a browser shows in an ``<img>``, by file suffix.
_IMAGE_TYPES = {
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


def _image_html(image: Image, base_dir: Path | None) -> str:
    alt = html.escape(image.alt, quote=True)
    if base_dir is None:
        return f'<p><img src="{html.escape(image.path, quote=True)}" alt="{alt}"></p>'
    path = base_dir / image.path
    mime = _IMAGE_TYPES.get(path.suffix.lower())
    if mime is None:  # a PDF, say: a browser cannot show it inline, so link it
        return f'<p><a href="{html.escape(image.path, quote=True)}">{alt}</a></p>'
    if not path.is_file():
        raise ValueError(f"The report's figure {path} does not exist: write the figures before the HTML page.")
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<p><img src="data:{mime};base64,{data}" alt="{alt}"></p>'


def to_html(blocks: Sequence[Block], title: str, *, base_dir: str | os.PathLike | None = None) -> str:
    """Render ``blocks`` as one standalone HTML page.

    Args:
        blocks: the report.
        title: the page title.
        base_dir: the folder the images' paths are relative to: each image is read from there and
            embedded as a base64 ``data:`` URI (a format a browser cannot show inline is linked).
            None references the images by relative path.
    """
    folder = Path(base_dir) if base_dir is not None else None
    body: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            body.append(f"<h{b.level}>{_inline(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            body.append(f"<p>{_inline(b.text)}</p>")
        elif isinstance(b, Bullets):
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            align = _align(b)
            head = "".join(f'<th class="{a}">{_inline(h)}</th>' for h, a in zip(b.header, align))
            rows = "".join(
                "<tr>" + "".join(f'<td class="{a}">{_inline(c)}</td>' for c, a in zip(row, align)) + "</tr>"
                for row in b.rows
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(b, Image):
            body.append(_image_html(b, folder))
        else:
            raise ValueError(f"Unknown report block {type(b).__name__}.")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
