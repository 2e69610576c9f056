# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A package repository's signing key, trusted only when its fingerprint is the one pinned.

The roles download each repository's public key (apt ``signed-by`` keyrings). A key served by the
repository's own host proves nothing about the host: whoever controls it, or the path to it, serves
their own key and their own packages. So the downloaded key is read here and accepted only when
every primary key in it has a pinned fingerprint.

Formats (facts, not code, from the OpenPGP standard, RFC 4880 and its successor RFC 9580):
- ASCII armor (section 6): ``-----BEGIN PGP PUBLIC KEY BLOCK-----``, optional ``Key: value`` header
  lines, a blank line, base64 lines, an optional ``=`` line with the CRC-24 of the data
  (initialisation 0xB704CE, generator 0x1864CFB), the END line. A file may hold several blocks.
- Packets (section 4.2): a header octet with bit 7 set; bit 6 set is the new format (tag in bits
  0-5, length in one, two or five octets), clear is the old format (tag in bits 2-5, length type in
  bits 0-1: one, two or four octets; type 3, indeterminate, is not used for keys). Tag 6 is a
  primary public key, tag 5 a secret key (never accepted here).
- The fingerprint of a version 4 key (section 12.2) is the SHA-1 of the octet 0x99, the two-octet
  length of the key packet's body and the body: 40 hex digits, as ``gpg --with-colons`` prints in its
  ``fpr`` line. Version 6 keys (RFC 9580) have 64-digit SHA-256 fingerprints; no package repository
  the roles use publishes one, and they are refused rather than half-supported.

Pure Python (>= 3.8), stdlib only.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Iterable, List, Optional, Sequence, Tuple

# Keys whose fingerprint the collection pins when the inventory names none. Each is a published fact:
# - cuda: NVIDIA's CUDA repository key "cudatools <cudatools@nvidia.com>" (3bf863cc.pub, in use since the
#   April 2022 key rotation; NVIDIA's cuda-repo-management SIGNATURES.md and the rotation notice).
KNOWN_FINGERPRINTS = {
    "cuda": ("EB693B3035CD5710E231E123A4B469963BF863CC",),
}

FINGERPRINT_RE = re.compile(r"[0-9A-F]{40}")
TAG_SECRET_KEY = 5
TAG_PUBLIC_KEY = 6
MAX_KEY_BYTES = 1 << 20  # a public key file; anything larger is not one


class SigningKeyError(ValueError):
    """The file is not an OpenPGP public key the roles can trust."""


def normalise_fingerprint(value: object) -> Optional[str]:
    """A fingerprint as 40 upper-case hex digits (spaces, 0x and lower case allowed), or None."""
    text = re.sub(r"\s+", "", str(value or "")).upper()
    if text.startswith("0X"):
        text = text[2:]
    return text if FINGERPRINT_RE.fullmatch(text) else None


def _crc24(data: bytes) -> int:
    crc = 0xB704CE
    for octet in data:
        crc ^= octet << 16
        for _bit in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def dearmor(data: bytes) -> bytes:
    """The binary packets of a key file: armored blocks decoded (checksums checked), binary as is."""
    if not data.lstrip().startswith(b"-----BEGIN PGP"):
        return data
    out = b""
    lines = data.decode("ascii", errors="strict").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if not line.startswith("-----BEGIN PGP "):
            continue
        if line != "-----BEGIN PGP PUBLIC KEY BLOCK-----":
            raise SigningKeyError(f"an armored block of another kind ({line.strip('-')}), not a public key")
        while index < len(lines) and lines[index].strip() and ":" in lines[index]:
            index += 1  # armor headers (Version:, Comment:)
        body: List[str] = []
        checksum = None
        while index < len(lines) and not lines[index].strip().startswith("-----END PGP "):
            text = lines[index].strip()
            index += 1
            if text.startswith("=") and len(text) == 5:
                checksum = text[1:]
            elif text:
                body.append(text)
        if index >= len(lines):
            raise SigningKeyError("an armored block without its END line")
        index += 1
        try:
            block = base64.b64decode("".join(body), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise SigningKeyError(f"the armored block is not base64 ({exc})") from None
        if checksum is not None:
            try:
                expected = int.from_bytes(base64.b64decode(checksum, validate=True), "big")
            except (binascii.Error, ValueError):
                raise SigningKeyError("the armor checksum line is not base64") from None
            if _crc24(block) != expected:
                raise SigningKeyError("the armor checksum does not match its data (the file was altered or cut)")
        out += block
    if not out:
        raise SigningKeyError("no public key block in the armored file")
    return out


def packets(data: bytes) -> Iterable[Tuple[int, bytes]]:
    """(tag, body) of every packet of binary OpenPGP data."""
    pos = 0
    while pos < len(data):
        head = data[pos]
        pos += 1
        if not head & 0x80:
            raise SigningKeyError(f"byte {pos - 1} is not an OpenPGP packet header")
        if head & 0x40:
            tag = head & 0x3F
            if pos >= len(data):
                raise SigningKeyError("a packet header is cut short")
            first = data[pos]
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                if pos + 1 >= len(data):
                    raise SigningKeyError("a packet header is cut short")
                length, pos = ((first - 192) << 8) + data[pos + 1] + 192, pos + 2
            elif first == 255:
                length, pos = int.from_bytes(data[pos + 1 : pos + 5], "big"), pos + 5
            else:
                raise SigningKeyError("a packet with partial body lengths, which key packets never have")
        else:
            tag = (head >> 2) & 0x0F
            size = {0: 1, 1: 2, 2: 4}.get(head & 0x03)
            if size is None:
                raise SigningKeyError("a packet of indeterminate length, which key packets never have")
            length, pos = int.from_bytes(data[pos : pos + size], "big"), pos + size
        if pos + length > len(data):
            raise SigningKeyError("a packet is cut short (the file is truncated)")
        yield tag, data[pos : pos + length]
        pos += length


def primary_fingerprints(data: bytes) -> List[str]:
    """The fingerprints of the primary public keys in a key file (armored or binary), in order."""
    if len(data) > MAX_KEY_BYTES:
        raise SigningKeyError(f"{len(data)} bytes, more than a public key file holds")
    found: List[str] = []
    for tag, body in packets(dearmor(data)):
        if tag == TAG_SECRET_KEY:
            raise SigningKeyError("the file holds a secret key")
        if tag != TAG_PUBLIC_KEY:
            continue
        version = body[0] if body else None
        if version != 4:
            raise SigningKeyError(f"a version {version} key; only version 4 keys (40-digit fingerprints) are supported")
        found.append(hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper())
    if not found:
        raise SigningKeyError("no public key in the file")
    return found


def pins(fingerprints: Sequence[object], known: str = "") -> List[str]:
    """The pinned fingerprints: those given, else the collection's pin for a known repository key."""
    given = [normalise_fingerprint(value) for value in fingerprints or []]
    if any(value is None for value in given):
        bad = [str(value) for value, norm in zip(fingerprints, given) if norm is None]
        raise SigningKeyError(f"{', '.join(bad)}: not a 40-hex-digit fingerprint")
    if given:
        return [value for value in given if value]
    return list(KNOWN_FINGERPRINTS.get(known, ()))


def unpinned(data: bytes, pinned: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(the key file's primary fingerprints, those of them not pinned). Raises SigningKeyError for a bad file."""
    found = primary_fingerprints(data)
    return found, [fpr for fpr in found if fpr not in set(pinned)]
