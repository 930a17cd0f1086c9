"""The deployment package as a container: named files plus ``manifest.json`` listing each one
with its size and SHA-256 (docs/driver.md). What the files mean (the quantized graph, the
bundles, the ARM library) is the compiler's business (``compiler.network.package``); this module
seals a set of files and checks one before anything reads it.
"""

from __future__ import annotations

import hashlib
import json
import re

from driver.device import DeviceError

PACKAGE_FORMAT = "vdla-package"
PACKAGE_VERSION = 3  # 2: zero points in the graph, a bundle per group of a grouped conv, more kernel families;
                     # 3: bundle files named by compiler.network.vdla_ops.bundle_key (escaped node names)
MANIFEST = "manifest.json"
_NAME = re.compile(r"[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*")


class PackageError(DeviceError):
    """A deployment package is incomplete, corrupt or for another device."""


def seal(files: dict[str, bytes], **fields) -> dict[str, bytes]:
    """``files`` plus a manifest (``format``, ``version``, ``fields``, and every file's size and hash)."""
    manifest = {"format": PACKAGE_FORMAT, "version": PACKAGE_VERSION, **fields,
                "files": {name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                          for name, data in files.items()}}
    return {**files, MANIFEST: json.dumps(manifest, indent=1).encode()}


def check(files: dict[str, bytes], fingerprint: str, device_name: str = "") -> dict:
    """The manifest, after checking its form, every file's name, size and hash, and that the
    package was built for the configuration ``fingerprint``."""
    try:
        manifest = json.loads(files[MANIFEST])
        listed = manifest["files"]
        if not isinstance(listed, dict):
            raise TypeError("'files' is not an object")
    except KeyError:
        raise PackageError(f"the package has no {MANIFEST} (or it lists no files)") from None
    except (ValueError, TypeError, RecursionError) as err:
        raise PackageError(f"{MANIFEST} is not a package manifest ({err})") from None
    if manifest.get("format") != PACKAGE_FORMAT or manifest.get("version") != PACKAGE_VERSION:
        raise PackageError(f"not a {PACKAGE_FORMAT} v{PACKAGE_VERSION} package (format {manifest.get('format')!r}, "
                           f"version {manifest.get('version')!r}); update vdla on both sides")
    extra = sorted(set(files) - set(listed) - {MANIFEST})
    if extra:
        raise PackageError(f"the package has files its manifest does not list: {', '.join(extra[:5])}")
    for name, info in listed.items():
        if not _NAME.fullmatch(name) or ".." in name.split("/"):
            raise PackageError(f"{MANIFEST} lists a file with a bad name {name[:80]!r}")
        if name not in files:
            raise PackageError(f"the package lacks {name}, which its manifest lists")
        data = files[name]
        if not isinstance(info, dict) or len(data) != info.get("size") or \
                hashlib.sha256(data).hexdigest() != info.get("sha256"):
            raise PackageError(f"{name}: size or SHA-256 differs from the manifest; the package is corrupt")
    if manifest.get("fingerprint") != fingerprint:
        raise PackageError(f"the package was compiled for configuration {str(manifest.get('fingerprint'))[:80]}, "
                           f"but this server's device is {fingerprint} ({device_name}); deploy with --config "
                           f"{device_name} or serve a device of that configuration")
    return manifest
