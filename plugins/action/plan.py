# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for gpufabric.rollout.plan: check variables and compute the plan on the controller.

Runs on the controller; only check_node with gather_subset or read runs a module on the node (setup,
or plan_facts with read: the setup facts and the plan's reads of the node in one call). The
argument specs it checks against are read from the collection's own roles/*/meta/argument_specs.yml.

Its results are return values, not ``ansible_facts`` (but for the facts setup and plan_facts return to
check_node, as they would): facts a module returns are written to the
fact cache (AWX jobs and ansible.cfg ``fact_caching``), and a later run would find a stale plan
there. The plan role keeps them for the run with ``set_fact``, which never reaches the cache.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional

import yaml
from ansible import constants as C
from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase
from ansible.vars.clean import namespace_facts

try:  # ansible-core >= 2.19: strings read from files render only once trusted
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - older ansible-core renders any string

    def trust_as_template(value):
        return value


from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import check as _intent
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import rules as _intent_rules
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import storage as _intent_storage
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import switch_rules as _switch_rules
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster_summary as _cluster_summary
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import index_reads as _index_reads
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_read as _node_read
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import skew as _skew
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import upgrade as _upgrade
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import render as _switch_render

COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAN_ROLE = "plan"
# libyaml's loader when PyYAML was built with it: the plan reads every role's specs and vars on each
# call, and the pure-Python loader spent most of the plan's controller time there.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Variables that roles and modules set at run time (facts and registered results), and prefixes
# of variables that are not the collection's intent (the lab's own); never reported as unknown.
RUNTIME_NAMES = frozenset(
    (
        "gpufabric_topology",
        "gpufabric_gpudirect",
        "gpufabric_doca",
        "gpufabric_gdscheck",
        "gpufabric_qos",
        "gpufabric_report_sections",
        "gpufabric_intent",
        "gpufabric_node_plan",
        "gpufabric_plan",
        # What playbooks/report.yml publishes with set_stats: in an AWX workflow the job's artifacts
        # become extra vars of the next stage's job.
        "gpufabric_report",
        "gpufabric_upgrade_plan",
        "gpufabric_upgrade_result",
    )
)
IGNORED_PREFIXES = ("gpufabric_lab_",)
# The plan role's registered result of part check_node (roles/plan/tasks/main.yml), where the node's
# plan (lookup gpufabric.rollout.node_plan) reads the node's checked variables and package index reads.
NODE_CHECK = "__plan_check_node"


def read_yaml(path: str) -> Any:
    """One YAML document of the collection's own files."""
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=YAML_LOADER)  # a safe loader: CSafeLoader or SafeLoader


def load_specs(root: str = COLLECTION_ROOT) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """{role: {entry_point: options}} for every role of the collection."""
    specs: Dict[str, Dict[str, Dict[str, Any]]] = {}
    roles_dir = os.path.join(root, "roles")
    for role in sorted(os.listdir(roles_dir)):
        path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        document = read_yaml(path) or {}
        entries = document.get("argument_specs") or {}
        specs[role] = {name: dict((entry or {}).get("options") or {}) for name, entry in entries.items()}
    return specs


def load_skew_rules(root: str = COLLECTION_ROOT) -> Dict[str, Any]:
    """The version-skew rules (roles/plan/files/version_skew.yml), checked."""
    return _skew.load(read_yaml(os.path.join(root, "roles", PLAN_ROLE, "files", "version_skew.yml")))


def trusted(value: Any) -> Any:
    """Mark every string of a structure read from the collection's own YAML as a template."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [trusted(v) for v in value]
    return value


def load_internal_vars(roles: List[str], root: str = COLLECTION_ROOT) -> Dict[str, Any]:
    """The roles' vars/main.yml (their __role_* internals), which some role defaults refer to."""
    out: Dict[str, Any] = {}
    for role in roles:
        path = os.path.join(root, "roles", role, "vars", "main.yml")
        if os.path.isfile(path):
            out.update(read_yaml(path) or {})
    return out


