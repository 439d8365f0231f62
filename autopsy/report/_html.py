"""Shared template bits of the HTML and Markdown reports: a tiny block model, two writers.

A report is built once as a list of blocks (headings, paragraphs, lists, tables,
images, a verdict box) whose text is plain, unescaped strings; :func:`to_html` and
:func:`to_markdown` write it out. Every string is escaped by the writer, so text from
the run (log lines, file names, exception messages) can never become markup: a
``<script>`` in a log line is shown, not run. Stdlib only.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum


class Tone(str, Enum):
    """How a piece of text is coloured: by what it says about the run."""

    PLAIN = "plain"
    GOOD = "good"
    WARN = "warn"
    BAD = "bad"
    MUTED = "muted"


@dataclass(frozen=True)
class Span:
    """A run of inline text; ``code`` sets it in monospace, ``strong`` in bold."""

    text: str
    tone: Tone = Tone.PLAIN
    strong: bool = False
    code: bool = False


Inline = str | Span
Inlines = Sequence[Inline]


@dataclass(frozen=True)
class Heading:
    """A section heading (level 1-4)."""

    text: str
    level: int = 2
    anchor: str = ""


@dataclass(frozen=True)
class Para:
    """A paragraph of inline parts."""

    parts: Inlines


@dataclass(frozen=True)
class Bullets:
    """A bulleted list; each item a sequence of inline parts."""

    items: Sequence[Inlines]


@dataclass(frozen=True)
class Table:
    """A table; each cell a plain string or a :class:`Span` (for a coloured status)."""

    header: Sequence[str]
    rows: Sequence[Sequence[Inline]]
    numeric: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Image:
    """A PNG plot: embedded (HTML) or written beside the file and linked (Markdown)."""

    name: str
    title: str
    png: bytes
    width: int = 0
    height: int = 0
    caption: str = ""


@dataclass(frozen=True)
class Callout:
    """A boxed block (the verdict): a headline line, then its own blocks."""

    headline: Inlines
    body: Sequence[Block] = ()
    tone: Tone = Tone.PLAIN


@dataclass(frozen=True)
class Details:
    """A collapsible group (HTML ``<details>``), a plain section in Markdown."""

    summary: str
    body: Sequence[Block] = field(default_factory=tuple)


Block = Heading | Para | Bullets | Table | Image | Callout | Details

# ------------------------------------------------------------------------------ HTML

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: object) -> str:
    """Text with C0/C1 control characters (ANSI escapes, NULs...) shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def esc(text: object) -> str:
    """HTML-escape ``text`` (quotes too) after :func:`clean`."""
    return html.escape(clean(text), quote=True)


def _inline_html(part: Inline) -> str:
    if isinstance(part, str):
        return esc(part)
    out = esc(part.text)
    if part.code:
        out = f"<code>{out}</code>"
    if part.strong:
        out = f"<strong>{out}</strong>"
    if part.tone is not Tone.PLAIN:
        out = f'<span class="{part.tone.value}">{out}</span>'
    return out


def _inlines_html(parts: Inlines | Inline) -> str:
    if isinstance(parts, (str, Span)):
        return _inline_html(parts)
    return "".join(_inline_html(p) for p in parts)


def _block_html(block: Block) -> str:
    if isinstance(block, Heading):
        level = min(max(block.level, 1), 4)
        anchor = f' id="{esc(block.anchor)}"' if block.anchor else ""
        return f"<h{level}{anchor}>{esc(block.text)}</h{level}>"
    if isinstance(block, Para):
        return f"<p>{_inlines_html(block.parts)}</p>"
    if isinstance(block, Bullets):
        items = "".join(f"<li>{_inlines_html(item)}</li>" for item in block.items)
        return f"<ul>{items}</ul>"
    if isinstance(block, Table):
        head = "".join(f"<th>{esc(h)}</th>" for h in block.header)
        rows = []
        for row in block.rows:
            cells = "".join(
                f'<td class="num">{_inline_html(c)}</td>' if i in block.numeric
                else f"<td>{_inline_html(c)}</td>" for i, c in enumerate(row))
            rows.append(f"<tr>{cells}</tr>")
        return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(rows)}</tbody></table></div>")
    if isinstance(block, Image):
        data = base64.b64encode(block.png).decode("ascii")
        size = (f' width="{block.width}" height="{block.height}"'
                if block.width and block.height else "")
        return (f'<figure><img class="plot" alt="{esc(block.title)}" data-plot="{esc(block.name)}"'
                f' src="data:image/png;base64,{data}"{size}>'
                f"<figcaption>{esc(block.caption or block.title)}</figcaption></figure>")
    if isinstance(block, Callout):
        body = "".join(_block_html(b) for b in block.body)
        return (f'<section class="verdict {block.tone.value}" id="verdict">'
                f'<p class="headline">{_inlines_html(block.headline)}</p>{body}</section>')
    if isinstance(block, Details):
        body = "".join(_block_html(b) for b in block.body)
        return f"<details><summary>{esc(block.summary)}</summary>{body}</details>"
    raise TypeError(f"not a block: {type(block).__name__}")  # pragma: no cover


