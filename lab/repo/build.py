#!/usr/bin/env python
"""Build the lab's local apt repositories of stand-in packages (lab/repo/packages.yml).

Usage: lab/repo/build.py [--out DIR] [--cache DIR] [--force]

Writes flat, signed apt repositories (Packages, Packages.gz, Release, InRelease, Release.gpg)
under DIR (default .lab/repo). The signing key is a throwaway ed25519 key made once and kept
(in CACHE/gnupg, else .lab/repo-gnupg), so a rebuild does not invalidate nodes that trust it;
a key within 30 days of its 90-day expiry is replaced. Its public half is exported to the paths
listed under `keys:`, so a role's GPG-key step installs a real key and apt verifies real
signatures.

The build's key is a digest of its inputs (this script, packages.yml, lab/repo/files/, the
files packages.yml names, the running kernel) and the signing key's fingerprint. With --cache
(make repo passes the lab cache, once per machine), a build is kept under CACHE/<key> and later
checkouts copy it instead of building; without, DIR is rebuilt only when the key changes.
Needs: dpkg-deb, gpg.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from email.utils import formatdate
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
FILES = HERE / "files"
CONTROL_ORDER = (
    "Package",
    "Version",
    "Architecture",
    "Maintainer",
    "Depends",
    "Section",
    "Priority",
    "Installed-Size",
    "Description",
)
_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


def log(msg: str) -> None:
    print("[repo] " + msg, file=sys.stderr)


def referenced_sources(node) -> list:
    """Every file packages.yml names with ``source:``, wherever it lives (some are test fixtures)."""
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("source"), str):
            found.append((FILES / node["source"]).resolve())
        for value in node.values():
            found.extend(referenced_sources(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(referenced_sources(value))
    return found


def inputs_digest(kernel: str) -> str:
    digest = hashlib.sha256()
    spec = yaml.safe_load((HERE / "packages.yml").read_text())
    inputs = {Path(__file__).resolve(), HERE / "packages.yml", *FILES.rglob("*"), *referenced_sources(spec)}
    for path in sorted(inputs):
        if path.is_file():
            digest.update(str(os.path.relpath(path, HERE)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(kernel.encode())
    return digest.hexdigest()


def expand(value, variables):
    """Replace {name} placeholders in every string of a nested structure."""
    if isinstance(value, str):

        def repl(match):
            if match.group(1) not in variables:
                raise SystemExit(f"packages.yml: unknown placeholder {{{match.group(1)}}} in {value!r}")
            return str(variables[match.group(1)])

        return _PLACEHOLDER.sub(repl, value)
    if isinstance(value, list):
        return [expand(item, variables) for item in value]
    if isinstance(value, dict):
        return {expand(k, variables): expand(v, variables) for k, v in value.items()}
    return value


def repo_packages(spec, sets, base_vars):
    packages = [expand(p, base_vars) for p in spec.get("packages") or []]
    for include in spec.get("include") or []:
        variables = dict(base_vars)
        variables.update(include.get("vars") or {})
        packages.extend(expand(p, variables) for p in sets[include["set"]])
    return packages


def build_deb(pkg, workdir: Path, outdir: Path) -> Path:
    name, version = pkg["name"], str(pkg["version"])
    arch = pkg.get("architecture", "all")
    root = workdir / (f"{name}_{version}")
    (root / "DEBIAN").mkdir(parents=True)
    subst = pkg.get("subst") or {}

    def render(text: str) -> str:
        for token, value in subst.items():
            text = text.replace(f"@{token}@", str(value))
        return text

    for dest, item in (pkg.get("files") or {}).items():
        target = root / dest.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        text = item["content"] if "content" in item else (FILES / item["source"]).read_text()
        target.write_text(render(text))
        target.chmod(int(str(item.get("mode", "0644")), 8))
    doc = root / "usr/share/doc" / name
    doc.mkdir(parents=True, exist_ok=True)
    (doc / "LAB-STAND-IN").write_text(
        f"{name} {version} is a gpufabric lab stand-in: it carries the real package name and version and a few\n"
        "files that imitate what the real package provides; see lab/repo/README.md.\n"
    )
    for script, source in (pkg.get("scripts") or {}).items():
        target = root / "DEBIAN" / script
        target.write_text(render((FILES / source).read_text()))
        target.chmod(0o755)
    size_kib = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) // 1024 + 1
    fields = {
        "Package": name,
        "Version": version,
        "Architecture": arch,
        "Maintainer": "gpufabric lab <lab@gpufabric.invalid>",
        "Section": "lab",
        "Priority": "optional",
        "Installed-Size": str(size_kib),
        "Description": "{}\n LAB STAND-IN: {} (gpufabric lab).".format(pkg.get("description", name), name),
    }
    if pkg.get("depends"):
        fields["Depends"] = ", ".join(pkg["depends"])
    control = "".join(f"{key}: {fields[key]}\n" for key in CONTROL_ORDER if key in fields)
    (root / "DEBIAN" / "control").write_text(control)
    deb = outdir / ("{}_{}_{}.deb".format(name, version.rsplit(":", maxsplit=1)[-1], arch))
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    return deb


def index_entry(deb: Path, repo_dir: Path) -> str:
    control = subprocess.run(["dpkg-deb", "-f", str(deb)], check=True, capture_output=True, text=True).stdout
    data = deb.read_bytes()
    return (
        control.rstrip("\n")
        + f"\nFilename: ./{deb.relative_to(repo_dir)}\nSize: {len(data)}\n"
        + f"MD5sum: {hashlib.md5(data).hexdigest()}\nSHA256: {hashlib.sha256(data).hexdigest()}\n"
    )


def write_release(repo_dir: Path, label: str, gpg) -> None:
    entries = []
    for name in ("Packages", "Packages.gz"):
        data = (repo_dir / name).read_bytes()
        entries.append((name, len(data), hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()))
    lines = [
        "Origin: gpufabric-lab",
        f"Label: {label}",
        "Architectures: amd64 all",
        f"Date: {formatdate(time.time(), usegmt=True)}",
        "MD5Sum:",
        *(f" {md5} {size:16d} {name}" for name, size, md5, _sha in entries),
        "SHA256:",
        *(f" {sha} {size:16d} {name}" for name, size, _md5, sha in entries),
    ]
    (repo_dir / "Release").write_text("\n".join(lines) + "\n")
    gpg("--clearsign", "-o", str(repo_dir / "InRelease"), str(repo_dir / "Release"))
    gpg("--detach-sign", "--armor", "-o", str(repo_dir / "Release.gpg"), str(repo_dir / "Release"))


KEY_DAYS = 90
KEY_RENEW_DAYS = 30


class Gpg:
    """gpg in batch mode with its own home directory."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def __call__(self, *argv: str, capture: bool = False) -> str:
        batch = ["--batch", "--yes", "--pinentry-mode", "loopback", "--passphrase", ""]
        result = subprocess.run(
            ["gpg", "--homedir", str(self.home), *batch, *argv],
            check=True,
            stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        return result.stdout or ""

    def signing_key(self) -> str:
        """The fingerprint of the throwaway signing key, made (or replaced when it expires soon) here."""
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        fingerprint, expires = self._current()
        if fingerprint and (expires == 0 or expires - time.time() > KEY_RENEW_DAYS * 86400):
            return fingerprint
        if fingerprint:
            log(f"the repository signing key expires within {KEY_RENEW_DAYS} days; making a new one")
            shutil.rmtree(self.home)
            self.home.mkdir(mode=0o700, parents=True)
        self(
            "--quick-generate-key",
            "gpufabric lab throwaway repository key <lab@gpufabric.invalid>",
            "ed25519",
            "sign",
            f"{KEY_DAYS}d",
        )
        fingerprint, _expires = self._current()
        if not fingerprint:
            raise SystemExit(f"gpg made no signing key in {self.home}")
        return fingerprint

    def _current(self) -> tuple:
        if not (self.home / "pubring.kbx").exists():
            return "", 0
        fingerprint, expires = "", 0
        for line in self("--list-secret-keys", "--with-colons", capture=True).splitlines():
            fields = line.split(":")
            if fields[0] == "sec":
                expires = int(fields[6] or 0)
            elif fields[0] == "fpr" and not fingerprint:
                fingerprint = fields[9]
        return fingerprint, expires


def build_repositories(spec, kernel: str, gpg: Gpg, digest: str, dest: Path) -> int:
    """Build every repository of packages.yml into dest (replaced as a whole); return the package count."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with tempfile.TemporaryDirectory(prefix="gpufabric-repo.", dir=dest.parent) as tmp:
        tmp_path = Path(tmp)
        staging = tmp_path / "repo"
        for repo in spec["repositories"]:
            repo_dir = staging / repo["path"]
            repo_dir.mkdir(parents=True)
            entries = []
            seen = set()
            for pkg in repo_packages(repo, spec.get("sets") or {}, {"kernel": kernel}):
                key = (pkg["name"], str(pkg["version"]))
                if key in seen:
                    raise SystemExit("packages.yml: {} {} twice in {}".format(key[0], key[1], repo["path"]))
                seen.add(key)
                deb = build_deb(pkg, tmp_path / "build" / repo["path"], repo_dir)
                entries.append(index_entry(deb, repo_dir))
                count += 1
            packages = "\n".join(entries)
            (repo_dir / "Packages").write_text(packages)
            with gzip.GzipFile(repo_dir / "Packages.gz", "wb", mtime=0) as handle:
                handle.write(packages.encode())
            write_release(repo_dir, repo.get("label", "gpufabric-lab"), gpg)
        for key_path in spec.get("keys") or []:
            target = staging / key_path
            target.parent.mkdir(parents=True, exist_ok=True)
            gpg("--armor", "--export", "-o", str(target))
        # The fingerprint the lab's inventories pin for these keys (the roles install a key only when pinned).
        (staging / "signing-key.fpr").write_text(gpg.signing_key() + "\n")
        (staging / ".inputs-sha256").write_text(digest + "\n")
        replace_tree(staging, dest, tmp_path)
    return count


def replace_tree(new: Path, dest: Path, scratch: Path) -> None:
    """Put new at dest, moving whatever was there into scratch (removed with it)."""
    if dest.exists():
        dest.rename(scratch / "old")
    new.rename(dest)


def stamp_of(path: Path) -> str:
    stamp = path / ".inputs-sha256"
    return stamp.read_text().strip() if stamp.is_file() else ""


def prune(cache: Path, keep: int = 5) -> None:
    entries = sorted((p for p in cache.iterdir() if p.is_dir() and p.name != "gnupg"), key=lambda p: p.stat().st_mtime)
    for old in entries[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO_ROOT / ".lab" / "repo"))
    parser.add_argument("--cache", help="keep builds here, keyed by their inputs (shared by checkouts)")
    parser.add_argument("--force", action="store_true", help="build even when an up-to-date build exists")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    cache = Path(args.cache).resolve() if args.cache else None
    for tool in ("dpkg-deb", "gpg"):
        if not shutil.which(tool):
            raise SystemExit(f"lab/repo/build.py needs {tool} (apt-get install dpkg gnupg)")
    lock_dir = cache or out.parent
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / ".repo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        gpg = Gpg(cache / "gnupg" if cache else out.parent / "repo-gnupg")
        kernel = platform.release()
        digest = hashlib.sha256((inputs_digest(kernel) + gpg.signing_key()).encode()).hexdigest()
        if not args.force and stamp_of(out) == digest:
            log(f"{out} is up to date")
            return 0
        spec = yaml.safe_load((HERE / "packages.yml").read_text())
        if cache is None:
            count = build_repositories(spec, kernel, gpg, digest, out)
            log(f"built {count} packages in {len(spec['repositories'])} repositories under {out}")
            return 0
        entry = cache / digest[:16]
        if args.force or stamp_of(entry) != digest:
            count = build_repositories(spec, kernel, gpg, digest, entry)
            log(f"built {count} packages in {len(spec['repositories'])} repositories under {entry}")
        else:
            log(f"using the cached build {entry}")
        entry.touch()
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="gpufabric-repo.", dir=out.parent) as tmp:
            shutil.copytree(entry, Path(tmp) / "repo", symlinks=True)
            replace_tree(Path(tmp) / "repo", out, Path(tmp))
        prune(cache)
        log(f"{out} is the build {digest[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
