"""Issue 37 point 7: a figures cache is input, not markup. A cached ``png`` value that is not
base64 of a PNG must not reach the HTML report; titles are escaped."""

from __future__ import annotations

import base64

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report_html as _validate_report

# the eight-byte PNG signature (PNG specification, section 5.2) and a few bytes after it
_PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 8).decode("ascii")
_CHECKS = []
_META = {"title": "t", "generated": "now"}


@pytest.mark.parametrize(
    "png",
    ['x"><script>alert(1)</script>', "QUJD", "not base64!", None, 5],
    ids=["script", "base64-not-png", "not-base64", "none", "number"],
)
def test_a_cached_png_that_is_not_base64_of_a_png_is_rejected(png):
    with pytest.raises(ValueError, match="png must be base64 of a PNG"):
        _validate_report.render_html(_CHECKS, [{"title": "NCCL", "png": png}], _META)


def test_a_figure_title_is_escaped_and_a_valid_png_is_kept():
    out = _validate_report.render_html(_CHECKS, [{"title": '"><script>x</script>', "png": _PNG}], _META)
    assert "<script>" not in out
    assert "&lt;script&gt;" in out
    assert f'src="data:image/png;base64,{_PNG}"' in out
