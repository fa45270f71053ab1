"""Every reference in the README, docs/ and the code points inside the repository.

The README, docs/*.md, the package's and the templates' text, the task files and every
test module's docstring cite files, sections and the design's rules (R1..R20). Each must
resolve here: a relative link to a file that exists (and a heading of it, by GitHub's
anchor rules, when it names one), a file name such as ``docs/design.md`` that exists, a
rule docs/design.md states, a section quoted after a page's name
(``docs/ci.md "Rolling out the gate"``) that the page has. The README links every docs
page. Nothing may point at a file outside the repository. (Tests are read by their module
docstrings alone: their bodies hold paths as data.)
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.paths import ROOT

README = ROOT / "README.md"
DESIGN = ROOT / "docs" / "design.md"
DOCS = sorted(ROOT.glob("docs/*.md"))
MARKDOWN = sorted([README, ROOT / "perfgate" / "ci" / "templates" / "README.md", *DOCS])
TESTS = sorted(ROOT.glob("tests/**/*.py"))
SOURCES = sorted(
    [
        *ROOT.glob("perfgate/**/*.py"),
        *ROOT.glob("perfgate/**/*.j2"),
        *ROOT.glob("perfgate/ci/templates/**/*.j2"),
        *ROOT.glob("perfgate/ci/templates/**/*.yml"),
        *(ROOT / name for name in ("noxfile.py", "tasks.py", "pyproject.toml", "perfgate.yaml")),
        ROOT / "examples" / "isaaclab" / "perfgate.yaml",
    ]
)
TEXTS = [*MARKDOWN, *SOURCES, *TESTS]

LINK = re.compile(r"\]\(([^)\s]+)\)")
MARKDOWN_FILE = re.compile(r"(?<![\w/.:-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
RULE = re.compile(r"\bR(\d{1,2})\b")
# A section of a page, cited by the page's name and the heading in quotes:
# ``docs/isaaclab.md "CI images"`` (``isaaclab.md "CI images"`` from another page of docs/).
PAGE_SECTION = re.compile(r'(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md) "([^"\n]+)"')
# A README section cited by the code: ``README "Heading"`` (or the older ``(README: Heading)``).
README_SECTION = re.compile(r'README(?: "([^"]+)"|: ([^)"\n]+)\))')
# Places outside this repository a text once pointed to (the design kept beside it).
OUTSIDE = re.compile(
    "|".join((r"(?<![\w.])/" + "work/", r"\bseeds/", r"\bshared/", "DESIGN" + r"\.md"))
)
#: Reports perfgate writes (named in help and docstrings), not files of this tree.
WRITTEN = frozenset({"summary.md", "qualification.md"})


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file (a repeated heading gets -1, -2, ...)."""
    seen: Counter[str] = Counter()
    found = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        base = slug(line.lstrip("#"))
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def rules() -> set[str]:
    """The rules docs/design.md states: its ``### Rn`` headings."""
    return set(re.findall(r"^### (R\d+)\b", DESIGN.read_text(encoding="utf-8"), flags=re.M))


def cited_page(path: Path, name: str) -> Path | None:
    """The file a text at ``path`` means by ``name``: beside it, at the root, or in docs/."""
    candidates = (path.parent / name, ROOT / name, ROOT / "docs" / name)
    return next((c for c in candidates if c.is_file()), None)


def where(path: Path) -> str:
    return str(path.relative_to(ROOT))


def readable(path: Path) -> str:
    """What of a file is read for references: a test module's docstring, else all of it."""
    text = path.read_text(encoding="utf-8")
    if path not in TESTS:
        return text
    return ast.get_docstring(ast.parse(text)) or ""


def test_the_design_states_every_rule_from_r1_to_r18() -> None:
    assert rules() == {f"R{n}" for n in range(1, 21)}


@pytest.mark.parametrize("path", MARKDOWN, ids=where)
def test_every_relative_link_resolves(path: Path) -> None:
    broken = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: outside by nature, not a file of this tree
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists() or not linked.is_relative_to(ROOT):
            broken.append(f"{target}: no such file in the repository")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: {where(linked)} has no heading #{anchor}")
    assert not broken, f"{where(path)}: {broken}"


@pytest.mark.parametrize("path", TEXTS, ids=where)
def test_every_cited_file_rule_and_section_exists(path: Path) -> None:
    text = readable(path)
    problems = [f"points outside the repository: {m.group(0)!r}" for m in OUTSIDE.finditer(text)]
    for name in set(MARKDOWN_FILE.findall(text)) - WRITTEN:
        if cited_page(path, name) is None:
            problems.append(f"cites {name}, which is not in the repository")
    stated = rules()
    cited = sorted(set(RULE.findall(text)), key=int)
    problems += [f"cites R{n}, which docs/design.md does not state" for n in cited
                 if f"R{n}" not in stated]  # fmt: skip
    for name, section in PAGE_SECTION.findall(text):
        page = cited_page(path, name)
        if page is not None and slug(section) not in anchors(page):
            problems.append(f'cites {name} "{section}", which has no such section')
    assert not problems, f"{where(path)}: {problems}"


@pytest.mark.parametrize("path", SOURCES, ids=where)
def test_every_readme_section_the_code_cites_exists(path: Path) -> None:
    """A message, comment or template naming a README section names one it has."""
    headings = anchors(README)
    cited = [quoted or bare for quoted, bare in README_SECTION.findall(path.read_text())]
    missing = [section for section in cited if slug(section) not in headings]
    assert not missing, f"{where(path)} cites README sections it does not have: {missing}"


def test_the_readme_links_every_docs_page() -> None:
    """A page of docs/ the README does not link is a page no reader finds."""
    linked = {(README.parent / target.partition("#")[0]).resolve()
              for target in LINK.findall(README.read_text(encoding="utf-8"))}  # fmt: skip
    assert [where(page) for page in DOCS if page.resolve() not in linked] == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The patterns catch a dangling file, rule and anchor (the test can fail)."""
    assert MARKDOWN_FILE.findall("see DESIGN-NOTES.md and docs/design.md.") == [
        "DESIGN-NOTES.md",
        "docs/design.md",
    ]
    assert RULE.findall("(R8) and R19, not R2D2") == ["8", "19"]
    assert OUTSIDE.search("read " + "DESIGN" + ".md first")
    assert README_SECTION.findall('(README: CI images) and README "Exit codes".') == [
        ("", "CI images"),
        ("Exit codes", ""),
    ]
    assert PAGE_SECTION.findall('see docs/ci.md "Rolling out" and design.md "Layout".') == [
        ("docs/ci.md", "Rolling out"),
        ("design.md", "Layout"),
    ]
    page = tmp_path / "page.md"
    page.write_text("# Title\n## How good: `nox -s quality`\n## Title\n", encoding="utf-8")
    assert anchors(page) == {"title", "how-good-nox--s-quality", "title-1"}
