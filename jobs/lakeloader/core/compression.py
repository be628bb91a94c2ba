"""Compressed export files: which compressions can be read, and decoding gzip files that may be damaged.

Spark reads `.gz`, `.bz2` and `.deflate` files by their suffix. Files in other common compressions would fail
the whole job (`.zst`, and `.lz4` as the lz4 tool writes it) or be read as lines of binary junk (`.xz`,
`.zip`, ...): `unsupported_compression` names them, and such a file is one quarantined message instead.

Spark's text reader also fails the whole job on a `.gz` file that is cut short or corrupt, and on any bytes
after its last member (zero padding too). So land checks every `.gz` file while it copies it and records the
damage in the ledger and the manifest; reading messages then salvages a damaged file here instead of
handing it to Spark.

What is trusted: every member whose trailer checks out, and the decoded prefix of a member that is cut short
(deflate decodes a prefix exactly). A member whose data is corrupt is dropped whole: a flipped bit can decode
to wrong bytes long before zlib notices, so none of that member's output can be trusted.
"""

from __future__ import annotations

import zlib

GZIP_SUFFIX = ".gz"
_GZIP_WBITS = 31  # zlib's window bits for data with a gzip header and trailer
_PIECE = 1 << 24  # most bytes decoded per zlib call, so a highly compressed member never decodes all at once
CORRUPT = "corrupt gzip member at byte {} ({})"
CUT_SHORT = "gzip member at byte {} is cut short"
UNSUPPORTED_SUFFIXES = (".7z", ".br", ".lz4", ".lzma", ".rar", ".xz", ".zip", ".zst", ".zstd")
UNSUPPORTED = "unsupported compression {}: the file was not read; export it uncompressed or as .gz"


def unsupported_compression(name: str) -> str | None:
    """Why a file of this name cannot be read (UNSUPPORTED), or None."""
    suffix = next((s for s in UNSUPPORTED_SUFFIXES if name.lower().endswith(s)), None)
    return UNSUPPORTED.format(suffix) if suffix else None


class GzipStream:
    """Decodes a gzip file fed in pieces, member after member (as gzip and Spark read concatenated members).

    With `keep=False` (land's check) nothing decoded is kept; with `keep=True`, `trusted` holds the bytes
    the module docstring trusts. `close()` names the damage, None for an intact file. An empty file is
    intact: Spark reads it as no lines.
    """

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.trusted = bytearray()
        self._pending: list[bytes] = []  # the current member's output, trusted once its trailer checks out
        self._member = zlib.decompressobj(_GZIP_WBITS)
        self._member_at = 0  # where the current member starts in the file
        self._fed = 0
        self.error: str | None = None

    def feed(self, data: bytes) -> None:
        start = self._fed
        self._fed += len(data)
        while self.error is None:
            try:
                decoded = self._member.decompress(data, _PIECE)
            except zlib.error as error:
                self._pending.clear()
                self.error = CORRUPT.format(self._member_at, error)
                return
            if self.keep:
                self._pending.append(decoded)
            if self._member.eof:
                start += len(data) - len(self._member.unused_data)
                data = self._member.unused_data
                self._end_member(start)
                if not data:
                    return
            else:
                start += len(data) - len(self._member.unconsumed_tail)
                data = self._member.unconsumed_tail
                if not data and len(decoded) < _PIECE:
                    return

    def close(self) -> str | None:
        """The damage of the file fed so far (None when it ends where a member ends)."""
        if self.error is None and self._fed > self._member_at:
            if self.keep:
                self._pending.append(self._member.flush())
                self.trusted += b"".join(self._pending)
            self.error = CUT_SHORT.format(self._member_at)
        return self.error

    def _end_member(self, end: int) -> None:
        self.trusted += b"".join(self._pending)
        self._pending.clear()
        self._member = zlib.decompressobj(_GZIP_WBITS)
        self._member_at = end


def salvage(data: bytes) -> tuple[bytes, str | None]:
    """A whole file's trusted decoded bytes and its damage (None for an intact file)."""
    stream = GzipStream(keep=True)
    stream.feed(data)
    error = stream.close()
    return bytes(stream.trusted), error
