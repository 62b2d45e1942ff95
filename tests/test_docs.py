"""The repository explains itself: every ``docs/<note>.md`` the code, tests or README cite exists, and a
section cited by its quoted title (``docs/design.md, "Protocols are thin"``) is a heading there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITING = ["engine", "protocols", "trainer", "tests", "benchmarks", "README.md"]
CITATION = re.compile(r"docs/([A-Za-z0-9_-]+\.md)(?:``)?(?:,\s*\"([^\"]+)\")?")


def _cited() -> list[tuple[Path, str, str | None]]:
    found = []
    for entry in CITING:
        path = ROOT / entry
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for source in files:
            for match in CITATION.finditer(source.read_text(encoding="utf-8")):
                found.append((source, match.group(1), match.group(2)))
    return found


def _headings(note: Path) -> set[str]:
    return {
        line.lstrip("#").strip().lower()
        for line in note.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def test_every_cited_note_and_section_exists() -> None:
    cited = _cited()
    assert len(cited) >= 8  # the scan finds the citations (the code cites design.md and protocols.md)
    for source, name, section in cited:
        note = ROOT / "docs" / name
        assert note.is_file(), f"{source.relative_to(ROOT)} cites docs/{name}, which is missing"
        if section is not None:
            section = " ".join(section.split())  # a title may wrap across a docstring's lines
            assert section.lower() in _headings(note), (
                f"{source.relative_to(ROOT)}: no section {section!r} in docs/{name}"
            )


def test_protocol_sections_the_code_names_exist() -> None:
    headings = _headings(ROOT / "docs" / "protocols.md")
    for section in [
        "the checklist",
        "uci",
        "uci bad inputs",
        "usi",
        "usi bad inputs",
        "gtp",
        "gtp bad-input list",
    ]:
        assert section in headings
