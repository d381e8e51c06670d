"""Names from users' files (kernels, variants, shapes) made safe to print: into markdown, and cut to
a width.

A kernel named `<script>` or `a|b` must show as text: markdown renderers pass raw HTML through,
and a '|' splits a table cell. Every markdown writer runs user-given names through `md_escape`.
"""

from __future__ import annotations


def md_escape(text: object) -> str:
    """Text for markdown prose or a table cell: '&' and '<' as entities (no tag or entity can
    start, so raw HTML shows as text; '>' alone opens nothing and "->" stays readable), '|'
    backslash-escaped (it would end a table cell), newlines folded into spaces."""
    one_line = " ".join(str(text).splitlines())
    return one_line.replace("&", "&amp;").replace("<", "&lt;").replace("|", r"\|")


def cut_middle(text: str, width: int) -> str:
    """text, or when longer than width its two ends around "...", so both stay readable."""
    if len(text) <= width:
        return text
    keep = (width - 3) // 2
    return f"{text[:keep]}...{text[-keep:]}"
