"""Templates in object storage (``s3://bucket/key``), read as warily as files on disk.

The work splits the way it does for files:

- The driver lists (``list_templates``, called by ``discovery.discover``): ListObjectsV2 pages
  carry keys and sizes, never a body, so a hostile object costs the driver nothing. Keys are kept
  by the same name rules as a folder walk (``template_names.is_template_name`` and
  ``template_names.is_skipped_folder``). A URL is one object when that object exists (a HEAD, no
  body), and otherwise a folder: the keys under ``key/``.
- Whoever parses reads (``read_object``, called by ``parse.pipeline.read_and_parse`` in a parsing
  worker or on a Spark executor): one GET per object, so the driver never holds a template's
  bytes. The size cap is checked on the response's Content-Length before a byte of the body is
  read (the stream is closed unread), and enforced again while reading, as ``reading.read_bytes``
  does for a file.
- Every failure becomes what the rest of the audit already handles: a listing that fails is an
  ``ObjectStoreError`` (a usage error: the run has not started, and a wrong URL or missing
  credentials must not look like a clean fleet); an object that cannot be read is a
  ``reading.ReadError`` or ``reading.SkippedFile`` (one QR901, and the rest of the fleet is still
  judged). No botocore exception leaves this module.

Clients use boto3's credential chain and configuration, as any AWS tool does (environment,
shared config and credentials files, instance or container roles). The endpoint too: boto3 reads
``AWS_ENDPOINT_URL_S3``, then ``AWS_ENDPOINT_URL``, then ``endpoint_url`` in the shared config
(``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` turns them off), so nothing here names one. There is
one client per process id: parsing workers are forked, and a client inherited across a fork
would share its connection pool's sockets with the parent. boto3 is imported inside functions:
the in-app validation plugin imports this package where boto3 may not be installed, and never
reads ``s3://`` URLs.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from constructs_lib.audit import optional
from constructs_lib.audit.inputs import template_names
from constructs_lib.audit.inputs.reading import ReadError, over_cap
from constructs_lib.audit.safety import DEFAULT_LIMITS, ReadLimits

SCHEME = "s3://"
# Bytes asked of the stream at a time: few calls for a template, little memory past the cap.
_CHUNK = 1 << 20

# A GET or HEAD on a missing key; HEAD has no body, so no error code beyond the status.
_MISSING_KEY = {"NoSuchKey", "404", "NotFound"}
_DENIED = {"AccessDenied", "AllAccessDisabled", "403"}
_BAD_CREDENTIALS = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
}
_ENDPOINT_FIX = (
    "check AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_S3 (unset both for AWS itself) and the network"
)
_CREDENTIALS_FIX = (
    "give credentials as for the AWS CLI (AWS_PROFILE, AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or an instance or container role)"
)


class ObjectStoreError(ValueError):
    """An ``s3://`` input that cannot be listed; the message names the URL, the reason and the
    fix. A usage error: nothing has been audited yet."""


def is_object_url(text: str) -> bool:
    """Whether an input path is an object-storage URL rather than a local path."""
    return text.startswith(SCHEME)


def _split(url: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key); the key may be empty (the whole bucket)."""
    bucket, _slash, key = url.removeprefix(SCHEME).partition("/")
    if not is_object_url(url) or not bucket:
        raise ValueError(f"not an s3:// URL with a bucket: {url!r}")
    return bucket, key


_lock = threading.Lock()
_cached: tuple[int, Any] | None = None


def _forget_in_child() -> None:
    """After a fork: a lock another thread of the parent held would stay held here forever."""
    global _lock, _cached
    _lock = threading.Lock()
    _cached = None


os.register_at_fork(after_in_child=_forget_in_child)


def _client() -> Any:
    """This process's S3 client, made on first use (clients are thread-safe; making one is not).

    Keyed by process id: a forked worker finds its parent's client here and must not use it (the
    two would read each other's responses from shared sockets), so it makes its own. A new
    Session each time, not boto3's module-level default one, which a fork would share too.
    """
    global _cached
    with _lock:
        if _cached is None or _cached[0] != os.getpid():
            boto3 = optional.require("boto3", "reading s3:// URLs")

            _cached = (os.getpid(), boto3.session.Session().client("s3"))
        return _cached[1]


def _botocore_errors() -> tuple[type[Exception], type[Exception]]:
    """(ClientError, BotoCoreError): every exception botocore raises is one of the two."""
    exceptions = optional.require("botocore.exceptions", "reading s3:// URLs")
    return exceptions.ClientError, exceptions.BotoCoreError


def _code(error: Exception) -> str:
    response = getattr(error, "response", None)
    details = response.get("Error", {}) if isinstance(response, dict) else {}
    return str(details.get("Code") or type(error).__name__)


def _status(error: Exception) -> object:
    response = getattr(error, "response", None)
    return response.get("ResponseMetadata", {}).get("HTTPStatusCode") if response else None


def _aws_reason(error: Exception) -> str:
    """The AWS error code and its message, or botocore's exception name and text."""
    response = getattr(error, "response", None)
    if isinstance(response, dict):
        message = response.get("Error", {}).get("Message")
        return f"{_code(error)} ({message})" if message else _code(error)
    return f"{type(error).__name__} ({error})"


