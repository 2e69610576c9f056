# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the validate role: thin wrappers over module_utils/parsers/perftest, _gdsio, _readback,
_cabling, _validate_jobs and _validate_reuse."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native


def validate_gdsio_command(directory, gpu, io_type, **kwargs):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdsio as _gdsio

    try:
        return _gdsio.command(directory, int(gpu), int(io_type), **kwargs)
    except _gdsio.GdsioError as exc:
        raise AnsibleFilterError(f"validate_gdsio_command: {exc}") from exc


def validate_runs(results, node, fields=("peer", "device", "memory")):
    """Loop results of a command task as report runs: the item's fields plus ``output``."""
    runs = []
    for res in results or []:
        item = res.get("item") or {}
        run = {"node": node}
        run.update({k: item[k] for k in fields if k in item})
        run["output"] = (res.get("stdout") or "") + ("\n" + res["stderr"] if res.get("stderr") else "")
        if res.get("skipped"):
            continue
        runs.append(run)
    return runs


def validate_gds_run(result, node):
    """One registered gdsio loop result (item = [filesystem, io]) as a report run."""
    fs = (result.get("item") or [{}])[0]
    run = {
        "node": node,
        "filesystem": fs.get("path"),
        "output": (result.get("stdout") or "") + (result.get("stderr") or ""),
    }
    if fs.get("expected_gbps"):
        run["expected_gbps"] = float(fs["expected_gbps"])
    return run


def _plain(value):
    """Plain dicts and lists (Ansible's lazy containers and tagged strings dropped)."""
    return json.loads(json.dumps(value, default=to_native))


def validate_readback(node_plan, node, live):
    """The read-back checks of one node: what it holds (``live``) against its plan (see _readback)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import readback as _readback

    try:
        return _readback.checks(str(node), _plain(node_plan or {}), _plain(live or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"validate_readback: {exc}") from exc


def validate_cabling(leaves, node, interfaces, collected):
    """The cabling checks of one node: its rail NICs' LLDP neighbours (``collected``, lldp_neighbours'
    result) against the switch plan's ``leaves`` (see proof/cabling)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import cabling as _cabling
    from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import lldp as _lldp

    try:
        return _cabling.checks(str(node), _plain(leaves or {}), _plain(interfaces or []), _plain(collected or {}))
    except (KeyError, TypeError, ValueError, _lldp.LldpError) as exc:
        raise AnsibleFilterError(f"validate_cabling: {exc}") from exc


def validate_dra_devices(slices, dra, hosts):
    """The dra read-back checks: each node's published devices (``slices``, k8s_info's result of the
    ResourceSlices) against its node group's planned ones (``dra``, the plan's dra section); ``hosts``
    maps each Kubernetes Node name of the run to its inventory host (see proof/dra_devices)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import dra_devices as _dra_devices

    if not isinstance(slices, dict) or not isinstance(hosts, dict):
        raise AnsibleFilterError("validate_dra_devices: expects k8s_info's result and a dict of Node names to hosts")
    try:
        return _dra_devices.checks(_plain(dra or {}), _plain(slices.get("resources") or []), _plain(hosts))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"validate_dra_devices: {exc}") from exc


def validate_switch_qos(result):
    """The leaves' QoS agreement as validate checks (``result``: switch_agreement's; see proof/switch_qos)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import switch_qos as _switch_qos

    try:
        return _switch_qos.checks(_plain(result or {}))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"validate_switch_qos: {exc}") from exc


def validate_nccl_secret(job, keypair):
    """The Job's Secret with ``keypair``, the result of gpufabric.rollout.validate_plan part=ssh_keypair."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _validate_jobs

    return _validate_jobs.secret(_plain(job), keypair["private_key"], keypair["public_key"])


def validate_nccl_owned(obj, applied_job, check_mode=False):
    """The Job's Secret, Service or claim template owned by ``applied_job``, the Job as the API server
    returned it."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _validate_jobs

    try:
        return _validate_jobs.owned_by(_plain(obj), _plain(applied_job or {}), bool(check_mode))
    except _validate_jobs.JobPlanError as exc:
        raise AnsibleFilterError(f"validate_nccl_owned: {exc}") from exc


def validate_nccl_resume(job):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _validate_jobs

    return _validate_jobs.resume(_plain(job))


