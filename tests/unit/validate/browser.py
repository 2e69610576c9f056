"""Headless Chromium for the report tests: the page's DOM after a script ran, and screenshots."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path


def find_chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium renders the report headless: `make tools` installs it (mk/browser.mk)"
    return exe


def flags(profile: Path):
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]


def run_script(exe: str, html: str, script: str, tmp_path: Path, window=(1280, 1000)):
    """Load ``html`` with ``script`` run on load; the script's result (JSON) as Python data."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    page = tmp_path / "probe.html"
    body = (
        "<script>window.addEventListener('load',()=>{const r=(()=>{" + script + "})();"
        "const p=document.createElement('pre');p.id='result';p.textContent=JSON.stringify(r);"
        "document.body.appendChild(p);});</script></body>"
    )
    page.write_text(html.replace("</body>", body))
    dom = subprocess.run(
        [
            exe,
            *flags(tmp_path / "profile"),
            f"--window-size={window[0]},{window[1]}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    found = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(
        found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    )


def screenshot(exe: str, html: str, out: Path, tmp_path: Path, window=(1280, 1000)) -> Path:
    page = tmp_path / "page.html"
    page.write_text(html)
    subprocess.run(
        [
            exe,
            *flags(tmp_path / "shot-profile"),
            f"--window-size={window[0]},{window[1]}",
            f"--screenshot={out}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return out


def png_size(path: Path):
    """Width and height from a PNG's IHDR chunk (PNG specification, section 11.2.2)."""
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
