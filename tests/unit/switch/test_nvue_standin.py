"""The NVUE stand-in follows the documented revision flow: a revision is created, patched and
applied over HTTPS with basic authentication, its tree is the applied one with the patch merged,
an apply that the switch would refuse ends in apply_fail, unknown paths are 404 and bad credentials
401. Requests here use only the standard library, verifying TLS against the stand-in's CA."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import types
import urllib.error
import urllib.parse
import urllib.request

import pytest
from nvue_standin import PASSWORD, USER, Standin
from support import REPO


@pytest.fixture()
def standin(tmp_path):
    running = Standin(tmp_path / "nvue", applied={"system": {"hostname": "leaf-a"}})
    yield running
    running.stop()


def call(standin, method, path, body=None, user=USER, password=PASSWORD):
    request = urllib.request.Request(
        f"https://{standin.address}/nvue_v1/{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()},
    )
    context = ssl.create_default_context(cafile=standin.ca)
    with urllib.request.urlopen(request, context=context) as answer:
        return json.loads(answer.read())


def status_of(standin, method, path, **kwargs):
    with pytest.raises(urllib.error.HTTPError) as refused:
        call(standin, method, path, **kwargs)
    return refused.value.code


def test_a_revision_is_created_patched_applied_and_reports_applied(standin):
    created = call(standin, "POST", "revision")
    (rev,) = created
    assert rev.startswith(f"changeset/{USER}/") and created[rev]["state"] == "pending"
    quoted = urllib.parse.quote(rev, safe="")
    call(standin, "PATCH", f"?rev={quoted}", {"qos": {"roce": {"enable": "on"}}, "system": {"timezone": "UTC"}})
    # the revision holds the applied tree with the patch merged; nothing is applied yet
    assert call(standin, "GET", f"?rev={quoted}") == {
        "system": {"hostname": "leaf-a", "timezone": "UTC"},
        "qos": {"roce": {"enable": "on"}},
    }
    assert call(standin, "GET", "?rev=applied") == {"system": {"hostname": "leaf-a"}}
    assert (
        call(standin, "PATCH", f"revision/{quoted}", {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})["state"]
        == "apply"
    )
    assert call(standin, "GET", f"revision/{quoted}")["state"] == "apply"  # seen once on its way
    assert call(standin, "GET", f"revision/{quoted}")["state"] == "applied"
    assert call(standin, "GET", "qos/roce?rev=applied") == {"enable": "on"}
    assert standin.applied()["system"] == {"hostname": "leaf-a", "timezone": "UTC"}
    # an applied revision takes no more patches nor a second apply
    assert status_of(standin, "PATCH", f"?rev={quoted}", body={"a": 1}) == 400


def test_an_apply_the_switch_refuses_ends_in_apply_fail_and_changes_nothing(standin):
    (rev,) = call(standin, "POST", "revision")
    quoted = urllib.parse.quote(rev, safe="")
    call(standin, "PATCH", f"?rev={quoted}", {"interface": {"swp1": {"link": {"mtu": 10000}}}})
    answer = call(standin, "PATCH", f"revision/{quoted}", {"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert answer["state"] == "apply_fail"
    assert "swp1 link mtu 10000" in json.dumps(answer["transition"]["issue"])
    assert standin.applied() == {"system": {"hostname": "leaf-a"}}


def test_the_applied_file_is_read_on_every_request(standin):
    standin.set_applied({"qos": {"roce": {"mode": "lossy"}}})
    assert call(standin, "GET", "?rev=applied") == {"qos": {"roce": {"mode": "lossy"}}}


def test_bad_credentials_unknown_paths_and_revisions(standin):
    assert status_of(standin, "GET", "?rev=applied", password="wrong") == 401
    assert status_of(standin, "GET", "?rev=applied", user="admin") == 401
    assert status_of(standin, "GET", "qos/nothing?rev=applied") == 404
    assert status_of(standin, "GET", "revision/changeset%2Fnobody%2Fx") == 404
    assert status_of(standin, "GET", "?rev=changeset%2Fnobody%2Fx") == 404
    assert status_of(standin, "PATCH", "?rev=applied", body={"a": 1}) == 405
    (rev,) = call(standin, "POST", "revision")
    # an apply without the documented body is refused
    assert status_of(standin, "PATCH", "revision/" + urllib.parse.quote(rev, safe=""), body={"state": "x"}) == 400


def test_tls_is_verified_against_the_stand_ins_own_ca(standin, tmp_path):
    other = Standin(tmp_path / "other")
    try:
        request = urllib.request.Request(f"https://{standin.address}/nvue_v1/?rev=applied")
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            urllib.request.urlopen(request, context=ssl.create_default_context(cafile=other.ca))
    finally:
        other.stop()


def test_the_script_starts_as_documented_and_takes_its_password_from_the_environment(tmp_path):
    state = tmp_path / "state"
    script = [sys.executable, str(REPO / "lab" / "nvue" / "standin.py"), "--state-dir", str(state), "--user", USER]
    refused = subprocess.run(
        script, capture_output=True, text=True, env={"PATH": os.environ["PATH"]}, timeout=30, check=False
    )
    assert refused.returncode != 0 and "NVUE_STANDIN_PASSWORD" in refused.stderr
    env = {"PATH": os.environ["PATH"], "NVUE_STANDIN_PASSWORD": PASSWORD}
    with subprocess.Popen(script, stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            line = process.stdout.readline()
            port = (state / "port").read_text()
            assert line.strip() == f"listening on https://127.0.0.1:{port}"
            running = types.SimpleNamespace(address=f"127.0.0.1:{port}", ca=str(state / "ca.pem"))
            assert call(running, "GET", "?rev=applied") == {}
        finally:
            process.terminate()
