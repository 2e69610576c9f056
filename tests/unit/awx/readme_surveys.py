"""Print (or, with --write, put into docs/awx.md) the summary of the AWX surveys that the AWX
documentation carries; test_survey.py checks docs/awx.md against the same generation."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2] / ".collections"))

from _awx_support import stage_surveys


def lines():
    out = []
    for stage, result in stage_surveys().items():
        if not result["enabled"]:
            continue
        asked = ", ".join(f"`{q['variable']}`" for q in result["survey_spec"]["spec"])
        text = f"- {stage} ({len(result['survey_spec']['spec'])} questions): {asked}."
        out.append(textwrap.fill(text, width=110, subsequent_indent="  ", break_on_hyphens=False))
    return out


def main():
    block = "\n".join(lines())
    if "--write" not in sys.argv:
        print(block)
        return
    doc = HERE.parents[2] / "docs" / "awx.md"
    text = doc.read_text()
    start = text.index("\n- plan (") + 1
    end = text.index("\n\n", start)
    doc.write_text(text[:start] + block + text[end:])


if __name__ == "__main__":
    main()
