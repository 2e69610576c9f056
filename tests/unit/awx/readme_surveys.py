"""Print (or, with --write, put into README.md) the summary of the AWX surveys that the
README's AWX section carries; test_survey.py checks the README against the same generation."""

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
    readme = HERE.parents[2] / "README.md"
    text = readme.read_text()
    section = text.index("\n## AWX\n")
    start = text.index("\n- plan (", section) + 1
    end = text.index("\n\n", start)
    readme.write_text(text[:start] + block + text[end:])


if __name__ == "__main__":
    main()
