"""Headless Chromium for report tests: find the binary, dump the DOM after scripts ran, collect console output."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
CONSOLE = re.compile(r":CONSOLE(?:\(\d+\))?:?\d*\]\s*(.*)")


def chromium_binary() -> str | None:
    for name in CANDIDATES:
        p = shutil.which(name)
        if p:
            return p
    return None


@dataclass
class Page:
    dom: str
    console: list[str]
    stderr: str

    def body_attr(self, name: str) -> str | None:
        m = re.search(r"<body\b[^>]*\b" + re.escape(name) + r'="([^"]*)"', self.dom)
        return m.group(1) if m else None


def _base(profile: Path) -> list[str]:
    binary = chromium_binary()
    assert binary, "no chromium binary"
    return [binary, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0"]


def load(url: str, profile: Path, budget_ms: int = 10000, timeout: int = 180) -> Page:
    """Load `url`, let its scripts run (virtual time), and return the serialized DOM and console messages."""
    p = subprocess.run(_base(profile) + [f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
                       capture_output=True, text=True, timeout=timeout)
    console = [m.group(1) for m in map(CONSOLE.search, p.stderr.splitlines()) if m]
    return Page(p.stdout, console, p.stderr)


def screenshot(url: str, out: Path, profile: Path, size: str = "1400,1800", timeout: int = 180) -> Path:
    subprocess.run(_base(profile) + ["--virtual-time-budget=5000", f"--window-size={size}", f"--screenshot={out}", url],
                   capture_output=True, text=True, timeout=timeout)
    return out