def _listing_fix(error: Exception) -> str:
    code = _code(error)
    if code == "NoSuchBucket":
        return (
            "check the bucket's name, and that the endpoint (AWS_ENDPOINT_URL, "
            "AWS_ENDPOINT_URL_S3) and the account are where it lives"
        )
    if code in _DENIED:
        return (
            "the credentials in use need s3:ListBucket on the bucket and s3:GetObject on its "
            "objects"
        )
    if code in _BAD_CREDENTIALS:
        return f"the credentials in use were refused: {_CREDENTIALS_FIX}"
    name = type(error).__name__
    if "Credential" in name or "Profile" in name:  # NoCredentialsError, ProfileNotFound, ...
        return _CREDENTIALS_FIX
    if "Connect" in name or "Timeout" in name:  # EndpointConnectionError, ConnectTimeoutError
        return _ENDPOINT_FIX
    return "check the URL, the credentials and the endpoint"


def _store_error(url: str, error: Exception) -> ObjectStoreError:
    return ObjectStoreError(f"cannot list {url}: {_aws_reason(error)}; {_listing_fix(error)}")


def list_templates(url: str, page_size: int = 1000) -> list[tuple[str, str]]:
    """The templates at ``url`` as ``(s3://bucket/key, stack name)``, without reading a body.

    ``s3://bucket/key`` is that one object when it exists (kept whatever its name, as a file
    given by path is); otherwise, and for ``s3://bucket/prefix/`` or ``s3://bucket``, every key
    under the folder-like prefix that a folder walk would keep. ``page_size`` keys per request.
    ObjectStoreError when the bucket cannot be listed.
    """
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, not {page_size}")
    try:
        bucket, key = _split(url)
    except ValueError as error:
        raise ObjectStoreError(
            f"cannot list {url}: not a bucket URL; give s3://BUCKET/PREFIX/ or s3://BUCKET/KEY"
        ) from error
    try:
        client_error, botocore_error = _botocore_errors()
    except optional.MissingExtra as error:
        raise ObjectStoreError(f"cannot list {url}: {error}") from error
    try:
        client = _client()  # may fail too: an AWS_PROFILE that names no profile
        if key and not key.endswith("/"):
            try:
                client.head_object(Bucket=bucket, Key=key)
            except client_error as error:
                # 404: no such object, so a folder. 403: without s3:ListBucket S3 answers 403
                # for a missing key too; the listing below says what is wrong, if anything.
                if _status(error) not in (403, 404):
                    raise
            else:
                return [(f"{SCHEME}{bucket}/{key}", _stack_name(key))]
            key += "/"  # "fleet" is the folder fleet/, not also fleet-old/ or fleet.json
        found: list[tuple[str, str]] = []
        pages = client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=key, PaginationConfig={"PageSize": page_size}
        )
        for page in pages:
            for entry in page.get("Contents", []):
                name: str = entry["Key"]
                *folders, base = name[len(key) :].split("/")
                if template_names.is_template_name(base) and not any(
                    template_names.is_skipped_folder(folder) for folder in folders
                ):
                    found.append((f"{SCHEME}{bucket}/{name}", _stack_name(name)))
        return found
    except (client_error, botocore_error) as error:
        raise _store_error(url, error) from None


def _stack_name(key: str) -> str:
    return template_names.stack_name_for(key.rsplit("/", 1)[-1])


def _read_error(error: Exception) -> ReadError:
    code = _code(error)
    if code in _MISSING_KEY:
        return ReadError(
            f"cannot read the object: it no longer exists ({code}: deleted after it was listed)"
        )
    if code == "NoSuchBucket":
        return ReadError(
            "cannot read the object: its bucket no longer exists "
            "(NoSuchBucket: deleted after it was listed)"
        )
    return ReadError(f"cannot read the object: {_aws_reason(error)}")


def read_object(url: str, limits: ReadLimits = DEFAULT_LIMITS) -> bytes:
    """The object's bytes, from one GET; ReadError when it cannot be read, SkippedFile when it is
    over ``limits.max_file_bytes`` (its body is then not read)."""
    try:
        bucket, key = _split(url)
    except ValueError as error:
        raise ReadError(f"cannot read the object: {error}") from None
    try:
        client_error, botocore_error = _botocore_errors()
    except optional.MissingExtra as error:
        raise ReadError(f"cannot read the object: {error}") from error
    import urllib3  # botocore's own HTTP layer (installed with it); its errors may surface

    failures = (client_error, botocore_error, urllib3.exceptions.HTTPError, OSError)
    try:
        response = _client().get_object(Bucket=bucket, Key=key)
    except failures as error:
        raise _read_error(error) from None
    body = response["Body"]
    try:
        # An object replaced since the listing is judged by what this GET returns.
        length = response.get("ContentLength")
        if isinstance(length, int) and length > limits.max_file_bytes:
            raise over_cap(limits, f"not read: the object has {length:,} bytes")
        chunks: list[bytes] = []
        total = 0
        while True:
            # Never more than one byte past the cap, whatever Content-Length claimed.
            chunk: bytes = body.read(min(_CHUNK, limits.max_file_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limits.max_file_bytes:
                raise over_cap(
                    limits, "not read to the end: the object's body ran past the size cap"
                )
        return b"".join(chunks)
    except ReadError:  # an OSError too: not to be rewritten below
        raise
    except failures as error:
        raise _read_error(error) from None
    finally:
        # Closing an unread stream drops its connection rather than draining the body.
        body.close()


def put_object(url: str, data: bytes) -> None:
    """Write one object (a findings part, a run's summary). A failure is an OSError naming the
    URL and the AWS reason: output that cannot be written makes a run that did not finish."""
    bucket, key = _split(url)
    client_error, botocore_error = _botocore_errors()
    try:
        _client().put_object(Bucket=bucket, Key=key, Body=data)
    except (client_error, botocore_error) as error:
        raise OSError(f"cannot write {url}: {_aws_reason(error)}") from None