def plain(value: Any) -> Any:
    """Plain Python data (drops Ansible's tagged/lazy containers) so the pure planners see dicts and lists."""
    return json.loads(json.dumps(value, default=to_native))


def raw_host_vars(hostvars: Any, host: str) -> Mapping[str, Any]:
    """A node's variables as they are stored (HostVars.raw_get), not templated: the plan reads only
    its node plan (set_fact's already rendered result) and its facts (a module's data, never a
    template) there. Reading them through ``hostvars[host]`` templated each value it returned, and
    the node's facts hold its whole package list: about 30 ms a node on the controller."""
    raw = hostvars.raw_get(host) if hasattr(hostvars, "raw_get") else hostvars.get(host)
    return raw if isinstance(raw, Mapping) else {}


def refusal(part: Optional[str], host: Optional[str], problems: List[str]) -> str:
    """The message of a refused plan, in the user's terms: the cluster checks (check_cluster and
    cluster, which run on the controller's host) refuse the cluster plan, not a node's."""
    if part in ("check_cluster", "cluster"):
        what = "The cluster plan"
    elif part == "upgrade":
        what = "The upgrade plan"
    else:
        what = f"The plan for node {host or '?'}"
    return f"{what} is refused ({len(problems)} problem(s)):\n- " + "\n- ".join(problems)


# The collection's argument specs and role internals, read once per run: ansible-core's strategy
# imports this plugin in the controller's main process before it forks the worker of each host and
# task, so every worker finds them read. Read in each worker, they were read again for every node
# and check (17 files, about 30 ms), and marked trusted again for every default rendered.
SPECS = load_specs()
# The internals are marked trusted once here (role defaults refer to them, and they are rendered there).
INTERNAL_VARS = {
    role: trusted(load_internal_vars([role])) for role in os.listdir(os.path.join(COLLECTION_ROOT, "roles"))
}


def inject_facts() -> bool:
    """Whether ansible-core also puts facts at the top level (INJECT_FACTS_AS_VARS; the collection's
    ansible.cfg turns it off)."""
    return bool(C.config.get_config_value("INJECT_FACTS_AS_VARS"))


