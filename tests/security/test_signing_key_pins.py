"""Finding 5: every repository's signing key was downloaded from the repository's own host on each run
and installed as apt's signed-by keyring, whatever key it was. Whoever controls that host (or the path to
it) serves their own key beside their own packages, and root installs them as signed.

Now the roles install a key through the signing_key module, which reads the fingerprint of every primary
key in the file and installs it only when each one is pinned (the inventory's list, or the collection's
pin of NVIDIA's CUDA key). The attacker's key is refused and nothing is written. The fingerprints are
checked against gpg's own (``gpg --with-colons``), on keys gpg makes here (gpg is one of the lab's tools).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from module_support import run_module

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import signing_key as _key
from ansible_collections.gpufabric.rollout.plugins.modules import signing_key

REPO = Path(__file__).resolve().parents[2]
ROLES = REPO / "roles"


def _gpg(home: Path, *argv: str) -> str:
    batch = ["--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""]
    return subprocess.run(
        ["gpg", "--homedir", str(home), *batch, *argv], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Two keys made by gpg (the vendor's and the attacker's): armored and binary files, gpg's fingerprints."""
    if shutil.which("gpg") is None:
        pytest.fail("gpg is not installed: make tools installs it (mk/repo.mk)")
    out = {}
    for name, algo in (("vendor", "ed25519"), ("attacker", "rsa2048")):
        home = tmp_path_factory.mktemp(f"gnupg-{name}")
        os.chmod(home, 0o700)
        _gpg(home, "--quick-generate-key", f"{name} <{name}@example.invalid>", algo, "sign", "30d")
        fpr = next(
            line.split(":")[9]
            for line in _gpg(home, "--with-colons", "--list-keys").splitlines()
            if line.startswith("fpr:")
        )
        armored = home / "key.asc"
        binary = home / "key.gpg"
        _gpg(home, "--armor", "--export", "-o", str(armored))
        _gpg(home, "--export", "-o", str(binary))
        _gpg(home, "--export-secret-keys", "-o", str(home / "secret.gpg"))
        out[name] = {"fpr": fpr, "asc": armored, "gpg": binary, "secret": home / "secret.gpg"}
    return out


def test_fingerprints_are_gpgs_for_armored_and_binary_keys(keys):
    for key in keys.values():
        assert _key.primary_fingerprints(key["asc"].read_bytes()) == [key["fpr"]]
        assert _key.primary_fingerprints(key["gpg"].read_bytes()) == [key["fpr"]]


def test_a_file_with_an_extra_key_is_refused_even_beside_the_pinned_one(keys):
    both = keys["vendor"]["gpg"].read_bytes() + keys["attacker"]["gpg"].read_bytes()
    found, bad = _key.unpinned(both, [keys["vendor"]["fpr"]])
    assert found == [keys["vendor"]["fpr"], keys["attacker"]["fpr"]] and bad == [keys["attacker"]["fpr"]]


def test_an_altered_armored_key_is_refused(keys):
    text = keys["vendor"]["asc"].read_text().splitlines()
    body = [i for i, line in enumerate(text) if line and ":" not in line and not line.startswith(("-", "="))]
    line = text[body[1]]
    text[body[1]] = ("B" if line[0] != "B" else "C") + line[1:]
    with pytest.raises(_key.SigningKeyError, match="checksum"):
        _key.primary_fingerprints("\n".join(text).encode())


@pytest.mark.parametrize(
    "data, message",
    [
        (b"<html>not found</html>", "not an OpenPGP packet"),
        (b"-----BEGIN PGP MESSAGE-----\n\nAAAA\n-----END PGP MESSAGE-----\n", "another kind"),
        (b"", "no public key"),
        (b"\xc6\x05\x05abcd", "version 5"),
        (b"\x99\x00\x10abc", "cut short"),
    ],
)
def test_what_is_not_a_version_4_public_key_is_refused(data, message):
    with pytest.raises(_key.SigningKeyError, match=message):
        _key.primary_fingerprints(data)


def test_a_secret_key_is_refused(keys):
    with pytest.raises(_key.SigningKeyError, match="secret key"):
        _key.primary_fingerprints(keys["vendor"]["secret"].read_bytes())


@pytest.mark.parametrize(
    "value", ["EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC", "0xeb693b3035cd5710e231e123a4b469963bf863cc"]
)
def test_fingerprints_are_accepted_as_gpg_prints_them(value):
    assert _key.pins([value]) == ["EB693B3035CD5710E231E123A4B469963BF863CC"]


def test_a_short_key_id_is_not_a_pin():
    with pytest.raises(_key.SigningKeyError, match="40-hex-digit"):
        _key.pins(["A4B469963BF863CC"])


def test_the_cuda_pin_is_the_collections_when_none_is_given():
    assert _key.pins([], "cuda") == ["EB693B3035CD5710E231E123A4B469963BF863CC"]
    assert _key.pins([], "") == []


def _module(tmp_path, url, fingerprints, monkeypatch, capsys, check=False):
    dest = tmp_path / "keyrings" / "repo.asc"
    dest.parent.mkdir(exist_ok=True)
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    group = subprocess.run(["id", "-gn"], capture_output=True, text=True, check=True).stdout.strip()
    args = {
        "url": url,
        "dest": str(dest),
        "fingerprints": fingerprints,
        "variable": "doca_ofed_gpg_key_fingerprints",
        "owner": user,
        "group": group,
        "_ansible_check_mode": check,
    }
    rc, result = run_module(signing_key, args, monkeypatch, capsys)
    return rc, result, dest


