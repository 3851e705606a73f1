"""Signed checkpoints of the audit chain's head, kept outside the database.

The hash chain shows a changed row only as long as nobody recomputes every hash after it, and
whoever can write the table (a DBA, with the trigger disabled) can do exactly that. So, like a
transparency log publishing signed tree heads (Trillian, Certificate Transparency, Rekor), we
publish the chain's head now and then, signed with an Ed25519 key the database never holds,
into a store the DBA cannot reach (Django's storage API, and optionally a webhook). A rewritten
chain then disagrees with a checkpoint already published: `verify_audit_chain --checkpoints`.

The format is the C2SP tlog-checkpoint body inside a C2SP signed note (c2sp.org/signed-note,
c2sp.org/tlog-checkpoint), so any signed-note tool (Go's golang.org/x/mod/sumdb/note) can check
the signature. Our chain is a linear hash chain, not a Merkle tree, so the "root hash" line is
the head entry's hash:

    casework/audit                                  origin (AUDIT_CHECKPOINT_ORIGIN)
    1234                                            chain size: the head entry's position
    q1Jx...base64 of the head entry's SHA-256...=   the head entry's hash (hex in the database)
    time 2026-11-25T17:40:00Z                       extension line: when it was signed (UTC)
    hashes 1001 9f86d0...                           extension line: the hash list beside it

    — casework/audit AbCd...base64(4-byte key hash || 64-byte Ed25519 signature)...

The hash list (hashes-<position>.txt, written beside the checkpoint) holds every entry's hash
since the previous checkpoint, one a line; its SHA-256 is signed, so a check against it names
the exact first entry that differs, and an auditor can find a case report's entry hashes in it.

The key hash is the signed-note one: SHA-256(name || "\\n" || 0x01 || public key)[:4]. A key's
id, as pages and reports show it, is the SHA-256 of its raw 32-byte public key, in hex.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings

ED25519 = 0x01  # the signed-note algorithm byte for Ed25519
SIGNATURE_PREFIX = "\u2014 "  # an em dash and a space start every signature line
FILE_NAME = re.compile(r"^checkpoint-(\d{12})\.txt$")
HASHES_NAME = re.compile(r"^hashes-(\d{12})\.txt$")


class CheckpointError(Exception):
    """A checkpoint that cannot be read, or a key that cannot be used; the message says why."""


class UnknownKey(CheckpointError):
    pass


class BadSignature(CheckpointError):
    pass


# --- Keys ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifierKey:
    """A public key that checkpoints may be signed with, under its signed-note name."""

    name: str
    raw: bytes  # the 32-byte Ed25519 public key

    @property
    def key_hash(self) -> bytes:
        return hashlib.sha256(self.name.encode() + b"\n" + bytes([ED25519]) + self.raw).digest()[:4]

    @property
    def key_id(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    @property
    def vkey(self) -> str:
        """The signed-note verifier key: name+hash+base64(0x01 || key), one line."""
        return f"{self.name}+{self.key_hash.hex()}+{base64.b64encode(bytes([ED25519]) + self.raw).decode()}"

    @property
    def pem(self) -> str:
        return Ed25519PublicKey.from_public_bytes(self.raw).public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()

    def verify(self, signature: bytes, message: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
        except InvalidSignature:
            return False
        return True


def _raw_public(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def signing_key_generate() -> bytes:
    """A new Ed25519 private key as PKCS#8 PEM (what AUDIT_SIGNING_KEY or its file holds)."""
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def _private_from_text(text: str) -> Ed25519PrivateKey:
    text = text.strip()
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_private_key(text.encode(), password=None)
        except (ValueError, TypeError) as exc:
            raise CheckpointError(f"not a readable unencrypted PEM private key ({type(exc).__name__})") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise CheckpointError(f"a PEM {type(key).__name__}, not an Ed25519 private key")
        return key
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        raise CheckpointError("neither PEM nor base64") from None
    if len(raw) != 32:
        raise CheckpointError(f"base64 of {len(raw)} bytes; a raw Ed25519 private key is 32")
    return Ed25519PrivateKey.from_private_bytes(raw)


def signing_key_load(value: str) -> Ed25519PrivateKey:
    """AUDIT_SIGNING_KEY's value: a file's path, or the key itself; either PEM or the raw 32
    bytes in base64. The message of an error never quotes the value (it is a secret)."""
    value = value.strip()
    source = "AUDIT_SIGNING_KEY"
    path = Path(value) if not value.startswith("-----BEGIN") and len(value) < 4096 else None
    if path is not None and path.is_file():
        source, value = f"{source} file {path}", path.read_text(encoding="utf-8")
    try:
        return _private_from_text(value)
    except CheckpointError as exc:
        if path is not None and value.startswith(("/", "./", "../", "~")):  # a path, not a secret: say which
            raise CheckpointError(f"{source} names a file that does not exist: {path}") from None
        raise CheckpointError(f"{source} is not an Ed25519 private key: {exc}.") from None


