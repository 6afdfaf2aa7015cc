"""The site's generated pages, from the code (so they are never out of date):

- `index.md`: the repository's README, the project's front page (its links into `docs/` made
  relative to the site);
- `reference/`: one page per public name of `drfemu` (its `__all__`), rendered from the name's
  docstring by mkdocstrings, and an index that lists them with their first docstring line;
- the parameter table of `parameters.md`, put where the page marks it (`drfemu params --markdown`).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

import drfemu

PARAMETERS_MARK = "<!-- the table of `drfemu params --markdown` -->"


def _public() -> list[tuple[str, str, str]]:
    """(name, its page's file name, dotted path of what it is) for each public name, in `__all__`
    order. Page names are lower case (a host's file system may not tell `Param` from `param`); a
    class whose name differs from another name only by case gets `-class` added."""
    where = drfemu._WHERE  # noqa: SLF001 - the package face's own table of its names
    names = [name for name in drfemu.__all__ if name in where]
    lowered = [name.lower() for name in names]
    pages = [f"{low}-class" if lowered.count(low) > 1 and name[0].isupper() else low
             for name, low in zip(names, lowered)]
    return [(name, page, f"{where[name][0]}.{where[name][1]}") for name, page in zip(names, pages)]


def _summary(name: str) -> str:
    doc = inspect.getdoc(getattr(drfemu, name)) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


README = Path(__file__).resolve().parents[2] / "README.md"


def on_files(files: Files, config: Any) -> Files:
    front = README.read_text(encoding="utf-8").replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=front))
    pages = ["# API reference", "", "Every name `import drfemu` offers, with its page (generated from the docstrings).",
             "", "| name | what it is |", "|---|---|"]
    for name, page, path in _public():
        files.append(File.generated(config, f"reference/{page}.md", content=f"# `drfemu.{name}`\n\n::: {path}\n"))
        pages.append(f"| [`{name}`]({page}.md) | {_summary(name).replace('|', chr(92) + '|')} |")
    files.append(File.generated(config, "reference/index.md", content="\n".join(pages) + "\n"))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if PARAMETERS_MARK in markdown:
        from drfemu.workloads.points import parameters_markdown

        markdown = markdown.replace(PARAMETERS_MARK, parameters_markdown())
    return markdown