CSS = """
:root { color-scheme: light; --bad: #b42318; --warn: #b54708; --good: #067647;
  --muted: #667085; --line: #d0d5dd; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  margin: 0 auto; max-width: 980px; padding: 24px; color: #101828; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px;
  border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 15px; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: #f2f4f7; padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }
td code { white-space: nowrap; }
.verdict { border: 2px solid var(--line); border-left-width: 8px; border-radius: 6px;
  padding: 10px 16px; margin: 16px 0; background: #fcfcfd; }
.verdict.bad { border-color: var(--bad); } .verdict.good { border-color: var(--good); }
.verdict.warn { border-color: var(--warn); }
.verdict .headline { font-size: 18px; font-weight: 600; margin: 4px 0; }
.bad { color: var(--bad); } .warn { color: var(--warn); } .good { color: var(--good); }
.muted { color: var(--muted); }
.verdict.bad, .verdict.good, .verdict.warn { color: inherit; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left;
  vertical-align: top; } th { background: #f9fafb; } td.num { text-align: right; }
.scroll { overflow-x: auto; }
figure { margin: 12px 0; } img.plot { max-width: 100%; height: auto;
  border: 1px solid #eaecf0; } figcaption { color: var(--muted); font-size: 12px; }
details { margin: 8px 0; } summary { cursor: pointer; font-weight: 600; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
"""


def to_html(title: str, blocks: Sequence[Block], footer: str = "") -> str:
    """A complete, self-contained HTML page: inline CSS, images as data: URIs, no script."""
    body = "\n".join(_block_html(b) for b in blocks)
    foot = f"<footer>{esc(footer)}</footer>" if footer else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "img-src data:; style-src 'unsafe-inline'\">"
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n{foot}\n"
        "</body></html>\n"
    )


# -------------------------------------------------------------------------- Markdown

_MD_SPECIAL = re.compile(r"([\\`*\[\]|~]|(?<!\w)_|_(?!\w))")
_MD_LINE_START = re.compile(r"^(\s*)([#>+=-]|(\d+)([.)]))")


def md_esc(text: object) -> str:
    """Escape ``text`` for Markdown, so that text from the run is shown as written.

    Newlines become spaces, ``<`` and ``&`` entities (no raw HTML), and the characters
    that could start emphasis, a link, code, a table cell or strike-through are
    backslashed, as is anything that would open a block at the start of a line.
    """
    flat = re.sub(r"[\r\n\t]+", " ", clean(text))
    flat = flat.replace("&", "&amp;").replace("<", "&lt;")
    flat = _MD_SPECIAL.sub(lambda m: "\\" + m.group(), flat)
    return _MD_LINE_START.sub(
        lambda m: m.group(1) + (f"{m.group(3)}\\{m.group(4)}" if m.group(3) else "\\" + m.group(2)),
        flat)


def md_code(text: object) -> str:
    """A Markdown code span that holds ``text`` verbatim, whatever backticks it has."""
    flat = re.sub(r"[\r\n\t]+", " ", clean(text))
    longest = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


_MD_TONE = {Tone.BAD: "✗ ", Tone.WARN: "! ", Tone.GOOD: "✓ "}


def _inline_md(part: Inline) -> str:
    if isinstance(part, str):
        return md_esc(part)
    out = md_code(part.text) if part.code else md_esc(part.text)
    if part.strong and part.text.strip():
        out = f"**{out}**"
    if part.tone in (Tone.BAD, Tone.WARN) and not part.code and not part.strong:
        out = f"**{out}**"
    return _MD_TONE.get(part.tone, "") + out if part.tone is not Tone.MUTED else out


def _cell_md(part: Inline) -> str:
    # GFM splits table cells at every unescaped pipe, code spans included
    text = _inline_md(part)
    return text.replace("|", "\\|") if isinstance(part, Span) and part.code else text


def _inlines_md(parts: Inlines | Inline) -> str:
    if isinstance(parts, (str, Span)):
        return _inline_md(parts)
    return "".join(_inline_md(p) for p in parts)


def to_markdown(blocks: Sequence[Block], image_link: Callable[[Image], str | None]) -> str:
    """The blocks as GitHub-flavoured Markdown.

    ``image_link(image)`` saves the image and returns the relative link to use, or None
    to leave the image out.
    """
    out: list[str] = []
    for block in blocks:
        out.append(_block_md(block, image_link))
    return "\n\n".join(s for s in out if s) + "\n"


def _block_md(block: Block, image_link: Callable[[Image], str | None]) -> str:
    if isinstance(block, Heading):
        return "#" * min(max(block.level, 1), 4) + " " + md_esc(block.text)
    if isinstance(block, Para):
        return _inlines_md(block.parts)
    if isinstance(block, Bullets):
        return "\n".join(f"- {_inlines_md(item)}" for item in block.items)
    if isinstance(block, Table):
        if not block.header:
            return ""
        head = "| " + " | ".join(md_esc(h) for h in block.header) + " |"
        rule = "|" + "|".join("---:" if i in block.numeric else "---"
                              for i in range(len(block.header))) + "|"
        rows = ["| " + " | ".join(_cell_md(c) for c in row) + " |" for row in block.rows]
        return "\n".join([head, rule, *rows])
    if isinstance(block, Image):
        link = image_link(block)
        if link is None:
            return ""
        caption = f"\n\n*{md_esc(block.caption)}*" if block.caption else ""
        return f"![{md_esc(block.title)}]({link}){caption}"
    if isinstance(block, Callout):
        words = block.headline if not isinstance(block.headline, (str, Span)) \
            else [block.headline]
        plain = "".join(w if isinstance(w, str) else w.text for w in words)
        inner = [_MD_TONE.get(block.tone, "") + f"**{md_esc(plain)}**"]
        inner.extend(_block_md(b, image_link) for b in block.body)
        text = "\n\n".join(s for s in inner if s)
        return "\n".join("> " + line if line else ">" for line in text.splitlines())
    if isinstance(block, Details):
        inner = [f"**{md_esc(block.summary)}**"]
        inner.extend(_block_md(b, image_link) for b in block.body)
        return "\n\n".join(s for s in inner if s)
    raise TypeError(f"not a block: {type(block).__name__}")  # pragma: no cover
