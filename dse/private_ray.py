"""The embedded local Ray of a sweep, private to the user who runs it.

Left to itself, Ray keeps a local instance's state in the shared ``/tmp/ray`` (session folders
mode 0777: logs, the sockets of its object store and raylet, the files naming its ports) and its
servers (the GCS, the raylet, every worker) answer any local process that connects to their
127.0.0.1 ports, so another user of the machine could read and overwrite what the sweep keeps in
the GCS, the pickled task function included: the road to running code as the sweep's user.
:func:`private_ray` closes both doors for the embedded instance:

* its state goes in a folder of its own, ``<tmp>/vdla-ray-XXXXXXXX/r``: the outer folder is
  created mode 0700 by :func:`tempfile.mkdtemp` (atomically, with a name nobody can take first)
  and only ``r`` inside it is handed to Ray, which opens up the modes of what it creates (0777)
  but cannot make the 0700 parent passable; the folder is removed when the sweep ends;
* Ray's token authentication (``RAY_AUTH_MODE=token``, Ray 2.52 and later): every RPC and HTTP
  entry point of the instance requires ``RAY_AUTH_TOKEN``, a random 256-bit token made once per
  process and passed to Ray's processes only through their environment (readable by the same
  user alone, ``/proc/PID/environ`` mode 0400), never written to a file.

Ray's sockets are Unix-domain sockets under the state folder, whose paths must fit
``sun_path`` (107 bytes): a ``TMPDIR`` too long for them is passed over for ``/tmp``.

A cluster joined with ``--address`` is not ours to configure: its authentication is its own
(Ray's ``RAY_AUTH_MODE`` and ``RAY_AUTH_TOKEN`` in the environment, docs/dse.md).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from pathlib import Path

# the longest path Ray puts under its temporary folder: /session_<date>_<time>_<us>_<pid>/sockets/plasma_store
_SOCKET_TAIL = len("/session_2026-12-06_22-59-07_712443_4194304/sockets/plasma_store")
SUN_PATH_MAX = 107
AUTH_VARIABLES = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
_token: list[str] = []  # one per process: Ray's driver caches the token it first loaded


def token() -> str:
    """This process's token for its embedded Ray instances (made on first use)."""
    if not _token:
        _token.append(secrets.token_hex(32))
    return _token[0]


def _base() -> str:
    """The folder for the private folder: the user's temporary folder, unless Ray's socket paths
    under it would not fit ``sun_path`` (then ``/tmp``)."""
    base = tempfile.gettempdir()
    room = SUN_PATH_MAX - _SOCKET_TAIL - len("/vdla-ray-XXXXXXXX/r")
    return base if len(base) <= room else "/tmp"


@contextlib.contextmanager
def private_ray():
    """While the block runs: token authentication on in this process's environment (restored
    afterwards) and a private state folder, yielded as the ``_temp_dir`` for ``ray.init``;
    the folder is removed afterwards (call ``ray.shutdown`` inside the block)."""
    outer = Path(tempfile.mkdtemp(prefix="vdla-ray-", dir=_base()))  # mode 0700
    saved = {name: os.environ.get(name) for name in AUTH_VARIABLES}
    os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = token()
    try:
        yield str(outer / "r")
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(outer, ignore_errors=True)