_loaded: dict[str, Ed25519PrivateKey] = {}


def signing_key() -> Ed25519PrivateKey | None:
    """The configured signing key, or None when AUDIT_SIGNING_KEY is not set."""
    value = settings.AUDIT_SIGNING_KEY
    if not value:
        return None
    if value not in _loaded:
        _loaded.clear()
        _loaded[value] = signing_key_load(value)
    return _loaded[value]


def current_key() -> VerifierKey | None:
    """The public half of the signing key, under this log's name."""
    key = signing_key()
    return VerifierKey(settings.AUDIT_CHECKPOINT_ORIGIN, _raw_public(key)) if key is not None else None


def public_key_parse(text: str, *, name: str | None = None) -> VerifierKey:
    """A public key given by a person: a signed-note verifier key (name+hash+base64), a PEM
    public key, or base64 of the raw 32 bytes (then named `name`, default this log's origin)."""
    text = text.strip()
    name = name or settings.AUDIT_CHECKPOINT_ORIGIN
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_public_key(text.encode())
        except ValueError:
            raise CheckpointError("not a readable PEM public key") from None
        if not isinstance(key, Ed25519PublicKey):
            raise CheckpointError(f"a PEM {type(key).__name__}, not an Ed25519 public key")
        return VerifierKey(name, key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))
    if text.count("+") >= 2 and not text.startswith("+"):
        vname, khash, encoded = text.split("+", 2)
        try:
            blob = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raise CheckpointError(f"verifier key {vname}: its key part is not base64") from None
        if len(blob) != 33 or blob[0] != ED25519:
            raise CheckpointError(f"verifier key {vname}: not an Ed25519 key (algorithm byte and 32 bytes)")
        key = VerifierKey(vname, blob[1:])
        if key.key_hash.hex() != khash.lower():
            raise CheckpointError(f"verifier key {vname}: its hash {khash} does not match its name and key")
        return key
    try:
        raw = base64.b64decode(text, validate=True)
    except binascii.Error:
        raise CheckpointError("not a public key: give a verifier key (name+hash+base64), PEM, or base64") from None
    if len(raw) != 32:
        raise CheckpointError(f"base64 of {len(raw)} bytes; a raw Ed25519 public key is 32")
    return VerifierKey(name, raw)


def keyring_read(path: Path | str) -> list[VerifierKey]:
    """Verifier keys from a keyring file: one per line; blank lines and # comments skipped."""
    path = Path(path)
    keys = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            keys.append(public_key_parse(line))
        except CheckpointError as exc:
            raise CheckpointError(f"{path}, line {number}: {exc}") from None
    return keys


def keyring() -> list[VerifierKey]:
    """Every key a checkpoint of ours may be signed with: the current one, then the retired
    ones listed in AUDIT_CHECKPOINT_KEYRING (if that file exists)."""
    keys = []
    current = current_key()
    if current is not None:
        keys.append(current)
    path = Path(settings.AUDIT_CHECKPOINT_KEYRING)
    if path.is_file():
        keys.extend(k for k in keyring_read(path) if k not in keys)
    return keys


# --- Checkpoints --------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    position: int
    head_hash: str  # hex, as the database holds it
    time: dt.datetime
    # The hash list published beside it (hashes_file_name): every entry's hash from position
    # hashes_from to `position`, one a line; its SHA-256 is signed with the rest. None: no list.
    hashes_from: int | None = None
    hashes_sha256: str | None = None

    def body(self) -> str:
        stamp = self.time.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        root = base64.b64encode(bytes.fromhex(self.head_hash)).decode()
        hashes = f"hashes {self.hashes_from} {self.hashes_sha256}\n" if self.hashes_sha256 else ""
        return f"{self.origin}\n{self.position}\n{root}\ntime {stamp}\n{hashes}"

    @property
    def file_name(self) -> str:
        return f"checkpoint-{self.position:012d}.txt"

    @property
    def hashes_file_name(self) -> str:
        return f"hashes-{self.position:012d}.txt"

    def hashes_check(self, text: str) -> list[str]:
        """The entry hashes of a hash list, once its SHA-256 is the one signed and it ends at the
        signed head; CheckpointError otherwise. Item i is the hash at position hashes_from + i."""
        if not self.hashes_sha256:
            raise CheckpointError("this checkpoint signs no hash list")
        if hashlib.sha256(text.encode()).hexdigest() != self.hashes_sha256:
            raise CheckpointError("the hash list's SHA-256 is not the one the checkpoint signed")
        hashes = text.split()
        if len(hashes) != self.position - self.hashes_from + 1 or hashes[-1] != self.head_hash:
            raise CheckpointError("the hash list does not run to the signed head")
        return hashes


