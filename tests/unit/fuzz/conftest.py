"""Hypothesis settings for the fuzz suite: deterministic in CI, bounded to about a minute.

Profiles (select with HYPOTHESIS_PROFILE):
* ``ci`` (default): derandomized (the same examples on every run and machine), no example
  database, no deadline (shared CI machines stall), ``max_examples`` sized so the whole suite
  takes about a minute on a 2-core machine.
* ``deep``: random seeds and ten times the examples, for a local hunt; a failure prints the
  ``@reproduce_failure`` blob to pin it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", derandomize=True, database=None, max_examples=250, print_blob=False, **_COMMON)
settings.register_profile("deep", derandomize=False, database=None, max_examples=2500, print_blob=True, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
