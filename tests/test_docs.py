"""The docs hold together: links resolve, docs/format.md keeps its numbered sections, and what
cites the format cites docs/format.md by a section that exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", REPO / "ARCHITECTURE.md", *DOCS]
FORMAT_DOC = REPO / "docs" / "format.md"

# Files that still cite the format by its old name; they are being rewritten elsewhere, and each
# must cite docs/format.md once that lands. Remove a file from this list when it is fixed.
OLD_CITATIONS_PENDING: set[str] = set()


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading and not fenced:
            base = slug(heading.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page: Path) -> None:
    for target in links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: link to a missing file: {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.name}: no heading for #{anchor} in {dest.name}"


def test_the_readme_lists_the_format_reference() -> None:
    assert "](docs/format.md)" in (REPO / "README.md").read_text(encoding="utf-8")


def format_sections() -> dict[int, str]:
    text = FORMAT_DOC.read_text(encoding="utf-8")
    return {int(n): title for n, title in re.findall(r"^## (\d+)\. (.+)$", text, re.MULTILINE)}


def test_format_has_its_numbered_sections_in_order_and_reserves_wave_2() -> None:
    sections = format_sections()
    assert list(sections) == sorted(sections)
    assert list(sections)[:10] == list(range(1, 11))
    assert sections[1] == "Files and discovery" and sections[10] == "Python API"
    text = FORMAT_DOC.read_text(encoding="utf-8")
    if len(sections) < 18:  # the sections of wave 2 not written yet are listed as planned
        # Wave 2's sections land in any order: each of 11 to 18 is written or listed, once.
        planned = text.split("## Wave 2 (planned)", 1)[1]
        listed = [int(n) for n in re.findall(r"^(\d+)\. ", planned, re.MULTILINE)]
        assert listed == sorted(listed)
        assert sorted(listed + list(sections)) == list(range(1, 19))


def tracked_text_files() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [
        REPO / n
        for n in names
        if n.endswith((".py", ".md", ".yaml", ".yml", ".json", ".txt")) and (REPO / n).is_file()
    ]


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="not a git checkout")
def test_citations_name_docs_format_md_and_a_section_it_has() -> None:
    sections = format_sections()
    old = re.compile(r"\bFORMAT(\.md)?\b")
    cited = re.compile(r"format\.md\)? sections? (\d+)((?:, \d+)*)(?: and (\d+))?")
    for path in tracked_text_files():
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("tests/replies/") and rel.endswith(".txt"):
            continue  # reply texts, not citations
        text = path.read_text(encoding="utf-8", errors="replace")
        if rel not in OLD_CITATIONS_PENDING and rel != "tests/test_docs.py":
            assert not old.search(text), (
                f"{rel} cites the format by another name than docs/format.md"
            )
        for match in cited.finditer(text):
            numbers = [match.group(1), *re.findall(r"\d+", match.group(2)), match.group(3)]
            for n in filter(None, numbers):
                assert int(n) in sections, (
                    f"{rel} cites docs/format.md section {n}, which is not there"
                )


def test_the_pending_list_is_not_stale() -> None:
    """A file fixed (or gone) leaves the list, so the check covers it again."""
    for rel in sorted(OLD_CITATIONS_PENDING):
        path = REPO / rel
        if path.exists():
            assert re.search(r"\bFORMAT\b", path.read_text(encoding="utf-8")), (
                f"{rel} no longer cites FORMAT: remove it from OLD_CITATIONS_PENDING"
            )
