# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX / Automation Controller objects as data: surveys from role argument specs (workflow graphs:
``plan.awx_workflow``).

Pure functions, no Ansible imports: used by the ``gpufabric.rollout.awx_survey`` filter (which
``playbooks/awx.yml`` feeds with the roles' ``meta/argument_specs.yml``) and unit-tested
directly, so the forms in AWX are generated from the code and never drift from it.

What AWX does with a survey decides the mapping (AWX source, ansible/awx):

* ``awx/api/views/__init__.py`` ``JobTemplateSurveySpec._validate_spec_data``: a survey is
  ``{name: str, description: str, spec: [non-empty list]}``; every question has ``type``,
  ``question_name``, ``variable`` (strings) and ``required`` (bool); variables are unique; a
  non-empty ``default`` has the Python type of its question type (``awx/main/constants.py``
  ``SURVEY_TYPE_MAPPING``: str for text, textarea, password, multiplechoice and multiselect,
  int for integer, int or float for float); ``min``/``max`` are integers or null; choice
  questions list their ``choices`` and a default must be one of them (one for multiplechoice).
* ``awx/main/models/mixins.py`` ``SurveyJobTemplateMixin``: answers become **extra vars**, the
  highest variable precedence, and every question that has a ``default`` sends it on every
  launch (``_update_unified_job_kwargs``), so a pre-filled default silently overrides the
  inventory. Answers are typed only as the question type allows: text and choices are strings,
  multiselect a list of strings, integer an int.
* AWX user guide, "Optional Survey Questions" (``docs/docsite/rst/userguide/job_templates.rst``):
  an optional text question left blank is not sent when its ``min`` length is above 0; an
  optional non-text question left blank is not sent.

Hence, by default (``defaults='describe'``), questions carry no ``default``: the role default is
written in the question's description, an unanswered question sends nothing, and the inventory
and role defaults apply as in ``ansible-playbook``. ``defaults='prefill'`` pre-fills the role
defaults that are plain values (for teams that keep no inventory values for these variables); a
multiselect default only pre-fills the form (AWX stores it as text and sends only list answers).

Only allow-listed variables are asked (``allow``, the list ``playbooks/vars/awx_stages.yml``
keeps as ``gpufabric_awx_survey_allow``): survey answers are extra vars that a user with only
Execute on the job template sets, and they reach root on every node. Whatever could redirect what
runs as root or what the cluster trusts is never asked, whatever the allow-list says (``NEVER_ASKED``:
URLs, keys, certificates, binaries and interpreters, images and registries, chart sources, paths,
namespaces, TLS and signature checks, the reload/reboot/restart flags, ``no_log`` and ``path``
options); an allow-list naming one of them is refused.

What cannot be a question, and is listed in ``skipped`` with the reason: mappings (``dict``),
lists of free values or of mappings, and types AWX has no answer for. A YAML text for them
would reach the role as a string, not as the structure the role reads. They belong in the
inventory (group_vars), where the collection keeps intent anyway.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.words import got_words

QUESTION_TYPES = ("text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect")
DEFAULT_MODES = ("describe", "prefill")
BOOL_CHOICES = ["true", "false"]
_TEXT_TYPES = ("str", "path", "raw")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Ansible documentation markup (C(), O(), V(), M(), I(), B(), U(), E(), P(), RV(), L(text,url)).
_MARKUP_LINK = re.compile(r"\bL\(([^,()]+),\s*([^()]+)\)")
_MARKUP = re.compile(r"\b(?:C|O|V|M|I|B|U|E|P|RV)\(([^()]*)\)")


# Name patterns of variables no survey may ask, with the reason shown in ``skipped``. Searched, not
# matched: a pattern anywhere in the name is enough.
NEVER_ASKED = (
    (r"_url$|_urls$", "a URL: it points root at a download, repository or chart of the user's choice"),
    (r"(^|_)(gpg_)?keys?(_|$)|cert", "a key or certificate: it decides what the nodes trust"),
    (r"gpg_check|validate_certs", "a signature or TLS check: turning it off trusts anything served"),
    (r"allow_(reload|reboot|restart)", "a reload/reboot/restart permission: an operator's decision per change"),
    (r"_binary$|_python$|_tool$|gdscheck$|nvidia_smi$", "a program run on the node or the controller"),
    (r"image|registry", "an image or registry: it decides what runs in the cluster"),
    (r"chart_(repo|path|name)|_repo(_|$)", "a package or chart source"),
    (r"(_path|_dir|_subdir|_file|_src|sysroot)$", "a path on the node or the controller"),
    (r"namespace|kubeconfig", "it decides which cluster objects are changed"),
    (
        r"(^|_)instance$",
        "the deployment's identity: pruning selects on it, so another value reaches a neighbour's objects",
    ),
    (r"sha256|checksum|insecure|acknowledged", "a checksum or an acknowledged risk: it decides what the nodes trust"),
)
_NEVER_ASKED = tuple((re.compile(pattern), reason) for pattern, reason in NEVER_ASKED)
NOT_ALLOWED = "not on the survey allow-list (gpufabric_awx_survey_allow); set it in the inventory"


def never_asked(name: str, option: Optional[Mapping[str, Any]] = None) -> Optional[str]:
    """Why ``name`` may never be a survey question, or None when it may be allow-listed."""
    for pattern, reason in _NEVER_ASKED:
        if pattern.search(name):
            return reason
    option = option or {}
    if option.get("type") == "path" or option.get("elements") == "path":
        return "a path on the node or the controller"
    if option.get("no_log"):
        return "a secret (no_log): it belongs in a credential"
    return None


def _allowed(allow: Any) -> List[str]:
    if allow is None:
        raise SurveyError("allow: give the list of variables the survey may ask (gpufabric_awx_survey_allow)")
    if isinstance(allow, str) or not isinstance(allow, (list, tuple, set)):
        raise SurveyError(f"allow: must be a list (- item) of variable names, got {got_words(allow)}")
    names = [str(a) for a in allow]
    refused = [f"{n} ({never_asked(n)})" for n in names if never_asked(n)]
    if refused:
        raise SurveyError("allow: these variables may never be asked in a survey: " + "; ".join(refused))
    return names


class SurveyError(ValueError):
    """The argument specs cannot give a valid survey; the message names the variable and source."""


def plain_text(description: Any) -> str:
    """An argument spec description (string or list of strings) as one line of plain text."""
    if description is None:
        return ""
    if isinstance(description, (list, tuple)):
        text = " ".join(str(part).strip() for part in description if str(part).strip())
    else:
        text = str(description).strip()
    text = _MARKUP_LINK.sub(lambda m: f"{m.group(1).strip()} ({m.group(2).strip()})", text)
    text = _MARKUP.sub(lambda m: m.group(1), text)
    return re.sub(r"\s+", " ", text)


def _is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _bool_text(value: Any) -> str:
    return "true" if value else "false"


def _default_text(option: Mapping[str, Any]) -> Optional[str]:
    """How the role default reads in a question description, or None when there is none."""
    if "default" not in option or option["default"] is None:
        return None
    value = option["default"]
    if _is_template(value):
        return "computed by the role"
    if isinstance(value, bool):
        return _bool_text(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else "none (empty list)"
    if value == "":
        return "empty"
    return str(value)


class _Question:
    """One option's question, or the reason it cannot be one."""

    def __init__(self, name: str, option: Mapping[str, Any]) -> None:
        self.name = name
        self.option = option
        self.kind = str(option.get("type") or "str")
        self.choices = option.get("choices")
        self.notes: List[str] = []
        self.skip_reason: Optional[str] = None
        self.question: Dict[str, Any] = {}

    def build(self, mode: str) -> None:
        option = self.option
        kind = self.kind
        question: Dict[str, Any] = {"variable": self.name, "required": bool(option.get("required", False))}
        choices = self.choices
        if kind == "bool":
            question.update(type="multiplechoice", choices=list(BOOL_CHOICES))
        elif kind in _TEXT_TYPES and choices:
            question.update(type="multiplechoice", choices=self._string_choices(choices))
        elif kind in _TEXT_TYPES:
            qtype = "password" if option.get("no_log") else "text"
            # A blank optional text answer is sent as "" unless min > 0; min 1 keeps it unsent.
            question.update(type=qtype, min=1)
            if kind == "raw":
                self.notes.append("Answered as a string.")
        elif kind == "int":
            question["type"] = "integer"
            if choices:
                ints = [c for c in choices if isinstance(c, int) and not isinstance(c, bool)]
                if len(ints) != len(choices):
                    self.skip_reason = f"int option with non-integer choices {list(choices)!r}"
                    return
                question.update(min=min(ints), max=max(ints))
                self.notes.append("Allowed: " + ", ".join(str(c) for c in ints) + ".")
        elif kind == "float":
            question["type"] = "float"
        elif kind == "list":
            elements = str(option.get("elements") or "str")
            if elements in ("str", "path") and choices:
                question.update(type="multiselect", choices=self._string_choices(choices))
            else:
                self.skip_reason = (
                    f"list of {elements} without choices: AWX sends a text answer as one string, not a list;"
                    " set it in the inventory"
                )
                return
        elif kind == "dict":
            self.skip_reason = "mapping: AWX sends survey answers as strings, not mappings; set it in the inventory"
            return
        else:
            self.skip_reason = f"type {kind!r} has no AWX survey question type"
            return
        self.question = question
        self._set_default(mode)

    def _string_choices(self, choices: Iterable[Any]) -> List[str]:
        out = []
        for choice in choices:
            if choice is None or choice == "":
                self.notes.append("The empty value is not offered here; set it in the inventory.")
                continue
            out.append(str(choice))
        return out

    def _set_default(self, mode: str) -> None:
        option, question = self.option, self.question
        shown = _default_text(option)
        if shown is not None:
            self.notes.append(f"Role default: {shown}.")
        if not question["required"]:
            self.notes.append("Leave unanswered to keep the inventory value or the role default.")
        if mode != "prefill" or "default" not in option:
            return
        value = option["default"]
        if value is None or _is_template(value) or value == "" or value == []:
            return
        qtype = question["type"]
        if qtype == "multiplechoice":
            text = _bool_text(value) if isinstance(value, bool) else str(value)
            if text in question["choices"]:
                question["default"] = text
        elif qtype == "multiselect":
            picked = [str(v) for v in value if str(v) in question["choices"]]
            if picked:
                question["default"] = "\n".join(picked)
        elif qtype in ("integer", "float") and isinstance(value, (int, float)) and not isinstance(value, bool):
            if qtype == "float" or isinstance(value, int):
                question["default"] = value
        elif qtype in ("text", "password") and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            question["default"] = str(value)

    def finish(self, source: str) -> Dict[str, Any]:
        parts = [plain_text(self.option.get("description")), *self.notes, f"({source})"]
        return {
            "question_name": self.name,
            "question_description": " ".join(p for p in parts if p),
            **self.question,
        }


def _signature(option: Mapping[str, Any]) -> Tuple[Any, ...]:
    choices = option.get("choices")
    return (
        str(option.get("type") or "str"),
        str(option.get("elements") or ""),
        tuple(str(c) for c in choices) if choices else (),
    )


def _exclusions(exclude: Any) -> Dict[str, str]:
    if not exclude:
        return {}
    if isinstance(exclude, Mapping):
        return {str(k): str(v) for k, v in exclude.items()}
    if isinstance(exclude, (list, tuple, set)):
        return {str(k): "excluded from this survey" for k in exclude}
    raise SurveyError(
        f"exclude: must be a mapping (key: value) of variable to reason or a list (- item), got {got_words(exclude)}"
    )


def survey(
    sources: Sequence[Mapping[str, Any]],
    name: str,
    description: str = "",
    exclude: Any = None,
    defaults: str = "describe",
    allow: Any = None,
) -> Dict[str, Any]:
    """Build an AWX survey from argument spec entry points.

    ``sources`` is a list of ``{"source": label, "argument_spec": entry_point}`` where the entry
    point is a role's ``argument_specs.<entry>`` mapping (``options``, ``short_description``).
    Questions follow the sources' order; a variable several sources declare (collection-wide
    intent such as ``gpufabric_k8s_mode``) is asked once, and must have the same type and choices
    everywhere. ``exclude`` maps variables to the reason they are not asked (for example a value
    a credential injects). ``allow`` lists the variables that may be asked (required); every other
    option is skipped, and an allow-listed variable that matches ``NEVER_ASKED`` (or is a ``path``
    or ``no_log`` option) is refused with the reason.

    Returns ``{"survey_spec": ..., "enabled": bool, "skipped": [{variable, source, reason}]}``;
    ``survey_spec`` is ``{}`` and ``enabled`` false when no option can be a question (AWX refuses a
    survey without questions).
    """
    if defaults not in DEFAULT_MODES:
        raise SurveyError(f"defaults: '{defaults}' is not one of {', '.join(DEFAULT_MODES)}")
    if not isinstance(name, str) or not name.strip():
        raise SurveyError("name: a survey needs a non-empty name")
    excluded = _exclusions(exclude)
    allowed = set(_allowed(allow))
    questions: List[Dict[str, Any]] = []
    skipped: List[Dict[str, str]] = []
    seen: Dict[str, Tuple[str, Tuple[Any, ...]]] = {}
    for index, item in enumerate(sources or []):
        if not isinstance(item, Mapping) or "argument_spec" not in item:
            raise SurveyError(f"sources[{index}]: expected a mapping with 'source' and 'argument_spec'")
        source = str(item.get("source") or f"source {index}")
        entry = item["argument_spec"] or {}
        if not isinstance(entry, Mapping):
            raise SurveyError(f"{source}: the argument spec entry point is not a mapping")
        options = entry.get("options") or {}
        if not isinstance(options, Mapping):
            raise SurveyError(f"{source}: 'options' is not a mapping")
        for var, option in options.items():
            var = str(var)
            if not isinstance(option, Mapping):
                raise SurveyError(f"{source}: option {var} is not a mapping")
            if not _IDENTIFIER.match(var):
                raise SurveyError(f"{source}: option {var!r} is not a valid variable name")
            signature = _signature(option)
            if var in seen:
                first_source, first_signature = seen[var]
                if first_signature != signature:
                    raise SurveyError(
                        f"{var}: {first_source} and {source} declare it differently"
                        f" (type, elements, choices {first_signature} vs {signature})"
                    )
                continue
            seen[var] = (source, signature)
            if var in excluded:
                skipped.append({"variable": var, "source": source, "reason": excluded[var]})
                continue
            if var not in allowed:
                skipped.append({"variable": var, "source": source, "reason": NOT_ALLOWED})
                continue
            refused = never_asked(var, option)
            if refused:
                raise SurveyError(f"{var} ({source}): allow-listed, but it may never be asked: {refused}")
            question = _Question(var, option)
            question.build(defaults)
            if question.skip_reason:
                skipped.append({"variable": var, "source": source, "reason": question.skip_reason})
                continue
            questions.append(question.finish(source))
    if not questions:
        return {"survey_spec": {}, "enabled": False, "skipped": skipped}
    spec = {"name": name, "description": description or "", "spec": questions}
    return {"survey_spec": spec, "enabled": True, "skipped": skipped}


def role_sources(
    argument_specs: Mapping[str, Any], roles: Sequence[str], entry_point: str = "main"
) -> List[Dict[str, Any]]:
    """Sources for :func:`survey` from ``{role: parsed meta/argument_specs.yml}``.

    A role may be named ``role:entry_point`` to take another entry point than ``entry_point``
    (the plan role's ``node_intent`` and ``cluster_intent`` hold the collection-wide variables).
    """
    sources = []
    for item in roles or []:
        role, _sep, entry_name = str(item).partition(":")
        entry_name = entry_name or entry_point
        if role not in (argument_specs or {}):
            raise SurveyError(f"role {role}: no argument specs were given for it")
        document = argument_specs[role] or {}
        entry = (document.get("argument_specs") or {}).get(entry_name)
        if entry is None:
            raise SurveyError(f"role {role}: meta/argument_specs.yml has no '{entry_name}' entry point")
        source = f"role {role}" if entry_name == "main" else f"role {role} ({entry_name})"
        sources.append({"source": source, "argument_spec": entry})
    return sources
