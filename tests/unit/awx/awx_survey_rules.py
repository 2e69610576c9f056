"""AWX's own checks of a survey spec and of survey answers, written out as functions.

Source: ansible/awx (release 24.6.1, the one the awx.awx 24.6.1 collection in the pinned
`ansible` package belongs to):

* ``awx/api/views/__init__.py`` ``JobTemplateSurveySpec._validate_spec_data`` -- what
  ``POST /api/v2/job_templates/N/survey_spec/`` accepts (``spec_errors`` below, check by check).
* ``awx/main/constants.py`` ``SURVEY_TYPE_MAPPING`` -- question types and their Python types.
* ``awx/main/models/mixins.py`` ``SurveyJobTemplateMixin._survey_element_validation`` -- what a
  launch accepts as an answer (``answer_errors`` below), also applied to every default before AWX
  sends it as an extra var (``_update_unified_job_kwargs``).
"""

from __future__ import annotations

from typing import Any, List, Mapping

SURVEY_TYPE_MAPPING = {
    "text": (str,),
    "textarea": (str,),
    "password": (str,),
    "multiplechoice": (str,),
    "multiselect": (str,),
    "integer": (int,),
    "float": (float, int),
}


def _choices(question: Mapping[str, Any]) -> List[str]:
    choices = question.get("choices")
    if isinstance(choices, str):
        return [c for c in choices.splitlines() if c.strip()]
    return list(choices or [])


def spec_errors(survey: Any) -> List[str]:
    """The errors AWX's survey_spec endpoint would answer with (it stops at the first; we list all)."""
    errors: List[str] = []
    if not isinstance(survey, Mapping):
        return ["survey spec is not a JSON object"]
    for field, expected in (("name", str), ("description", str), ("spec", list)):
        if field not in survey:
            errors.append(f"Field '{field}' is missing from survey spec.")
        elif not isinstance(survey[field], expected):
            errors.append(f"Expected {expected.__name__} for field '{field}'")
    if isinstance(survey.get("spec"), list) and len(survey["spec"]) < 1:
        errors.append("'spec' doesn't contain any items.")
    if errors:
        return errors
    variables = set()
    for idx, item in enumerate(survey["spec"]):
        if not isinstance(item, Mapping):
            errors.append(f"Survey question {idx} is not a json object.")
            continue
        missing = False
        for field in ("type", "question_name", "variable", "required"):
            if field not in item:
                errors.append(f"'{field}' missing from survey question {idx}")
                missing = True
            elif not isinstance(item[field], bool if field == "required" else str):
                errors.append(f"'{field}' in survey question {idx} has the wrong type")
                missing = True
        if missing:
            continue
        if item["variable"] in variables:
            errors.append(f"'variable' '{item['variable']}' duplicated in survey question {idx}.")
        variables.add(item["variable"])
        qtype = item["type"]
        if qtype not in SURVEY_TYPE_MAPPING:
            errors.append(f"'{qtype}' in survey question {idx} is not an allowed question type")
            continue
        if "default" in item and item["default"] != "" and not isinstance(item["default"], SURVEY_TYPE_MAPPING[qtype]):
            errors.append(f"Default value {item['default']!r} in survey question {idx} has the wrong type")
        for key in ("min", "max"):
            if key in item and item[key] is not None and not isinstance(item[key], int):
                errors.append(f"The {key} limit in survey question {idx} expected to be integer.")
        if qtype in ("multiselect", "multiplechoice"):
            if "choices" not in item:
                errors.append(f"Survey question {idx} of type {qtype} must specify choices.")
                continue
            if "default" in item:
                default = item["default"]
                defaults = [d for d in default.splitlines() if d.strip()] if isinstance(default, str) else default
                if qtype == "multiplechoice" and len(defaults) > 1:
                    errors.append("Multiple Choice (Single Select) can only have one default value.")
                if any(d not in _choices(item) for d in defaults):
                    errors.append("Default choice must be answered from the choices listed.")
        if isinstance(item.get("default"), str) and item["default"].startswith("$encrypted$"):
            errors.append(f"$encrypted$ is a reserved keyword (survey question {idx})")
    return errors


def answer_errors(question: Mapping[str, Any], data: Mapping[str, Any]) -> List[str]:
    """What a launch with these extra vars gets back for this question (empty: accepted)."""
    var = question["variable"]
    qtype = question["type"]
    errors: List[str] = []
    if var not in data:
        return [f"'{var}' value missing"] if question["required"] else []
    value = data[var]
    low, high = question.get("min"), question.get("max")
    if qtype in ("text", "textarea", "password"):
        if not isinstance(value, str):
            return [f"Value {value} for '{var}' expected to be a string."]
        if low not in ("", None) and len(value) < int(low):
            errors.append(f"'{var}' value {value} is too small")
        if high not in ("", None) and len(value) > int(high):
            errors.append(f"'{var}' value {value} is too large")
    elif qtype == "integer":
        if not isinstance(value, int) or isinstance(value, bool):  # AWX: type(value) != int
            return [f"Value {value} for '{var}' expected to be an integer."]
        if low not in ("", None) and value < int(low):
            errors.append(f"'{var}' value {value} is too small")
        if high not in ("", None) and value > int(high):
            errors.append(f"'{var}' value {value} is too large")
    elif qtype == "float":
        if not isinstance(value, (float, int)) or isinstance(value, bool):  # AWX: type() not in (float, int)
            return [f"Value {value} for '{var}' expected to be a numeric type."]
    elif qtype == "multiselect":
        if not isinstance(value, list):
            return [f"'{var}' value is expected to be a list."]
        errors += [
            f"Value {v} for '{var}' expected to be one of {_choices(question)}."
            for v in value
            if v not in _choices(question)
        ]
    elif qtype == "multiplechoice" and value not in _choices(question):
        errors.append(f"Value {value} for '{var}' expected to be one of {_choices(question)}.")
    return errors


def default_is_sent(question: Mapping[str, Any]) -> bool:
    """Whether AWX sends this question's default as an extra var on a launch that leaves it alone."""
    default = question.get("default")
    if default is None:
        return False
    return not answer_errors(question, {question["variable"]: default})


def blank_is_sent(question: Mapping[str, Any]) -> bool:
    """Whether an optional question left blank reaches the playbook (AWX user guide, "Optional
    Survey Questions": a blank text answer is sent as "" unless min > 0; other types are not sent)."""
    if question["type"] in ("text", "textarea", "password"):
        return question.get("min") in (None, "", 0)
    return False
