"""Object stores and every other filesystem fsspec serves (s3://, gs://, abfs://...): listing, range reads,
uploads. fsspec and the store's package (s3fs, gcsfs, adlfs) are imported only when such a location is used.

Listings are always fresh: fsspec filesystems cache directory listings per instance, and a long-lived shell
must see files another host wrote or rewrote since, so every listing and stat first drops that cache.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from metastore.locations import SCHEME_ALIASES
from metastore.storage._errors import StorageError
from metastore.storage._files import FileRef, RangeFile
from metastore.storage._local import is_hidden
from metastore.storage._options import StorageOptions

#: Schemes served by another protocol's filesystem (Hadoop's S3 connectors read the same objects as s3://).
PROTOCOL_ALIASES = SCHEME_ALIASES
#: The package to install for a protocol whose fsspec implementation is missing.
_PACKAGES = {"s3": "s3fs (pip install 'metastore[s3]')", "gs": "gcsfs", "gcs": "gcsfs", "abfs": "adlfs",
             "az": "adlfs", "abfss": "adlfs"}


def split(url: str) -> tuple[str, str]:
    """(protocol, path without the protocol) of an URL, aliases resolved: s3a://b/k -> ("s3", "b/k")."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise StorageError(f"{url!r} is not a URL of a filesystem (scheme://...)")
    protocol = scheme.lower()
    return PROTOCOL_ALIASES.get(protocol, protocol), rest.rstrip("/")


def canonical(url: str) -> str:
    """The URL in the form FileRefs use (s3a://b/k -> s3://b/k, no trailing slash)."""
    protocol, path = split(url)
    return f"{protocol}://{path}"


#: Environment variables the stores' SDKs read credentials and endpoints from: a change means a new client.
_ENV_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_", "FSSPEC_")
_FILESYSTEMS: dict[tuple[int, str, StorageOptions, tuple[tuple[str, str], ...]], Any] = {}


def filesystem(protocol: str, options: StorageOptions) -> Any:
    """fsspec's filesystem for a protocol with the options: one instance per process, options and credential
    environment (fsspec's own instance cache would keep a client made for other credentials, and a client
    made before a fork must not be used after it)."""
    environment = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)))
    key = (os.getpid(), protocol, options, environment)
    found = _FILESYSTEMS.get(key)
    if found is not None:
        return found
    try:
        import fsspec
    except ImportError:
        raise StorageError(
            f"{protocol}:// locations need fsspec and {_PACKAGES.get(protocol, 'its filesystem package')}"
        ) from None
    kwargs = options.for_protocol(protocol)
    try:
        if protocol == "s3":
            _s3_defaults(kwargs)
            if "session" not in kwargs:
                kwargs["session"] = _s3_session()
        fs = fsspec.filesystem(protocol, skip_instance_cache=True, **kwargs)
        _FILESYSTEMS[key] = fs
        return fs
    except ImportError:
        raise StorageError(f"{protocol}:// locations need {_PACKAGES.get(protocol, 'an fsspec filesystem package')}") from None
    except ValueError as exc:
        if "protocol" in str(exc).lower():
            raise StorageError(f"no filesystem serves {protocol}:// locations") from None
        raise StorageError(f"cannot set up the {protocol}:// filesystem: {reason(exc)}") from None
    except TypeError as exc:  # an option the filesystem does not take
        raise StorageError(f"cannot set up the {protocol}:// filesystem: {reason(exc)}") from None


#: botocore defaults that make an unreachable store an error within seconds: its legacy retry mode retries a
#: refused connection 4 times with growing sleeps, and s3fs retries each of those calls 5 times more (8 s and
#: more for "connection refused"); 60 s to connect is botocore's default. `--storage-option
#: config_kwargs.retries=...` / `config_kwargs.connect_timeout=...` override these.
_S3_CONFIG_DEFAULTS: dict[str, Any] = {"retries": {"mode": "standard", "max_attempts": 2}, "connect_timeout": 10}


def _s3_defaults(kwargs: dict[str, Any]) -> None:
    """Fill botocore settings the options do not give (the options' own values always win)."""
    config = kwargs.setdefault("config_kwargs", {})
    if not isinstance(config, dict):
        return  # a malformed value: let s3fs report it
    for name, value in _S3_CONFIG_DEFAULTS.items():
        config.setdefault(name, dict(value) if isinstance(value, dict) else value)


_BOTOCORE_LOADER: Any = None


def _s3_session() -> Any:
    """A new aiobotocore session that shares this process tree's botocore data loader. A session parses about
    a megabyte of JSON (endpoint rules, the S3 model) on its first client, 0.4 s or more; the worker processes
    forked for each ANALYZE scan inherit the parent's parsed copy instead of paying that again."""
    global _BOTOCORE_LOADER
    import botocore.loaders
    from aiobotocore.session import AioSession

    session = AioSession()
    if os.environ.get("AWS_DATA_PATH"):
        return session  # custom model paths: let botocore build its own loader
    if _BOTOCORE_LOADER is None:
        _BOTOCORE_LOADER = botocore.loaders.create_loader()
    session.register_component("data_loader", _BOTOCORE_LOADER)
    return session