def validate_nccl_cleanup(jobs):
    """What the NCCL Jobs leave in the cluster, to delete: each Job, its Service, its Secret and (dra
    mode) its claim template."""
    out = []
    for job in _plain(jobs or []):
        for obj in job["objects"]:
            out.append(
                {
                    "api_version": obj["apiVersion"],
                    "kind": obj["kind"],
                    "name": obj["metadata"]["name"],
                    "namespace": job["namespace"],
                }
            )
        out.append({"api_version": "v1", "kind": "Secret", "name": job["secret"], "namespace": job["namespace"]})
    return out


def validate_nccl_lab_env(job):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _validate_jobs

    return _validate_jobs.lab_environment(_plain(job))


def _by_job(results, key):
    """Loop results of one task per Job (item = the job, or [job, host]) grouped by Job name."""
    out = {}
    for res in _plain(results or []):
        if res.get("skipped"):
            continue
        item = res.get("item")
        job = item[0] if isinstance(item, list) else item
        out.setdefault(job["name"], []).append(key(res, item))
    return out


def validate_nccl_collect(jobs, states, pods, logs, lab, figures):
    """The report's NCCL runs and the Jobs' checks from the registered results of nccl.yml."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import job_results as _job_results

    state = {n: v[0] for n, v in _by_job(states, lambda r, i: (r.get("resources") or [None])[0]).items()}
    found = {n: v[0] for n, v in _by_job(pods, lambda r, i: r.get("resources") or []).items()}
    log = {n: v[0] for n, v in _by_job(logs, lambda r, i: r).items()}
    runs = _by_job(
        lab, lambda r, i: {"host": i[1], "rc": r.get("rc"), "stdout": r.get("stdout"), "stderr": r.get("stderr")}
    )
    return _job_results.collect(_plain(jobs or []), state, found, log, runs, str(figures))


def validate_launcher_pod(pods_result):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import job_results as _job_results

    pod = _job_results.launcher_pod(_plain((pods_result or {}).get("resources") or []))
    return (pod or {}).get("metadata", {}).get("name", "")


def validate_fingerprint(intent, topology, checks):
    """One node's fingerprint for measurement reuse: its checked variables, hardware and read-back checks."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import reuse as _validate_reuse

    return _validate_reuse.node_fingerprint(_plain(intent or {}), _plain(topology or {}), _plain(checks or []))


def validate_options_fingerprint(options):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import reuse as _validate_reuse

    return _validate_reuse.options_fingerprint(_plain(options or {}))


def validate_reuse(record_text, nodes, options, hours, readback=True, readback_ok=True):
    """Reuse the last measurement record's runs, or measure (see _validate_reuse.decide)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import reuse as _validate_reuse

    try:
        hours = float(hours)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"validate_reuse: validate_reuse_hours {hours!r} is not a number") from exc
    nodes = _plain(nodes or {})
    out = _validate_reuse.decide(str(record_text or ""), nodes, str(options), hours, bool(readback), bool(readback_ok))
    out["fingerprints"] = {"nodes": nodes, "options": str(options)}
    return out


def validate_describe(check):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates

    return _gates.describe(check)


def validate_not_run(state):
    """The gates of this run that measured nothing, with their reasons (proof/verdict.py not_run)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict

    if not isinstance(state, dict):
        raise AnsibleFilterError(
            f"validate_not_run: expects a mapping of the run's switches, got {type(state).__name__}"
        )
    return _verdict.not_run(_plain(state))


def validate_missing_line(entry):
    """A gate not run as the report's line: ``NOT RUN <layer> <node>: <what>: <reason>``."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict

    return _verdict.missing_line(entry)


class FilterModule:
    def filters(self):
        return {
            "validate_gdsio_command": validate_gdsio_command,
            "validate_runs": validate_runs,
            "validate_gds_run": validate_gds_run,
            "validate_describe": validate_describe,
            "validate_not_run": validate_not_run,
            "validate_missing_line": validate_missing_line,
            "validate_readback": validate_readback,
            "validate_cabling": validate_cabling,
            "validate_switch_qos": validate_switch_qos,
            "validate_dra_devices": validate_dra_devices,
            "validate_nccl_secret": validate_nccl_secret,
            "validate_nccl_lab_env": validate_nccl_lab_env,
            "validate_nccl_cleanup": validate_nccl_cleanup,
            "validate_nccl_owned": validate_nccl_owned,
            "validate_nccl_resume": validate_nccl_resume,
            "validate_nccl_collect": validate_nccl_collect,
            "validate_launcher_pod": validate_launcher_pod,
            "validate_fingerprint": validate_fingerprint,
            "validate_options_fingerprint": validate_options_fingerprint,
            "validate_reuse": validate_reuse,
        }
