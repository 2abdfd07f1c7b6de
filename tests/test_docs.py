"""The README and the pages under docs/ point at what exists: every relative link reaches a file (and its heading,
when it names one), and every ``manage.py`` command and ``scripts/`` program they tell people to run is there."""

import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from django.core.management import get_commands, load_command_class

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")  # every link's and image's target, nested ones too
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def prose(text: str) -> str:
    """``text`` without fenced code blocks and code spans, where brackets and hashes are not Markdown."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    kept = (c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return "".join(kept).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of ``page``: its headings' slugs (repeats numbered as GitHub numbers them) and HTML anchors."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set(HTML_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for _, title in HEADING.findall(text):
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    targets = LINK.findall(prose(page.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]  # http:, https:, mailto: …


def test_the_docs_are_found() -> None:
    names = {str(page.relative_to(ROOT)) for page in PAGES}
    assert {"README.md", "docs/index.md", "docs/protocol.md", "docs/oauth.md", "docs/operations.md"} <= names
    assert {"docs/sources.md", "docs/admin/index.md", "docs/architecture.md", "docs/performance.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_its_heading(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading with the anchor #{fragment} in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)} links to what is not there:\n" + "\n".join(broken)


def test_the_link_checker_finds_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## Same title\n\n## Same title\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "See [it](other.md#same-title-1), [gone](missing.md), `[code](missing.md)`, [up](#top) and\n"
        "[![a picture](shots/a.png)](shots/b.png).\n\n# Top\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["other.md#same-title-1", "missing.md", "#top", "shots/a.png", "shots/b.png"]
    assert anchors(tmp_path / "other.md") == {"other-page", "same-title", "same-title-1"}
    assert slug("Tasks (long tool calls)") == "tasks-long-tool-calls"
    assert slug("Metrics: `GET /metrics`") == "metrics-get-metrics"


def mentioned(pattern: str) -> set[Any]:
    return {found for page in PAGES for found in re.findall(pattern, page.read_text(encoding="utf-8"))}


def test_every_manage_py_command_the_docs_name_exists() -> None:
    named = mentioned(r"manage\.py ([a-z_]+)")
    assert "createsuperuser" in named and "serve" in named
    assert named <= set(get_commands()), f"no such manage.py command: {sorted(named - set(get_commands()))}"


def test_every_manage_py_option_the_docs_name_exists() -> None:
    """``manage.py serve --port 8001`` and the like: each option the docs write after a command is the command's."""
    unknown = set()
    for command, rest in mentioned(r"manage\.py ([a-z_]+)([^`\n#]*)"):
        if command not in get_commands():
            continue  # the test above reports it
        parser = load_command_class(get_commands()[command], command).create_parser("manage.py", command)
        known = {option for action in parser._actions for option in action.option_strings}
        unknown |= {f"{command} {option}" for option in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", rest)} - {
            f"{command} {option}" for option in known
        }
    assert not unknown, f"options the commands do not take: {sorted(unknown)}"


def test_every_script_the_docs_name_exists() -> None:
    named = mentioned(r"(?<![\w/.])((?:scripts|bench)/[a-z][\w-]*)(?![\w/.-])")
    assert "scripts/serve" in named and "scripts/test" in named
    missing = sorted(name for name in named if not (ROOT / name).exists())
    assert not missing, f"the docs name programs that do not exist: {missing}"