def test_the_module_refuses_the_attackers_key_and_writes_nothing(keys, tmp_path, monkeypatch, capsys):
    url = keys["attacker"]["asc"].as_uri()
    rc, result, dest = _module(tmp_path, url, [keys["vendor"]["fpr"]], monkeypatch, capsys)
    assert rc == 1 and not dest.exists()
    assert keys["attacker"]["fpr"] in result["msg"] and "doca_ofed_gpg_key_fingerprints" in result["msg"]
    assert list(dest.parent.iterdir()) == [], "no temporary file is left behind"


def test_the_module_installs_the_pinned_key_once(keys, tmp_path, monkeypatch, capsys):
    url = keys["vendor"]["asc"].as_uri()
    rc, result, dest = _module(tmp_path, url, [keys["vendor"]["fpr"]], monkeypatch, capsys, check=True)
    assert (rc, result["changed"], dest.exists()) == (0, True, False)
    rc, result, dest = _module(tmp_path, url, [keys["vendor"]["fpr"]], monkeypatch, capsys)
    assert (rc, result["changed"]) == (0, True)
    assert dest.read_bytes() == keys["vendor"]["asc"].read_bytes() and oct(dest.stat().st_mode & 0o777) == "0o644"
    rc, result, dest = _module(tmp_path, url, [keys["vendor"]["fpr"]], monkeypatch, capsys)
    assert (rc, result["changed"]) == (0, False)


def test_the_module_replaces_a_planted_key_only_with_the_pinned_one(keys, tmp_path, monkeypatch, capsys):
    dest = tmp_path / "keyrings" / "repo.asc"
    dest.parent.mkdir()
    dest.write_bytes(keys["attacker"]["asc"].read_bytes())
    rc, result, dest = _module(tmp_path, keys["vendor"]["asc"].as_uri(), [keys["vendor"]["fpr"]], monkeypatch, capsys)
    assert rc == 0 and result["changed"] and dest.read_bytes() == keys["vendor"]["asc"].read_bytes()


def _tasks_installing_keys():
    """Every task of the roles that installs a repository's key (apt keyrings, rpm keys)."""
    found = []
    for path in sorted(ROLES.glob("*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            for block in [task, *(task.get("block") or [])]:
                text = yaml.safe_dump(block)
                if "key_url" in text or ("keyring" in text.lower() and "url" in text):
                    found.append((f"{path.relative_to(REPO)}: {block.get('name')}", block))
    return found


def test_no_role_installs_a_repository_key_without_a_pin():
    """The roles' key downloads: none by get_url (no pin), each by signing_key or rpm_key with fingerprints."""
    tasks = _tasks_installing_keys()
    assert len(tasks) >= 5, tasks
    for name, task in tasks:
        assert "ansible.builtin.get_url" not in task, f"{name} downloads a repository key without a pin"
        if "gpufabric.rollout.signing_key" in task:
            args = task["gpufabric.rollout.signing_key"]
            assert "fingerprints" in args and args.get("variable"), name
        elif "ansible.builtin.rpm_key" in task:
            assert task["ansible.builtin.rpm_key"].get("fingerprint"), f"{name} imports an rpm key without a pin"


def test_an_armored_key_with_crlf_line_ends_reads_the_same(keys):
    data = keys["vendor"]["asc"].read_bytes().replace(b"\n", b"\r\n")
    assert _key.primary_fingerprints(data) == [keys["vendor"]["fpr"]]


def test_a_client_repository_without_a_pin_is_refused_by_the_plan():
    """The Lustre and Storage Scale repositories have no collection pin: the plan refuses them unpinned."""
    from storage_support import PLAN, lab_variables, node_facts

    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node

    specs = PLAN.load_specs(str(REPO))
    for backend in ("lustre", "gpfs"):
        values, problems = PLAN.check(
            specs, "node", lab_variables(**{f"storage_client_{backend}_repo_key_fingerprints": []})
        )
        assert problems == []
        with pytest.raises(_plan_node.PlanError, match=f"storage_client_{backend}_repo_key_fingerprints: is empty"):
            _plan_node.plan_node(values, node_facts(1))
    values, problems = PLAN.check(specs, "node", lab_variables())
    assert problems == [] and _plan_node.plan_node(values, node_facts(1))["storage_client"]


def test_a_symlink_planted_at_the_keyring_is_replaced_not_written_through(keys, tmp_path, monkeypatch, capsys):
    target = tmp_path / "elsewhere"
    target.write_bytes(b"not a key")
    dest = tmp_path / "keyrings" / "repo.asc"
    dest.parent.mkdir()
    dest.symlink_to(target)
    rc, result, dest = _module(tmp_path, keys["vendor"]["asc"].as_uri(), [keys["vendor"]["fpr"]], monkeypatch, capsys)
    assert rc == 0 and result["changed"] and not dest.is_symlink()
    assert dest.read_bytes() == keys["vendor"]["asc"].read_bytes() and target.read_bytes() == b"not a key"
