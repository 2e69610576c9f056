# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the cluster networking plan (gpufabric_plan.network, planned by the plan play):
its report section, the file names of render mode, and what publishing the objects needs
(RBAC rules, owner selectors, pruning)."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.plugin_utils._filter_errors import filter_errors


def _plan_errors():
    from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import ClusterPlanError

    return (ClusterPlanError,)


def _access_errors():
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply.k8s_access import AccessRuleError

    return (AccessRuleError,)


def _publish_errors():
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply.k8s_publish import PublishError

    return (PublishError,)


def cluster_report(plan, dra=None):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import cluster_report as _cluster_report

    return _cluster_report.report_text(plan, dra or None)


@filter_errors(_plan_errors)
def k8s_render_files(objects, prefix=""):
    """[{file, object}] with one stable file name per object, for render mode (kustomization resources)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import network_objects as _cluster_objects

    return _cluster_objects.render_files(objects, prefix)


@filter_errors(_access_errors)
def k8s_apply_rules(objects):
    """RBAC-shaped rules (for gpufabric.rollout.k8s_access) that server-side applying `objects` needs."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access

    return _k8s_access.apply_rules(objects)


def k8s_crd_objects(names):
    """The CustomResourceDefinitions of these names, as objects for gpufabric.rollout.k8s_ready."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_ready as _k8s_ready

    return _k8s_ready.crd_objects(names)


@filter_errors(_publish_errors)
def k8s_owner_selector(component, instance):
    """Label selectors that find the objects this collection's `instance` made for `component`."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

    return _k8s_publish.selector(component, instance)


@filter_errors(_publish_errors)
def k8s_stale(found, planned, instance):
    """Objects in `found` (k8s_info resources) made by `instance` for the component that `planned` no longer has."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

    return _k8s_publish.stale(found, planned, instance)


@filter_errors(_publish_errors)
def k8s_prune_queries(kinds):
    """One {api_version, kind} k8s_info query per resource of the prune kinds."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

    return _k8s_publish.prune_queries(kinds)


@filter_errors(_publish_errors)
def k8s_prune_rules(kinds):
    """RBAC-shaped rules (gpufabric.rollout.k8s_access) that pruning the kinds needs."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

    return _k8s_publish.prune_rules(kinds)


def k8s_transient(result):
    """Whether a failed kubernetes.core result is a transient API answer (429, 5xx, 409, connection) to retry;
    never a field-manager conflict of a server-side apply."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry

    return _k8s_retry.transient(result or {})


def k8s_claims_in_use(pods, claims):
    """``namespace/claim (Pod ...)`` for each claim among `claims` (k8s_stale entries) that a running Pod mounts."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

    return _k8s_publish.claims_in_use(pods, claims)


def k8s_helm_rules(namespaces):
    """RBAC-shaped rules that Helm releases in `namespaces` need (the namespace, the release records)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access

    return _k8s_access.helm_release_rules(list(namespaces or []))


def k8s_chart_digest_refusal(pull, pinned, ref, version, variable):
    """Why a chart ``helm pull`` fetched (kubernetes.core.helm_pull's result) is refused: its manifest digest is
    not ``pinned`` (named as ``variable``); '' when it is."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import chart_digest as _chart_digest

    output = "{}\n{}".format((pull or {}).get("stdout") or "", (pull or {}).get("stderr") or "")
    return _chart_digest.refusal(output, str(pinned), str(ref), str(version), str(variable))


class FilterModule:
    def filters(self):
        funcs = (
            cluster_report,
            k8s_render_files,
            k8s_apply_rules,
            k8s_crd_objects,
            k8s_owner_selector,
            k8s_stale,
            k8s_transient,
            k8s_prune_queries,
            k8s_prune_rules,
            k8s_claims_in_use,
            k8s_helm_rules,
            k8s_chart_digest_refusal,
        )
        return {func.__name__: func for func in funcs}