def reason(exc: BaseException) -> str:
    """One line saying what went wrong (the SDKs' messages can span lines)."""
    text = str(exc).strip() or type(exc).__name__
    first = text.splitlines()[0].strip()
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory" if first.startswith("[Errno") or first == "FileNotFoundError" else first
    if isinstance(exc, PermissionError):
        return f"permission denied ({first})"
    return first if type(exc).__name__ in first else f"{type(exc).__name__}: {first}"


def _mtime_ns(info: dict[str, Any]) -> int:
    for key in ("mtime", "LastModified", "last_modified", "updated", "modified", "created", "timeCreated"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.UTC)
            seconds = int(value.timestamp())
            return seconds * 1_000_000_000 + value.microsecond * 1000
        if isinstance(value, int | float):
            return int(round(float(value) * 1_000_000_000))
    return 0


def _version(info: dict[str, Any]) -> str:
    for key in ("ETag", "etag", "generation", "md5Hash", "version_id", "VersionId"):
        value = info.get(key)
        if value:
            return str(value).strip('"')
    return ""


def _ref(protocol: str, path: str, info: dict[str, Any]) -> FileRef:
    return FileRef(f"{protocol}://{path}", int(info.get("size") or 0), _mtime_ns(info), _version(info))


def list_files(url: str, options: StorageOptions) -> list[FileRef]:
    """Data files under a location (recursively), hidden entries left out, in name order; [] if none."""
    protocol, root = split(url)
    fs = filesystem(protocol, options)
    try:
        fs.invalidate_cache(root)
        found = fs.find(root, detail=True)
    except FileNotFoundError:
        return []
    except Exception as exc:  # noqa: BLE001 - any SDK failure is this location's listing failing
        raise StorageError(f"cannot list {url}: {reason(exc)}") from None
    out = []
    prefix = root + "/"
    for path in sorted(found):
        info = found[path]
        path = path.rstrip("/")
        if info.get("type", "file") != "file" or not path.startswith(prefix):
            continue
        if any(is_hidden(part) for part in path[len(prefix):].split("/")):
            continue
        out.append(_ref(protocol, path, info))
    return out


def stat(url: str, options: StorageOptions) -> FileRef:
    """The FileRef of one file; StorageError when it is missing or cannot be read."""
    protocol, path = split(url)
    fs = filesystem(protocol, options)
    try:
        fs.invalidate_cache(path)
        info = fs.info(path)
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"cannot read {url}: {reason(exc)}") from None
    if info.get("type", "file") != "file":
        raise StorageError(f"cannot read {url}: it is a directory")
    return _ref(protocol, path, info)


def open_file(url: str, size: int | None, options: StorageOptions) -> RangeFile:
    """The object opened for range reads: each read is one ranged GET of exactly the bytes asked for."""
    protocol, path = split(url)
    fs = filesystem(protocol, options)
    if size is None:
        size = stat(url, options).size
    shown = f"{protocol}://{path}"

    def fetch(offset: int, length: int) -> bytes:
        try:
            data = fs.cat_file(path, start=offset, end=offset + length)
        except Exception as exc:  # noqa: BLE001
            raise StorageError(f"cannot read {shown} at bytes {offset}..{offset + length}: {reason(exc)}") from None
        return bytes(data)

    return RangeFile(shown, size, fetch)


def list_dirs(url: str, options: StorageOptions) -> list[str]:
    """Names of the directories (common prefixes) directly inside a location, in name order."""
    protocol, root = split(url)
    fs = filesystem(protocol, options)
    try:
        fs.invalidate_cache(root)
        entries = fs.ls(root, detail=True)
    except FileNotFoundError:
        return []
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"cannot list {url}: {reason(exc)}") from None
    names = {e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory"}
    return sorted(n for n in names if n)


def is_dir(url: str, options: StorageOptions) -> bool:
    """Whether a directory (a prefix holding objects) exists at the location."""
    protocol, path = split(url)
    fs = filesystem(protocol, options)
    try:
        fs.invalidate_cache(path)
        return bool(fs.isdir(path))
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"cannot list {url}: {reason(exc)}") from None


def upload(local: str, url: str, options: StorageOptions) -> None:
    """Copy a finished local file to the store (an object appears whole or not at all)."""
    protocol, path = split(url)
    fs = filesystem(protocol, options)
    try:
        fs.put_file(local, path)
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"cannot write {url}: {reason(exc)}") from None


def delete(url: str, options: StorageOptions) -> None:
    """Delete a file or everything under a prefix; nothing if it is missing."""
    protocol, path = split(url)
    fs = filesystem(protocol, options)
    try:
        fs.invalidate_cache(path)
        if fs.exists(path):
            fs.rm(path, recursive=True)
    except FileNotFoundError:
        return
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"cannot delete {url}: {reason(exc)}") from None


def exists(url: str, options: StorageOptions) -> bool:
    """Whether an object, or any object under the prefix, exists at the location."""
    protocol, path = split(url)
    fs = filesystem(protocol, options)
    try:
        fs.invalidate_cache(path)
        return bool(fs.exists(path))
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"cannot check {url}: {reason(exc)}") from None


def move_dir(source: str, target: str, options: StorageOptions) -> None:
    """Move every object under a prefix to another prefix of the same store (copies, then deletes: object
    stores have no rename)."""
    protocol, src = split(source)
    _, dst = split(target)
    fs = filesystem(protocol, options)
    try:
        fs.invalidate_cache(src)
        # Object by object, with paths spelt out: fsspec's recursive mv also tries to copy the prefix itself as
        # an object, which does not exist.
        objects = [p for p in fs.find(src) if p.startswith(src + "/") or p == src]
        moved = [dst + p[len(src):] for p in objects]
        if objects:
            fs.copy(objects, moved)
            fs.rm(objects)
    except Exception as exc:  # noqa: BLE001
        raise StorageError(f"cannot move {source} to {target}: {reason(exc)}") from None
