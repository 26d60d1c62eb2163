"""HTML to readable Markdown-flavoured text (Gemini replies, uploaded HTML documents).

Only structure that matters for reading survives: paragraphs, line breaks, headings, list
items, code blocks, emphasis and link targets. Scripts, styles and comments are dropped.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Comment, NavigableString, Tag

_BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "aside",
    "table",
    "tr",
    "blockquote",
    "ul",
    "ol",
    "dl",
    "figure",
    "form",
    "nav",
}
_HEADINGS = {"h1": "#", "h2": "##", "h3": "###", "h4": "####", "h5": "#####", "h6": "######"}
_DROP = {"script", "style", "noscript", "template", "head", "svg"}


def html_to_text(html: str) -> str:
    """Readable text of an HTML fragment or page; blank-line separated blocks."""
    soup = BeautifulSoup(html, "html.parser")
    for node in soup.find_all(string=lambda s: isinstance(s, Comment)):
        node.extract()
    for tag in soup.find_all(list(_DROP)):
        tag.decompose()
    out: list[str] = []
    _walk(soup, out, list_depth=0)
    return _tidy("".join(out).replace("\xa0", " "))


def _tidy(text: str) -> str:
    """Drop whitespace left by source indentation, outside fenced code only."""
    lines: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if line.strip().startswith("```"):
            in_code = not in_code
            lines.append(line.strip())
            continue
        if in_code:
            lines.append(line)
            continue
        indent = re.match(r" *", line).group(0)
        body = re.sub(r" {2,}", " ", line.strip())
        # keep nesting of list items, nothing else
        lines.append((indent if body.startswith("- ") else "") + body)
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _walk(node: Tag, out: list[str], *, list_depth: int) -> None:
    for child in node.children:
        if isinstance(child, NavigableString):
            text = str(child)
            # Source indentation and wrapping are not content.
            out.append(re.sub(r"\s+", " ", text))
            continue
        if not isinstance(child, Tag):
            continue
        name = child.name
        if name == "br":
            out.append("\n")
        elif name == "pre":
            code = child.get_text()
            out.append(f"\n\n```\n{code.strip(chr(10))}\n```\n\n")
        elif name == "code":
            out.append(f"`{child.get_text()}`")
        elif name in _HEADINGS:
            out.append(f"\n\n{_HEADINGS[name]} ")
            _walk(child, out, list_depth=list_depth)
            out.append("\n\n")
        elif name == "li":
            out.append("\n" + "  " * max(list_depth - 1, 0) + "- ")
            _walk(child, out, list_depth=list_depth)
        elif name in ("ul", "ol"):
            out.append("\n")
            _walk(child, out, list_depth=list_depth + 1)
            out.append("\n\n")
        elif name in ("strong", "b"):
            inner = _inline(child, list_depth)
            out.append(f"**{inner}**" if inner.strip() else inner)
        elif name in ("em", "i"):
            inner = _inline(child, list_depth)
            out.append(f"*{inner}*" if inner.strip() else inner)
        elif name == "a":
            inner = _inline(child, list_depth)
            href = child.get("href")
            if href and href.startswith("http") and href not in inner:
                out.append(f"[{inner}]({href})" if inner.strip() else href)
            else:
                out.append(inner)
        elif name == "img":
            alt = child.get("alt") or child.get("src", "").rsplit("/", 1)[-1] or "image"
            out.append(f"[image: {alt}]")
        elif name in ("td", "th"):
            _walk(child, out, list_depth=list_depth)
            out.append(" | ")
        elif name == "hr":
            out.append("\n\n---\n\n")
        elif name in _BLOCKS:
            out.append("\n\n")
            _walk(child, out, list_depth=list_depth)
            out.append("\n\n")
        else:
            _walk(child, out, list_depth=list_depth)


def _inline(tag: Tag, list_depth: int) -> str:
    parts: list[str] = []
    _walk(tag, parts, list_depth=list_depth)
    return "".join(parts)
