"""The README is a front door and the reference is the docs site: what each promises."""

from __future__ import annotations

import re
import shlex
import unicodedata
from pathlib import Path

import pytest

from termal_tui.cli import main
from termal_tui.cli.common import EXIT_TABLE

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CI = ROOT / ".ci" / "run"
VENV = "python3 -m venv .venv && . .venv/bin/activate && pip install "


def section(text: str, title: str) -> str:
    """The body of the ``## title`` section (up to the next ``## ``)."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


def fenced(text: str) -> list[str]:
    return re.findall(r"^```\w*\n(.*?)^```", text, re.S | re.M)


def two_commands() -> tuple[str, str]:
    blocks = fenced(section(README.read_text(), "The two commands"))
    assert len(blocks) == 2, blocks
    demo, tests = (block.rstrip("\n") for block in blocks)
    return demo, tests


def test_the_readme_stays_a_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    assert lines[0] == "# termal-tui"
    assert "![" in "\n".join(lines[:5])  # a screenshot at the top


def test_the_two_commands_are_one_line_each_and_need_no_bare_pip():
    demo, tests = two_commands()
    for command in (demo, tests):
        assert "\n" not in command and "\\" not in command, command
        # PEP 668: a stock Debian/Ubuntu python3 refuses pip outside a venv
        assert command.startswith(VENV), command
        assert command.count("pip install") == 1, command
    assert demo.endswith("&& termal-tui --demo")
    assert " pytest " in f" {tests.split('&&')[-1]} "


def test_the_demo_command_uses_a_real_flag(capsys):
    demo, _tests = two_commands()
    viewer_args = shlex.split(demo.split("&&")[-1])[1:]
    assert viewer_args == ["--demo"]
    assert main(["--help"]) == 0
    assert re.search(r"^\s+--demo\b", capsys.readouterr().out, re.M)


def test_ci_runs_the_readmes_test_command_verbatim_then_lints_and_the_docs():
    _demo, tests = two_commands()
    ci = CI.read_text()
    lines = [line.strip() for line in ci.splitlines()]
    assert tests in lines
    assert "-n auto" in tests  # pytest-xdist
    for step in (
        "ruff check .",
        "ruff format --check .",
        "mypy termal_tui",
    ):
        assert step in lines, step
    # the docs extra's own packages, read from pyproject.toml (one list, no second pin)
    assert '["optional-dependencies"]["docs"]' in ci and "pip install -q -r" in ci
    assert "unset PYTHONDONTWRITEBYTECODE" in lines  # the test processes keep compiled modules
    build = re.search(r"^\s*(\S+=\S+ )*mkdocs build --strict\b.*$", ci, re.M)
    assert build and "--quiet" not in build.group(0)  # --quiet hides what --strict fails on


def test_the_exit_table_is_in_the_docs():
    errors = (DOCS / "agents" / "errors.md").read_text()
    for line in EXIT_TABLE.splitlines()[1:]:
        assert line.strip() in errors, line


def nav_pages() -> list[str]:
    """Every page the nav of mkdocs.yml names (``- Title: path.md`` or ``- path.md``)."""
    config = (ROOT / "mkdocs.yml").read_text()
    nav = config[config.index("\nnav:\n") :]
    return re.findall(r"^\s*-\s+(?:[^\n]*?:\s+)?([\w./-]+\.md)\s*$", nav, re.M)


def test_every_docs_page_is_in_the_nav_once_and_every_nav_entry_exists():
    pages = nav_pages()
    assert len(pages) == len(set(pages)), pages
    on_disk = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert set(pages) == on_disk


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a plain heading (where the README's links are followed)."""
    text = re.sub(r"[`*_]", "", heading).strip().lower()
    return re.sub(r"[^\w\s-]", "", text).replace(" ", "-")


def site_slug(heading: str) -> str:
    """The anchor the docs site gives it (Python-Markdown's toc: ASCII, runs of - collapsed)."""
    text = unicodedata.normalize("NFKD", re.sub(r"[`*_]", "", heading))
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode()).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def headings(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)  # not in code
    return re.findall(r"^#{1,6} (.+)$", text, re.M)


def test_the_readmes_links_lead_somewhere():
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    for link in local:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:  # the same anchor on GitHub and on the site
            assert any(anchor == github_slug(h) == site_slug(h) for h in headings(target)), link


def test_the_site_slugs_are_the_ones_mkdocs_gives():
    toc = pytest.importorskip("markdown.extensions.toc")  # with the docs extra
    for page in [README, *DOCS.rglob("*.md")]:
        for heading in headings(page):
            plain = re.sub(r"[`*_]", "", heading)
            assert site_slug(heading) == toc.slugify(plain, "-"), (page, heading)
