"""Object storage behind one small interface: a local directory or an S3 prefix (through boto3).

Only what the land and audit steps need: list, read, write, stream a copy. Spark and delta-rs reach the
same locations through their own clients; `spark_path` and `delta_storage_options` translate for them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import urlparse

from lakeloader.core.zones import inside_lake


@dataclass(frozen=True)
class StoredObject:
    """One object under a store's root: its path relative to the root, size and modification time."""

    key: str
    size: int
    modified: datetime


class Store(Protocol):
    uri: str

    def list(self, prefix: str = "") -> Iterator[StoredObject]: ...

    def why_unlistable(self) -> str | None:
        """Why the location itself cannot be listed (missing, not a directory or bucket, no permission,
        unreachable), or None. `list` yields nothing for such a location, the same as for an empty one."""
        ...

    def open_read(self, key: str) -> BinaryIO: ...

    def read_bytes(self, key: str) -> bytes: ...

    def write_bytes(self, key: str, data: bytes) -> None: ...

    def upload(self, key: str, stream: BinaryIO) -> None: ...

    def stat(self, key: str) -> StoredObject | None: ...

    def child(self, key: str) -> str: ...

    def move_tree(self, prefix: str, new_prefix: str) -> None:
        """Move every object under `prefix/` to `new_prefix/` (rare: renamed or archived tables)."""
        ...

    def delete_tree(self, prefix: str) -> None:
        """Delete every object under `prefix/` (scratch zones, or an output its step rewrites whole); nothing there
        is not an error."""
        ...

    def create_exclusive(self, key: str, data: bytes) -> bool:
        """Write `key` only if no object has that key; False when one has (the lake lock)."""
        ...

    def delete(self, key: str) -> None: ...


class LocalStore:
    """A directory; writes are atomic (temporary file, then rename)."""

    def __init__(self, root: str) -> None:
        self.root = Path(root[len("file://") :] if root.startswith("file://") else root)
        self.uri = str(self.root)

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        base = self.root / prefix
        if not base.exists():
            return
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for filename in sorted(filenames):
                if filename.startswith(".tmp-"):
                    continue
                path = Path(dirpath) / filename
                yield self._stored(path.relative_to(self.root).as_posix(), path)

    def why_unlistable(self) -> str | None:
        if not self.root.exists():
            return f"directory {self.root} does not exist"
        if not self.root.is_dir():
            return f"{self.root} is not a directory"
        if not os.access(self.root, os.R_OK | os.X_OK):
            return f"directory {self.root} cannot be read (permissions)"
        return None

    def open_read(self, key: str) -> BinaryIO:
        return open(self.root / inside_lake(key), "rb")

    def read_bytes(self, key: str) -> bytes:
        return (self.root / inside_lake(key)).read_bytes()

    def write_bytes(self, key: str, data: bytes) -> None:
        with self._atomic(key) as out:
            out.write(data)

    def upload(self, key: str, stream: BinaryIO) -> None:
        with self._atomic(key) as out:
            shutil.copyfileobj(stream, out, 1 << 20)

    def stat(self, key: str) -> StoredObject | None:
        path = self.root / inside_lake(key)
        return self._stored(key, path) if path.is_file() else None

    def child(self, key: str) -> str:
        return str(self.root / inside_lake(key))

    def move_tree(self, prefix: str, new_prefix: str) -> None:
        target = self.root / inside_lake(new_prefix)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.root / inside_lake(prefix), target)

    def delete_tree(self, prefix: str) -> None:
        shutil.rmtree(self.root / inside_lake(prefix), ignore_errors=True)

    def create_exclusive(self, key: str, data: bytes) -> bool:
        """Write `key` only if it does not exist (O_EXCL); False when it does."""
        path = self.root / inside_lake(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        return True

    def delete(self, key: str) -> None:
        (self.root / inside_lake(key)).unlink(missing_ok=True)

    def _atomic(self, key: str) -> _AtomicFile:
        return _AtomicFile(self.root / inside_lake(key))

    @staticmethod
    def _stored(key: str, path: Path) -> StoredObject:
        info = path.stat()
        return StoredObject(key, info.st_size, datetime.fromtimestamp(info.st_mtime, tz=UTC))


class _AtomicFile:
    def __init__(self, target: Path) -> None:
        self.target = target
        self.temporary = target.with_name(f".tmp-{os.getpid()}-{target.name}")

    def __enter__(self) -> BinaryIO:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.temporary, "wb")
        return self.handle

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.handle.close()
        if exc_type is None:
            os.replace(self.temporary, self.target)
        else:
            self.temporary.unlink(missing_ok=True)


