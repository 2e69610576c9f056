"""dranet, the rail NICs' DRA driver, in the cluster plan (plan/dranet.py): planned in dra mode only,
pinned by its published digests, from a mirror or a local chart when asked; the lab's stand-in chart
renders the planned image and affinity; bad pins and sources are refused naming the variable; a
pulled chart whose manifest digest is not the pinned one is refused (apply/chart_digest.py)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from test_dra_in_plan import cluster_plan
from test_gpu_operator_plan import HELM

from ansible_collections.gpufabric.rollout.plugins.filter.cluster_plan import k8s_chart_digest_refusal
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply.chart_digest import pulled_digest, refusal
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dranet as _plan_dranet
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import PlanError

# Over the lab inventory, whose stand-in chart path is taken off: the pinned release from the registry.
DRA = {
    "gpufabric_k8s_device_allocation": "dra",
    "gpu_operator_components": {"device_plugin": False},
    "network_operator_dranet_chart_path": "",
}
CHART_DIGEST = "sha256:8da67a537eca5cddeaf8148497acc24c4a88215e9370f386f0df91fa958c1fc0"
IMAGE_DIGEST = "sha256:8d452a75f32465ca69aa5a7877f476add8641fe7c91a30ace3343174c1ef695f"
STANDIN = "lab/charts/dranet"


def test_device_plugin_mode_plans_no_dranet(specs):
    _values, plan = cluster_plan(specs)
    assert "dranet" not in plan["network_operator"]


def test_dra_mode_plans_the_pinned_release(specs):
    _values, plan = cluster_plan(specs, DRA)
    dranet = plan["network_operator"]["dranet"]
    assert dranet["driver"] == "dra.net"
    assert dranet["release"] == {
        "name": "dranet",
        "namespace": "dranet",
        "chart_ref": "oci://registry.k8s.io/networking/charts/dranet",
        "chart_version": "v1.4.0",
        "chart_digest": CHART_DIGEST,
        "chart_path": "",
        "chart_plain_http": False,
    }
    values = dranet["chart_values"]
    assert values["image"] == {"repository": "registry.k8s.io/networking/dranet", "tag": f"v1.4.0@{IMAGE_DIGEST}"}
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "gpufabric.io/node-group", "operator": "Exists"}]}]
    assert "imagePullSecrets" not in values
    assert f"oci://registry.k8s.io/networking/charts/dranet:v1.4.0@{CHART_DIGEST} (pinned by digest)" in plan["summary"]


def test_a_mirror_without_tls_is_named_in_the_summary_and_keeps_the_digest(specs):
    changes = dict(
        DRA,
        network_operator_dranet_chart_ref="oci://mirror.example.com/networking/charts/dranet",
        network_operator_dranet_chart_plain_http=True,
    )
    _values, plan = cluster_plan(specs, changes)
    release = plan["network_operator"]["dranet"]["release"]
    assert release["chart_plain_http"] is True and release["chart_digest"] == CHART_DIGEST
    assert (
        f"oci://mirror.example.com/networking/charts/dranet:v1.4.0@{CHART_DIGEST} (pinned by digest, over plain HTTP)"
        in plan["summary"]
    )


def test_an_air_gapped_site_uses_its_mirror_and_local_chart(specs, tmp_path):
    changes = dict(
        DRA,
        network_operator_dranet_image_registry="registry.example.com:5000/mirror/",
        network_operator_dranet_image_pull_secrets=["mirror-pull"],
        network_operator_dranet_chart_path=STANDIN,
        network_operator_dranet_extra_values={"args": {"moveIBInterfaces": False}},
    )
    _values, plan = cluster_plan(specs, changes)
    dranet = plan["network_operator"]["dranet"]
    values = dranet["chart_values"]
    assert values["image"]["repository"] == "registry.example.com:5000/mirror/networking/dranet"
    assert values["image"]["tag"].endswith("@" + IMAGE_DIGEST), "a mirror keeps the digest"
    assert values["imagePullSecrets"] == [{"name": "mirror-pull"}]
    assert values["args"] == {"moveIBInterfaces": False}
    assert dranet["release"]["chart_path"] == STANDIN
    # The stand-in chart renders the planned image, secrets and affinity into the DaemonSet.
    path = tmp_path / "values.json"
    path.write_text(json.dumps(values))
    proc = subprocess.run(
        [str(HELM), "template", "dranet", STANDIN, "-n", "dranet", "-f", str(path)],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(tmp_path / "cache")},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    daemonset = next(o for o in yaml.safe_load_all(proc.stdout) if o and o["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    assert daemonset["metadata"]["name"] == "dranet"
    assert pod["containers"][0]["image"] == (
        f"registry.example.com:5000/mirror/networking/dranet:v1.4.0@{IMAGE_DIGEST}"
    )
    assert pod["imagePullSecrets"] == [{"name": "mirror-pull"}]
    assert pod["affinity"] == values["affinity"]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"network_operator_dranet_chart_digest": "sha256:abc"}, "network_operator_dranet_chart_digest: 'sha256:abc'"),
        ({"network_operator_dranet_image_digest": ""}, "network_operator_dranet_image_digest: '' is not a sha256"),
        (
            {"network_operator_dranet_chart_ref": "https://example.com/charts"},
            "network_operator_dranet_chart_ref: 'https://example.com/charts' is not an OCI chart repository",
        ),
        (
            {"network_operator_dranet_chart_path": "lab/charts/gpu-operator"},
            "holds chart 'gpu-operator', not 'dranet'",
        ),
        (
            {"network_operator_dranet_extra_values": {"image": {"tag": "latest"}}},
            "network_operator_dranet_extra_values.image would override a value the plan sets",
        ),
    ],
)
def test_bad_pins_and_sources_are_refused(changes, message, specs):
    with pytest.raises(PlanError) as refused:
        cluster_plan(specs, dict(DRA, **changes))
    assert any(message in problem for problem in refused.value.problems), refused.value.problems


def test_without_the_install_or_the_role_nothing_is_planned():
    assert _plan_dranet.plan({"gpufabric_k8s_device_allocation": "dra"}, "x/node-group", []) is None
    values = {
        "gpufabric_k8s_device_allocation": "dra",
        "network_operator_chart_version": "26.4.1",
        "network_operator_dranet_install": False,
    }
    assert _plan_dranet.plan(values, "x/node-group", []) is None


PULLED = "Pulled: registry.k8s.io/networking/charts/dranet:v1.4.0\nDigest: {}\n"


def test_the_pulled_digest_is_read_from_helms_output():
    assert pulled_digest(PULLED.format(CHART_DIGEST)) == CHART_DIGEST
    assert pulled_digest("Pulled: x\n") is None
    assert pulled_digest("Digest: sha256:short\n") is None


def test_a_chart_is_refused_unless_it_is_the_pinned_one():
    ref, var = "oci://registry.k8s.io/networking/charts/dranet", "network_operator_dranet_chart_digest"
    assert refusal(PULLED.format(CHART_DIGEST), CHART_DIGEST, ref, "v1.4.0", var) == ""
    other = "sha256:" + "0" * 64
    message = refusal(PULLED.format(other), CHART_DIGEST, ref, "v1.4.0", var)
    assert message.startswith(f"{ref}:v1.4.0 has manifest digest {other}, but {var} pins {CHART_DIGEST}")
    assert "nothing was installed" in message
    assert "reported no manifest digest" in refusal("", CHART_DIGEST, ref, "v1.4.0", var)
    # The filter reads kubernetes.core.helm_pull's stdout and stderr.
    pull = {"stdout": "", "stderr": PULLED.format(CHART_DIGEST)}
    assert k8s_chart_digest_refusal(pull, CHART_DIGEST, ref, "v1.4.0", var) == ""
    assert k8s_chart_digest_refusal({"stdout": PULLED.format(other)}, CHART_DIGEST, ref, "v1.4.0", var) != ""
