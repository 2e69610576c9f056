"""The upstream CRD schemas the custom resources are validated against (validate.py): where they
are not given, the tests that need them skip and say why; under CI=true (CI has them beside the
checkout) their absence fails here, so a CI run cannot pass on skipped schema checks."""

from __future__ import annotations

from upstream_crds import require
from validate import _SCHEMAS, CRDS_DIR


def test_the_upstream_crds_are_given_where_ci_runs():
    require("the CRD schema checks")
    assert _SCHEMAS, f"no CRD schema in {CRDS_DIR}: every schema check would pass unchecked"
    # every kind the network and GPU Operator plans write has its schema
    kinds = {kind for (_api, kind) in _SCHEMAS}
    assert {"NicClusterPolicy", "IPPool", "NetworkAttachmentDefinition", "ClusterPolicy", "NVIDIADriver"} <= kinds
