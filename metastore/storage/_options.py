"""Options for object stores: what `--storage-option KEY=VALUE` gives, as fsspec keyword arguments.

Credentials and endpoints normally come from where the stores' own SDKs look (for S3: `AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, `AWS_PROFILE`, `~/.aws/credentials` and `~/.aws/config`); options
given here win over them. Keys are fsspec's (`endpoint_url`, `key`, `secret`, `anon`...); a dotted key fills a
nested argument (`client_kwargs.region_name=eu-west-1`), and Hadoop's `fs.s3a.*` names that Hive users know are
accepted for S3. Values `true`/`false` are booleans, whole numbers are integers, a value starting with `{` is JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from metastore.storage._errors import StorageError

#: Hadoop's S3A configuration names and the s3fs arguments they stand for.
_HADOOP_S3A = {
    "fs.s3a.access.key": "key",
    "fs.s3a.secret.key": "secret",
    "fs.s3a.session.token": "token",
    "fs.s3a.endpoint.region": "client_kwargs.region_name",
}
#: Words that make an option's value secret: it is never printed (repr, errors).
_SECRET_WORDS = ("secret", "key", "token", "password", "credential", "sas", "signature", "auth")


def is_secret(name: str) -> bool:
    """Whether an option's value must never be shown (access keys, secrets, tokens, passwords)."""
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


@dataclass(frozen=True)
class StorageOptions:
    """Object-store options as given (KEY, VALUE text pairs, in order): hashable and picklable, so a Spark task
    can carry them to executors; `repr` hides secret values."""

    items: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, texts: Iterable[str] | None) -> StorageOptions:
        """Options from `KEY=VALUE` texts; StorageError naming the text that is not one."""
        items = []
        for text in texts or ():
            key, sep, value = text.partition("=")
            key = key.strip()
            if not sep or not key:
                raise StorageError(f"--storage-option {_shown(text)} is not KEY=VALUE")
            items.append((key, value.strip()))
        options = cls(tuple(items))
        options.for_protocol("s3")  # malformed JSON values fail now, not at the first file
        return options

    def __bool__(self) -> bool:
        return bool(self.items)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={'***' if is_secret(k) else repr(v)}" for k, v in self.items)
        return f"StorageOptions({shown})"

    def for_protocol(self, protocol: str) -> dict[str, Any]:
        """The keyword arguments for fsspec's filesystem of `protocol` ("s3", "gs", "abfs"...)."""
        out: dict[str, Any] = {}
        hadoop = {k: v for k, v in self.items if k.startswith("fs.s3a.")}
        if protocol == "s3" and hadoop:
            _put(out, *_hadoop_endpoint(hadoop))
            if hadoop.get("fs.s3a.path.style.access", "").lower() == "true":
                _put(out, "config_kwargs.s3.addressing_style", "path")
        for key, text in self.items:
            if key.startswith("fs.s3a."):
                if protocol == "s3" and key in _HADOOP_S3A:
                    _put(out, _HADOOP_S3A[key], text)
                continue
            _put(out, key, _value(key, text))
        return out


def _hadoop_endpoint(hadoop: dict[str, str]) -> tuple[str, Any]:
    endpoint = hadoop.get("fs.s3a.endpoint")
    if not endpoint:
        return "", None
    if "://" not in endpoint:
        ssl = hadoop.get("fs.s3a.connection.ssl.enabled", "true").lower() != "false"
        endpoint = f"{'https' if ssl else 'http'}://{endpoint}"
    return "endpoint_url", endpoint


def _put(out: dict[str, Any], dotted: str, value: Any) -> None:
    if not dotted:
        return
    *parents, last = dotted.split(".")
    node = out
    for name in parents:
        child = node.setdefault(name, {})
        if not isinstance(child, dict):
            raise StorageError(f"--storage-option {dotted}: '{name}' is given both as a value and as a group")
        node = child
    node[last] = value


def _value(key: str, text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if text.lstrip("-").isdigit():
        return int(text)
    if text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError as exc:
            shown = "a secret" if is_secret(key) else repr(text)
            raise StorageError(f"--storage-option {key}: {shown} is not valid JSON ({exc})") from None
    return text


def _shown(text: str) -> str:
    key, sep, _ = text.partition("=")
    if not is_secret(key):
        return repr(text)
    return f"{key!r} (value hidden)" if sep else "(text hidden: it may hold a secret)"
