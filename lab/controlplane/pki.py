"""The lab control plane's PKI: one CA, serving certificates, client certificates, the
service-account signing key. ECDSA P-256 throughout (kube-apiserver, etcd and client-go accept
it, and it is generated in milliseconds). Made once per state directory and kept across
restarts, so kubeconfigs stay valid; `lab/kube.sh stop --purge` removes it with the rest.

Identities (the subject's CN is the Kubernetes user name, each O a group):

| file             | CN / O                                         | used by                          |
|------------------|------------------------------------------------|----------------------------------|
| admin            | gpufabric-lab-admin / system:masters           | the lab's own set-up             |
| controller-manager | system:kube-controller-manager               | kube-controller-manager          |
| scheduler        | system:kube-scheduler                          | kube-scheduler                   |
| kwok             | gpufabric-lab:kwok                             | kwok (RBAC in lab/cluster/rbac)  |
| operator         | gpufabric-lab:operator-standin                 | lab/cluster/play_operator.py     |
| gpufabric-rollout| gpufabric-rollout                              | the collection's roles           |
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY_DAYS = 3650
# The apiserver answers on loopback only; the in-cluster names and the first service IP
# (10.96.0.1 for --service-cluster-ip-range 10.96.0.0/12) are there as on a real cluster.
APISERVER_DNS = [
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
]
APISERVER_IPS = ["127.0.0.1", "10.96.0.1"]

CLIENTS: Dict[str, Tuple[str, List[str]]] = {
    "admin": ("gpufabric-lab-admin", ["system:masters"]),
    "controller-manager": ("system:kube-controller-manager", []),
    "scheduler": ("system:kube-scheduler", []),
    "kwok": ("gpufabric-lab:kwok", []),
    "operator": ("gpufabric-lab:operator-standin", []),
    "gpufabric-rollout": ("gpufabric-rollout", []),
}


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(cn: str, orgs: Optional[List[str]] = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs or []]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


def _sign(
    subject: x509.Name,
    public_key,
    issuer: x509.Name,
    issuer_key,
    *,
    ca: bool = False,
    server: bool = False,
    client: bool = False,
    dns: Optional[List[str]] = None,
    ips: Optional[List[str]] = None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALIDITY_DAYS))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        ).add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    else:
        builder = builder.add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        )
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if dns or ips:
        names: list = [x509.DNSName(d) for d in dns or []]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips or []]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def ensure(pki: Path) -> Dict[str, Path]:
    """Create what is missing under `pki`; return the paths the control plane is started with."""
    pki.mkdir(parents=True, exist_ok=True)
    ca_crt, ca_key = pki / "ca.crt", pki / "ca.key"
    if not (ca_crt.exists() and ca_key.exists()):
        key = _key()
        name = _name("gpufabric-lab-ca")
        _write_key(ca_key, key)
        _write_cert(ca_crt, _sign(name, key.public_key(), name, key, ca=True))
    ca_cert = x509.load_pem_x509_certificate(ca_crt.read_bytes())
    ca_private = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)

    def leaf(stem: str, cn: str, orgs: List[str], **kw) -> None:
        crt, key_path = pki / (stem + ".crt"), pki / (stem + ".key")
        if crt.exists() and key_path.exists():
            return
        key = _key()
        _write_key(key_path, key)
        _write_cert(crt, _sign(_name(cn, orgs), key.public_key(), ca_cert.subject, ca_private, **kw))

    leaf("apiserver", "kube-apiserver", [], server=True, dns=APISERVER_DNS, ips=APISERVER_IPS)
    leaf("etcd-server", "etcd", [], server=True, client=True, dns=["localhost"], ips=["127.0.0.1"])
    leaf("apiserver-etcd-client", "kube-apiserver-etcd-client", [], client=True)
    for stem, (cn, orgs) in CLIENTS.items():
        leaf(stem, cn, orgs, client=True)

    sa_key, sa_pub = pki / "sa.key", pki / "sa.pub"
    if not (sa_key.exists() and sa_pub.exists()):
        key = _key()
        _write_key(sa_key, key)
        sa_pub.write_bytes(
            key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
    return {
        "ca": ca_crt,
        "ca_key": ca_key,
        "sa_key": sa_key,
        "sa_pub": sa_pub,
        **{stem: pki / stem for stem in ["apiserver", "etcd-server", "apiserver-etcd-client", *CLIENTS]},
    }