@dataclass(frozen=True)
class SignedCheckpoint:
    checkpoint: Checkpoint
    key_name: str
    key_hash: bytes
    signature: bytes
    text: str

    def signed_by(self, keys: list[VerifierKey]) -> VerifierKey:
        """The key among `keys` that signed this checkpoint; UnknownKey or BadSignature if none."""
        candidates = [k for k in keys if k.name == self.key_name and k.key_hash == self.key_hash]
        if not candidates:
            raise UnknownKey(f"signed by key {self.key_name}+{self.key_hash.hex()}, which is not in the keyring "
                             f"(known: {', '.join(f'{k.name}+{k.key_hash.hex()}' for k in keys) or 'none'})")
        for key in candidates:
            if key.verify(self.signature, self.checkpoint.body().encode()):
                return key
        raise BadSignature(f"its signature by key {self.key_name}+{self.key_hash.hex()} does not verify: "
                           "the text was changed after signing")


def note_sign(text: str, name: str, key: Ed25519PrivateKey) -> tuple[VerifierKey, bytes, str]:
    """A signed note (c2sp.org/signed-note): the text, a blank line, and the signature line.
    Returns the signer's verifier key, the signature and the note."""
    verifier = VerifierKey(name, _raw_public(key))
    signature = key.sign(text.encode())
    line = f"{SIGNATURE_PREFIX}{name} {base64.b64encode(verifier.key_hash + signature).decode()}\n"
    return verifier, signature, f"{text}\n{line}"


def checkpoint_sign(checkpoint: Checkpoint, key: Ed25519PrivateKey) -> SignedCheckpoint:
    name = checkpoint.origin
    verifier, signature, note = note_sign(checkpoint.body(), name, key)
    return SignedCheckpoint(checkpoint, name, verifier.key_hash, signature, note)


def checkpoint_parse(text: str) -> SignedCheckpoint:
    """Read a signed checkpoint (not yet verified: see SignedCheckpoint.signed_by)."""
    body, sep, signatures = text.partition("\n\n")
    if not sep or not body:
        raise CheckpointError("not a signed note: no blank line between the text and its signature")
    lines = body.split("\n")
    if len(lines) < 3:
        raise CheckpointError("a checkpoint has at least three lines: origin, size, head hash")
    origin, size, root, *extensions = lines
    if not size.isdigit() or (size != "0" and size.startswith("0")):
        raise CheckpointError(f"its size line {size[:40]!r} is not a decimal number")
    try:
        head = base64.b64decode(root, validate=True)
    except binascii.Error:
        head = b""
    if len(head) != 32:
        raise CheckpointError("its head hash line is not the base64 of a 32-byte SHA-256")
    times = [e[5:] for e in extensions if e.startswith("time ")]
    try:
        when = dt.datetime.strptime(times[0], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except (IndexError, ValueError):
        raise CheckpointError("it has no 'time YYYY-MM-DDTHH:MM:SSZ' line") from None
    lists = [e.split(" ") for e in extensions if e.startswith("hashes ")]
    hashes_from = hashes_sha256 = None
    if lists:
        if len(lists[0]) != 3 or not lists[0][1].isdigit() or not re.fullmatch(r"[0-9a-f]{64}", lists[0][2]):
            raise CheckpointError("its hashes line is not 'hashes <first position> <sha256 hex>'")
        hashes_from, hashes_sha256 = int(lists[0][1]), lists[0][2]
    checkpoint = Checkpoint(origin, int(size), head.hex(), when, hashes_from, hashes_sha256)
    if checkpoint.body() != body + "\n":
        raise CheckpointError("its text is not in the canonical form this log signs")
    sig_lines = [s for s in signatures.split("\n") if s]
    if not sig_lines or not signatures.endswith("\n"):
        raise CheckpointError("it carries no signature line")
    line = sig_lines[0]
    if not line.startswith(SIGNATURE_PREFIX) or line.count(" ") != 2:
        raise CheckpointError("its signature line is not '\u2014 <key name> <base64>'")
    _, name, encoded = line.split(" ")
    try:
        blob = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        blob = b""
    if len(blob) != 4 + 64:
        raise CheckpointError("its signature is not a 4-byte key hash and a 64-byte Ed25519 signature")
    return SignedCheckpoint(checkpoint, name, blob[:4], blob[4:], text)