def with_facts(task_vars: Dict[str, Any], facts: Dict[str, Any]) -> Dict[str, Any]:
    """The host's variables as the next task would see them once ``facts`` (a module's ``ansible_facts``)
    are the host's facts: under ``ansible_facts`` without their prefix, and at the top level too while
    INJECT_FACTS_AS_VARS is on (as ansible-core's VariableManager puts them)."""
    out = dict(task_vars)
    out["ansible_facts"] = dict(task_vars.get("ansible_facts") or {}, **namespace_facts(facts)["ansible_facts"])
    if inject_facts():
        out.update({name: value for name, value in facts.items() if name.startswith("ansible_")})
    return out


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(
        (
            "part",
            "roles",
            "nodes",
            "run_nodes",
            "plan_dir",
            "stored_discovery",
            "hosts",
            "cluster_nodes",
            "current",
            "gather_subset",
            "facts",
            "read",
        )
    )

    def _template(self, value: Any) -> Any:
        return self._templar.template(value)

    def _template_default(self, value: Any, known: Dict[str, Any]) -> Any:
        """A spec default such as "{{ inventory_hostname }}" (read from the role's YAML, so trusted here),
        rendered with the variables checked so far taking the place of the roles' defaults."""
        variables = dict(self._internal_vars)  # trusted already (INTERNAL_VARS)
        variables.update(self._task_vars)
        variables.update(known)
        templar = self._templar.copy_with_new_env(available_variables=variables)
        return plain(templar.template(trust_as_template(value)))

    def _values(self, task_vars: Dict[str, Any], names: List[str]) -> Dict[str, Any]:
        out = {}
        for name in names:
            if name in task_vars:
                out[name] = plain(self._template(task_vars[name]))
        return out

    def _check(self, task_vars: Dict[str, Any], entry: str, roles: List[str]) -> Dict[str, Any]:
        specs = SPECS
        if PLAN_ROLE not in specs:
            raise AnsibleActionFail("the plan role's argument specs are missing from the collection")
        self._internal_vars = {}
        for role in roles:
            self._internal_vars.update(INTERNAL_VARS.get(role) or {})
        rules = {
            "node_intent": _intent_rules.NODE_RULES,
            "cluster_intent": _intent_rules.CLUSTER_RULES,
            "upgrade": _intent_rules.UPGRADE_RULES,
        }[entry]
        prefixes = ("gpufabric_", *tuple(f"{role}_" for role in specs))
        wanted = [n for n in task_vars if n.startswith(prefixes) and n not in RUNTIME_NAMES]
        variables = self._values(task_vars, wanted)
        if entry == "cluster_intent" and "gpufabric_instance" not in variables:
            # Every object the collection owns carries the instance; the plan refuses an unusable one.
            variables["gpufabric_instance"] = _k8s_publish.default_instance(
                task_vars.get("ansible_inventory_sources"), task_vars.get("awx_inventory_id")
            )
        given_rules = _intent_rules.NODE_GIVEN_RULES if entry == "node_intent" else ()
        values, problems = _intent.check_scope(
            specs,
            entry,
            roles,
            variables,
            rules,
            self._template_default,
            PLAN_ROLE,
            RUNTIME_NAMES,
            IGNORED_PREFIXES,
            given_rules=given_rules,
        )
        if problems:
            raise _intent.IntentError(problems)
        return values

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        self._task_vars = task_vars
        args = self._task.args
        part = args.get("part")
        read: Optional[Dict[str, Any]] = None
        try:
            if part == "check_node" and args.get("read"):
                read = self._read_node(task_vars, args)
                if read.get("unreachable") or (read.get("failed") and "setup_facts" not in read):
                    return dict(read, changed=False)
                result["ansible_facts"] = read["setup_facts"]
                task_vars = self._task_vars
            elif part == "check_node" and args.get("gather_subset"):
                setup = self._gather(task_vars, args)
                if setup.get("failed") or setup.get("unreachable"):
                    return dict(setup, changed=False)
                result["ansible_facts"] = setup.get("ansible_facts") or {}
                task_vars = self._task_vars
            if part in ("check_node", "check_cluster"):
                entry = "node_intent" if part == "check_node" else "cluster_intent"
                values = self._check(task_vars, entry, list(args.get("roles") or []))
                # Checked above; from here on (the result, the plan and its files) the secrets are masked.
                result["gpufabric_intent"] = _switch_rules.mask_secrets(_intent_storage.mask_secrets(values))
                if part == "check_node":
                    # The package indexes this node's plan reads (read once per run and repository)
                    ansible = plain(task_vars.get("ansible_facts") or {})
                    result["index_reads"] = _index_reads.index_reads(
                        values, ansible, task_vars.get("inventory_hostname")
                    )
                if read is not None:
                    read = self._read_checked(read, values, task_vars)
                    if read.get("failed") or read.get("unreachable"):
                        return dict(read, changed=False)
                    result["ansible_facts"].update(read["ansible_facts"])
            elif part == "cluster":
                result.update(self._cluster(task_vars, args))
            elif part == "upgrade":
                result.update(self._upgrade(task_vars, args))
            else:
                raise AnsibleActionFail("plan: part must be check_node, check_cluster, cluster or upgrade")
        except _upgrade.UpgradeError as exc:
            result["failed"] = True
            result["problems"] = exc.problems
            result["msg"] = f"The upgrade is refused ({len(exc.problems)} problem(s)):\n- " + "\n- ".join(exc.problems)
        except _intent.IntentError as exc:
            result["failed"] = True
            result["problems"] = exc.problems
            result["msg"] = refusal(part, task_vars.get("inventory_hostname"), exc.problems)
        result["changed"] = False
        return result

    def _read_node(self, task_vars: Dict[str, Any], args: Dict[str, Any]) -> Dict[str, Any]:
        """Part check_node with ``read``: setup's facts and the plan's reads of the node in one module
        call (plan_facts with ``gather_subset``), before the check, with plan_facts' arguments rendered
        from the node's variables as they stand (module_utils/plan/node_read.py). Returns plan_facts'
        result with ``setup_facts`` (setup's facts) and ``guessed`` (the arguments it read with); the
        check then sees the setup facts as the node's variables, as after a setup task of its own.

        A value that cannot be rendered before the facts are known, or a read that failed before it
        gathered them (an argument plan_facts refuses: the check names the variable), leaves the
        read to ``_read_checked``, after the check, and gathers with setup alone. Unreachable: as is."""
        guessed = self._unchecked_read_args(task_vars)
        if guessed is not None:
            read = self._execute_module(
                module_name="gpufabric.rollout.plan_facts",
                module_args=dict(
                    guessed,
                    gather_subset=list(args.get("gather_subset") or []),
                    filter=list(args.get("facts") or []),
                ),
                task_vars=task_vars,
            )
            if read.get("unreachable"):
                return read
            if read.get("failed"):
                setup = read.get("setup_facts")
            else:
                setup, reads = _node_read.split_facts(read.get("ansible_facts"))
                read = dict(read, ansible_facts=reads)
            if setup is not None:
                self._see_facts(task_vars, setup)
                return dict(read, setup_facts=setup, guessed=guessed)
        setup = self._gather(task_vars, args)
        if setup.get("failed") or setup.get("unreachable"):
            return setup
        return {"setup_facts": setup.get("ansible_facts") or {}, "guessed": None}

    def _unchecked_read_args(self, task_vars: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """plan_facts' arguments from the node's variables before the check (None when one of them
        cannot be rendered yet, such as a template that reads a fact)."""
        try:
            return _node_read.read_args(self._values(task_vars, list(_node_read.variable_names())))
        except Exception:  # pylint: disable=broad-exception-caught  # the check names what is wrong
            return None

    def _read_checked(self, read: Dict[str, Any], values: Dict[str, Any], task_vars: Dict[str, Any]) -> Dict[str, Any]:
        """The reads of the node with the checked values: those of ``_read_node`` when it read with the
        same arguments, else plan_facts once more with them (its failure as it returns it)."""
        wanted = _node_read.read_args(values)
        if read.get("guessed") == wanted:
            return {k: v for k, v in read.items() if k not in ("setup_facts", "guessed")}
        again = self._execute_module(
            module_name="gpufabric.rollout.plan_facts", module_args=wanted, task_vars=task_vars
        )
        if again.get("failed") or again.get("unreachable"):
            return again
        return dict(again, ansible_facts=_node_read.split_facts(again.get("ansible_facts"))[1])

    def _gather(self, task_vars: Dict[str, Any], args: Dict[str, Any]) -> Dict[str, Any]:
        """setup's facts for part check_node with ``gather_subset`` (only the ``facts`` listed), read in
        this task so that the node costs the controller one task less (a worker, a copy of the host's
        variables, a result). Returned as setup returns them; the check then sees them among the
        node's variables, as it would after a setup task of its own."""
        setup = self._execute_module(
            module_name="ansible.builtin.setup",
            module_args={
                "gather_subset": list(args.get("gather_subset") or []),
                "filter": list(args.get("facts") or []),
            },
            task_vars=task_vars,
        )
        if not (setup.get("failed") or setup.get("unreachable")):
            self._see_facts(task_vars, setup.get("ansible_facts") or {})
        return setup

    def _see_facts(self, task_vars: Dict[str, Any], facts: Dict[str, Any]) -> None:
        """The check's variables and templar from here on: the node's, with setup's ``facts`` as its facts."""
        self._task_vars = with_facts(task_vars, facts)
        self._templar = self._templar.copy_with_new_env(available_variables=self._task_vars)

    def _records(self, task_vars: Dict[str, Any], args: Dict[str, Any], save: bool):
        """Every GPU node's record: this run's (stored when ``save``), else the stored one, else None."""
        hostvars = task_vars.get("hostvars") or {}
        names = list(self._template(args.get("nodes")) or [])
        # The nodes this run can have read (run_nodes: those --limit selects): another node cannot hold
        # this run's plan, and reading its variables costs the controller about a millisecond a node.
        run_nodes = args.get("run_nodes")
        in_run = None if run_nodes is None else set(self._template(run_nodes) or [])
        plan_dir = str(self._template(args.get("plan_dir")))
        use_stored = bool(self._template(args.get("stored_discovery", True)))
        store = _node_records.DiscoveryStore(os.path.join(plan_dir, "discovery"))
        nodes: Dict[str, Dict[str, Any]] = {}
        node_plans: Dict[str, Any] = {}
        for host in names:
            hv = raw_host_vars(hostvars, host) if in_run is None or host in in_run else {}
            node_plan = hv.get("gpufabric_node_plan")
            if node_plan:
                node_plans[host] = plain(node_plan)
                topology = (hv.get("ansible_facts") or {}).get("gpufabric_topology") or {}
                record = _node_records.node_record(node_plans[host], plain(topology))
                if save:
                    store.save(host, record)
                nodes[host] = dict(record, source="this run")
            elif use_stored and store.load(host) is not None:
                nodes[host] = dict(store.load(host), source="stored")
            else:
                nodes[host] = None
        return nodes, node_plans, plan_dir

    def _upgrade(self, task_vars: Dict[str, Any], args: Dict[str, Any]) -> Dict[str, Any]:
        values = dict(plain(task_vars.get("gpufabric_intent") or {}))
        values.update(self._check(task_vars, "upgrade", []))
        nodes, node_plans, _plan_dir = self._records(task_vars, args, save=False)
        missing = sorted(host for host, record in nodes.items() if record is None)
        if missing:
            raise _upgrade.UpgradeError(
                [
                    f"the upgrade needs a plan of every GPU node, but {', '.join(missing)} has none; "
                    "run it without --limit once"
                ]
            )
        cluster_nodes = self._template(args.get("cluster_nodes"))
        current = plain(self._template(args.get("current") or {}))
        hosts = list(node_plans) if args.get("hosts") is None else list(self._template(args.get("hosts")))
        upgrade = _upgrade.plan(
            values,
            nodes,
            None if cluster_nodes is None else plain(cluster_nodes),
            current,
            load_skew_rules(),
            hosts,
        )
        return {"ansible_facts": {"gpufabric_upgrade_plan": upgrade}, "summary": upgrade["summary"]}

    def _cluster(self, task_vars: Dict[str, Any], args: Dict[str, Any]) -> Dict[str, Any]:
        nodes, node_plans, plan_dir = self._records(task_vars, args, save=True)
        values = plain(task_vars.get("gpufabric_intent") or {})
        use_stored = bool(self._template(args.get("stored_discovery", True)))
        cluster = _plan_cluster.plan(
            values, nodes, os.path.join(plan_dir, "discovery"), use_stored, skew_rules=load_skew_rules()
        )
        files = _cluster_summary.write_plan(plan_dir, dict(cluster, node_plans=node_plans))
        # The leaves' review files, which the plan role writes under plan_dir/switches (render_files).
        switch_files = _switch_render.files(cluster["switches"]["leaves"]) if cluster.get("switches") else []
        return {"gpufabric_plan": cluster, "files": files, "summary": cluster["summary"], "switch_files": switch_files}
