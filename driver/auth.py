"""The shared secret of ``vdla serve`` and ``vdla deploy``: the key file and the frame MACs.

The key is 32 random bytes (``secrets.token_bytes``) stored as 64 hex digits in a file of this
user that only its owner may read (mode 0600), in a folder only this user (or root) may write
(created with mode 0700). ``vdla serve`` creates it on first start (default
:func:`default_key_file`); the same file, copied to the host, lets ``vdla deploy`` prove it
holds the key. A symbolic link, a file of another user or readable by others, and a folder
others may write are refused with one line. :func:`key_id` names a key without revealing it,
so both sides can check they hold the same one.

Frames are authenticated with HMAC-SHA256 (the standard library's ``hmac``) over a label for the
direction, a context and the frame's prefix (which holds the SHA-256 of the header, and the
header lists every blob's SHA-256, so the MAC covers everything): requests over the server's
per-connection challenge, responses over that challenge, the request's nonce and the request's
digest (``driver.protocol``). A recorded frame therefore never verifies on another connection,
nor an answer for another request. The MACs are compared with ``hmac.compare_digest``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from driver.device import DeviceError

KEY_BYTES = 32
NONCE_BYTES = 16
MAC_BYTES = hashlib.sha256().digest_size
REQUEST, RESPONSE = b"vdla-request\0", b"vdla-response\0"


class AuthError(DeviceError):
    """A key file is missing, unsafe or malformed, or a frame's MAC does not verify."""


def default_key_file() -> Path:
    """``$XDG_CONFIG_HOME/vdla/serve.key`` (default ``~/.config/vdla/serve.key``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "vdla" / "serve.key"


def _check_folder(path: Path) -> None:
    """The key's folder may be written only by this user (or root, who can write anything):
    whoever can write it can swap the key for one they know."""
    folder = path.parent
    info = os.stat(folder)
    uid = os.getuid()
    if info.st_uid not in (uid, 0):
        raise AuthError(f"key file {path}: its folder {folder} belongs to another user (uid {info.st_uid}, this is "
                        f"uid {uid}), who could replace the key; keep the key in a folder of this user")
    if info.st_mode & 0o022:
        raise AuthError(f"key file {path}: its folder {folder} may be written by others (mode "
                        f"{stat.S_IMODE(info.st_mode):04o}); run: chmod go-w {folder}, or keep the key elsewhere")


def create_key(path: str | Path) -> bytes:
    """Write a new random key to ``path`` (which must not exist), readable by its owner only,
    in a folder only this user may write."""
    path = Path(path)
    key = secrets.token_bytes(KEY_BYTES)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _check_folder(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as err:
        raise AuthError(f"cannot create the key file {path} ({err.strerror or err})") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(key.hex() + "\n")
    return key


def load_key(path: str | Path) -> bytes:
    """The key in ``path``. Refused, one line each: a symbolic link, not a regular file, a file
    owned by another user or that others may read, a folder others may write, not a key."""
    path = Path(path)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise AuthError(f"key file {path} is a symbolic link; give the file itself (--key-file)")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise AuthError(f"key file {path} is not a regular file")
            if info.st_uid != os.getuid():
                raise AuthError(f"key file {path} belongs to another user (uid {info.st_uid}, this is uid "
                                f"{os.getuid()}); copy it to a file of this user (mode 0600)")
            if info.st_mode & 0o077:
                raise AuthError(f"key file {path} may be read by others (mode {stat.S_IMODE(info.st_mode):04o}); "
                                f"run: chmod 600 {path}")
            _check_folder(path)
            text = fh.read(4 * KEY_BYTES).decode("ascii", errors="replace").strip()
    except FileNotFoundError:
        raise AuthError(f"no key file {path}: start `vdla serve` once to create it, then copy it here "
                        "(mode 0600), or give --key-file") from None
    except OSError as err:
        raise AuthError(f"cannot read the key file {path} ({err.strerror or err})") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise AuthError(f"key file {path} does not hold a key ({2 * KEY_BYTES} hex digits)")
    return key


def server_key(path: str | Path) -> tuple[bytes, bool]:
    """The server's key: loaded, or created on first start; (key, created)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return create_key(path), True
    return load_key(path), False


def key_id(key: bytes) -> str:
    """A short public name of a key (a hash of it), to compare keys without showing them."""
    return hashlib.sha256(b"vdla-key-id\0" + key).hexdigest()[:12]


def nonce() -> bytes:
    return secrets.token_bytes(NONCE_BYTES)


def mac(key: bytes, label: bytes, context: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 of a frame: ``label`` (the direction), ``context`` (what the frame is bound
    to: fixed-size fields, driver.protocol) and ``data`` (the frame's prefix up to the MAC,
    which holds the header's SHA-256)."""
    return hmac.new(key, label + context + data, hashlib.sha256).digest()


def verify(key: bytes, label: bytes, context: bytes, data: bytes, tag: bytes) -> bool:
    return hmac.compare_digest(mac(key, label, context, data), tag)
