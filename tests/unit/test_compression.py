"""Compressed exports (lakeloader.core.compression): which compressions are refused, and for damaged gzip files which
decoded bytes are trusted and how the damage is named, whatever the pieces the file arrives in."""

from __future__ import annotations

import gzip
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from lakeloader.core.compression import CORRUPT, CUT_SHORT, UNSUPPORTED, GzipStream, salvage, unsupported_compression

FIRST = b"".join(b'{"id": %d}\n' % i for i in range(3000))
SECOND = b"".join(b'{"id": %d, "more": true}\n' % i for i in range(3000))
MEMBERS = gzip.compress(FIRST, mtime=0) + gzip.compress(SECOND, mtime=0)
SECOND_AT = len(gzip.compress(FIRST, mtime=0))


def fed_in_pieces(data: bytes, cuts: list[int], keep: bool) -> tuple[bytes, str | None]:
    stream = GzipStream(keep=keep)
    bounds = [0, *sorted(cuts), len(data)]
    for start, end in pairwise(bounds):
        stream.feed(data[start:end])
    error = stream.close()
    return bytes(stream.trusted), error


@given(st.lists(st.integers(0, len(MEMBERS)), max_size=12))
def test_intact_concatenated_members_decode_whole_whatever_the_pieces(cuts):
    assert fed_in_pieces(MEMBERS, cuts, keep=True) == (FIRST + SECOND, None)
    assert fed_in_pieces(MEMBERS, cuts, keep=False) == (b"", None)  # land's check keeps nothing


@given(st.integers(1, len(MEMBERS) - 1).filter(lambda n: n != SECOND_AT), st.lists(st.integers(0, 200), max_size=4))
def test_a_file_cut_short_anywhere_keeps_an_exact_prefix_and_names_the_cut_member(length, cuts):
    trusted, error = fed_in_pieces(MEMBERS[:length], [c for c in cuts if c < length], keep=True)

    assert (FIRST + SECOND).startswith(trusted)
    assert error == CUT_SHORT.format(0 if length < SECOND_AT else SECOND_AT)
    if length > SECOND_AT:
        assert trusted.startswith(FIRST)


def test_a_file_cut_where_a_member_ends_is_intact():
    assert salvage(MEMBERS[:SECOND_AT]) == (FIRST, None)


def test_a_corrupt_member_is_dropped_whole_and_earlier_members_are_kept():
    flipped = bytearray(MEMBERS)
    flipped[SECOND_AT + 2000] ^= 0x55  # inside the second member's deflate data

    trusted, error = salvage(bytes(flipped))

    assert trusted == FIRST
    assert error is not None and error.startswith(f"corrupt gzip member at byte {SECOND_AT} (")


def test_bytes_after_the_last_member_are_damage_named_by_their_offset():
    for tail in (bytes(8), b"junk after the gzip data"):
        assert salvage(MEMBERS + tail) == (
            FIRST + SECOND,
            CORRUPT.format(len(MEMBERS), "Error -3 while decompressing data: incorrect header check"),
        )


def test_an_empty_file_is_intact_and_a_plain_text_file_is_corrupt_from_byte_zero():
    assert salvage(b"") == (b"", None)
    trusted, error = salvage(b'{"id": 1}\n')
    assert trusted == b"" and error is not None and error.startswith("corrupt gzip member at byte 0 (")


def test_a_highly_compressed_member_decodes_in_bounded_pieces():
    zeros = gzip.compress(bytes(40 << 20), mtime=0)  # 40 MiB of zeros in about 40 KiB

    assert salvage(zeros) == (bytes(40 << 20), None)


def test_compressions_spark_cannot_read_are_named_and_readable_ones_are_not():
    assert [unsupported_compression(n) for n in ("a.json.zst", "b.JSON.ZIP", "c.bin.lz4", "d.xz")] == [
        UNSUPPORTED.format(".zst"),
        UNSUPPORTED.format(".zip"),
        UNSUPPORTED.format(".lz4"),
        UNSUPPORTED.format(".xz"),
    ]
    assert [unsupported_compression(n) for n in ("a.json", "b.json.gz", "c.csv.bz2", "d.deflate", "e.bin")] == [
        None
    ] * 5
