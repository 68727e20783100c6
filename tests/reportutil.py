"""Run `cudamigrate scan` in-process for report tests."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

from cudamigrate.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
# the bundled example (examples/legacy-app), or the stream fixtures in a checkout without it
EXAMPLE = ROOT / "examples" if (ROOT / "examples").is_dir() else ROOT / "fixtures" / "streams"


def haystack(f: dict) -> str:
    """What the page's search box looks in, as report.js builds it."""
    return f"{f['rule']} {f['name']} {f['family']} {f['path']}:{f['line']} {f['message']}".lower()


def scan(args: list[str], out: Path | None = None) -> tuple[int, str]:
    argv = ["scan", *map(str, args), "--jobs", "1"]
    if out is not None:
        argv += ["-o", str(out)]
    r = CliRunner().invoke(main, argv, catch_exceptions=False)
    return r.exit_code, out.read_text(encoding="utf-8") if out is not None else r.output


class Rows(HTMLParser):
    """Collects the attributes of finding rows (`tr.row`) and the text of detail rows."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self.imgs = 0
        self.scripts = 0
        self._detail = 0
        self.detail_text: list[str] = []
        self.classes: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        cls = a.get("class", "")
        if cls:
            self.classes.append(cls)
        if tag == "tr" and "row" in cls.split():
            self.rows.append(a)
        if tag == "tr" and "detail" in cls.split():
            self._detail += 1
        if tag == "img":
            self.imgs += 1
        if tag == "script":
            self.scripts += 1

    def handle_data(self, data):
        if self._detail:
            self.detail_text.append(data)


def parse_rows(dom: str) -> Rows:
    p = Rows()
    p.feed(dom)
    return p
