# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the cluster networking plan (gpufabric_plan.network, planned by the plan play):
its report section and the file names of render mode."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.module_utils import _cluster_objects, _cluster_report
from ansible_collections.gpufabric.rollout.plugins.module_utils._cluster_intent import ClusterPlanError
from ansible_collections.gpufabric.rollout.plugins.plugin_utils._filter_errors import filter_errors


def cluster_report(plan):
    return _cluster_report.report_text(plan)


@filter_errors(ClusterPlanError)
def k8s_render_files(objects, prefix=""):
    """[{file, object}] with one stable file name per object, for render mode (kustomization resources)."""
    return _cluster_objects.render_files(objects, prefix)


class FilterModule:
    def filters(self):
        return {"cluster_report": cluster_report, "k8s_render_files": k8s_render_files}
