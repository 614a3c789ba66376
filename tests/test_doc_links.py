"""Every relative link in README.md and the docs points to a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# [text](target) or [text](target "title"); images too
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")


def pages() -> list[Path]:
    return [
        REPO / "README.md",
        REPO / "results" / "README.md",
        *sorted((REPO / "docs").rglob("*.md")),
    ]


def relative_links(text: str) -> list[str]:
    """The link targets of ``text`` outside code blocks, less URLs and in-page anchors."""
    links, in_code = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
                continue
            links.append(target.split("#", 1)[0])
    return links


def test_every_relative_link_resolves():
    broken = [
        f"{page.relative_to(REPO)}: {target}"
        for page in pages()
        for target in relative_links(page.read_text(encoding="utf-8"))
        if not (page.parent / target).exists()
    ]
    assert not broken, "links to missing files:\n" + "\n".join(broken)


def test_the_link_reader_sees_links_and_skips_code_and_urls():
    text = (
        "See [usage](docs/usage.md#cli) and ![fig](results/x.png).\n"
        "A [site](https://example.org) and [here](#known-limits), `[not](a.md)`.\n"
        "```\n[in code](nowhere.md)\n```\n"
    )
    assert relative_links(text) == ["docs/usage.md", "results/x.png"]