class S3Store:
    """An s3://bucket/prefix location; `endpoint_url` points at any S3-compatible server."""

    def __init__(self, uri: str, endpoint_url: str | None = None) -> None:
        import boto3

        parsed = urlparse(uri)
        self.uri = uri.rstrip("/")
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        self.endpoint_url = endpoint_url
        self.client = boto3.client("s3", endpoint_url=endpoint_url)

    def _key(self, key: str) -> str:
        inside_lake(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def list(self, prefix: str = "") -> Iterator[StoredObject]:
        root = f"{self.prefix}/" if self.prefix else ""
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=root + prefix):
            for item in page.get("Contents", []):
                if item["Key"].endswith("/"):
                    continue  # a "folder" marker written by consoles and some tools, not an object to copy
                yield StoredObject(item["Key"][len(root) :], item["Size"], item["LastModified"])

    def why_unlistable(self) -> str | None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.list_objects_v2(Bucket=self.bucket, Prefix=self.prefix, MaxKeys=1)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            return f"{self.uri} cannot be listed: {error.get('Code')} ({error.get('Message')})"
        except BotoCoreError as exc:
            return f"{self.uri} cannot be reached: {exc}"
        return None

    def open_read(self, key: str) -> BinaryIO:
        return self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]

    def read_bytes(self, key: str) -> bytes:
        with self.open_read(key) as body:
            return body.read()

    def write_bytes(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def upload(self, key: str, stream: BinaryIO) -> None:
        self.client.upload_fileobj(stream, self.bucket, self._key(key))

    def stat(self, key: str) -> StoredObject | None:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except self.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return StoredObject(key, head["ContentLength"], head["LastModified"])

    def child(self, key: str) -> str:
        return f"{self.uri}/{inside_lake(key)}"

    def create_exclusive(self, key: str, data: bytes) -> bool:
        """Write `key` only if it does not exist (conditional put, If-None-Match: *); False when it does."""
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, IfNoneMatch="*")
        except self.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412", "ConditionalRequestConflict"):
                return False
            raise
        return True

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def move_tree(self, prefix: str, new_prefix: str) -> None:
        source = prefix.rstrip("/") + "/"
        for item in list(self.list(source)):
            new_key = new_prefix.rstrip("/") + "/" + item.key[len(source) :]
            self.client.copy_object(
                Bucket=self.bucket,
                Key=self._key(new_key),
                CopySource={"Bucket": self.bucket, "Key": self._key(item.key)},
            )
            self.client.delete_object(Bucket=self.bucket, Key=self._key(item.key))

    def delete_tree(self, prefix: str) -> None:
        for item in list(self.list(prefix.rstrip("/") + "/")):
            self.client.delete_object(Bucket=self.bucket, Key=self._key(item.key))


def open_store(uri: str, endpoint_url: str | None = None) -> Store:
    """The store for a local path, file:// URI or s3:// URI."""
    if uri.startswith("s3://"):
        return S3Store(uri, endpoint_url)
    return LocalStore(uri)


def spark_path(uri: str) -> str:
    """The same location as Spark's Hadoop filesystem names it (s3a:// for S3, file: for local)."""
    if uri.startswith("s3://"):
        return "s3a://" + uri[len("s3://") :]
    if uri.startswith("file://"):
        return uri
    return "file://" + str(Path(uri).resolve())


def delta_storage_options(uri: str, endpoint_url: str | None) -> dict[str, str] | None:
    """delta-rs storage options for an S3 location (credentials come from the usual AWS variables)."""
    if not uri.startswith("s3://"):
        return None
    # commits by conditional put (If-None-Match), never by unsafe rename: two writers of one table cannot both
    # write the same log version (README, "Concurrency")
    options = {"conditional_put": "etag"}
    if endpoint_url:
        options.update({"AWS_ENDPOINT_URL": endpoint_url, "AWS_ALLOW_HTTP": "true"})
    return options
