"""Zip members of a torch file: where each member's data lies, also in a torn zip.

A ``torch.save`` zip stores every member uncompressed (method 0), its data
64-byte aligned by padding in the local header's extra field, and sets flag bit 3
(sizes in a data descriptor after the data). :func:`read_zip_index` reads the
central directory, then each member's local header for the data offset. When the
directory is lost (a save cut short), it walks the local headers from the start
instead: a member's size comes from ``expected_sizes`` (the sizes the pickle
declares for its storages) or from the data descriptor found after the data.
Nothing here reads a member's data, except the small members whose size only a
data descriptor gives, which are checked against the descriptor's CRC.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO

LOCAL_SIG = b"PK\x03\x04"
CENTRAL_SIG = b"PK\x01\x02"
DESCRIPTOR_SIG = b"PK\x07\x08"
END_SIGS = (LOCAL_SIG, CENTRAL_SIG, b"PK\x06\x06", b"PK\x05\x06")
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_ZIP64_EXTRA = 0x0001
#: Largest member searched for its data descriptor when a torn zip gives no size.
MAX_DESCRIPTOR_SEARCH = 64 << 20
_SEARCH_CHUNK = 1 << 20


@dataclass(frozen=True)
class ZipMember:
    """One member of a zip file.

    Attributes:
        name: the member's name (``"archive/data/3"``).
        header_offset: offset of its local header.
        data_offset: offset of the first byte of its data.
        size: uncompressed size (bytes).
        compressed_size: bytes the data takes in the file.
        method: compression method (0 = stored).
        present: bytes of its data that lie inside the file (less than
            ``compressed_size`` when the file is cut short).
    """

    name: str
    header_offset: int
    data_offset: int
    size: int
    compressed_size: int
    method: int
    present: int


@dataclass
class ZipIndex:
    """The members found, whether the directory was lost, and what is wrong."""

    members: dict[str, ZipMember]
    salvaged: bool = False
    problems: list[str] = field(default_factory=list)


def _read_at(fh: IO[bytes], offset: int, n: int) -> bytes:
    fh.seek(offset)
    return fh.read(n)


def _local_header(fh: IO[bytes], offset: int) -> tuple[tuple[int, ...], str, bytes] | None:
    """``(fields, name, extra)`` of the local header at ``offset``, or None if there is none."""
    head = _read_at(fh, offset, _LOCAL.size)
    if len(head) < _LOCAL.size or head[:4] != LOCAL_SIG:
        return None
    fields = _LOCAL.unpack(head)
    nlen, xlen = fields[9], fields[10]
    rest = fh.read(nlen + xlen)
    if len(rest) < nlen + xlen:
        return None
    return fields, rest[:nlen].decode("utf-8", "replace"), rest[nlen:]


def _zip64_sizes(extra: bytes, usize: int, csize: int) -> tuple[int, int]:
    """Sizes from a zip64 extra field where the 32-bit ones are 0xFFFFFFFF."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + length]
        if tag == _ZIP64_EXTRA:
            vals = [struct.unpack_from("<Q", body, i)[0] for i in range(0, len(body) - 7, 8)]
            if usize == 0xFFFFFFFF and vals:
                usize = vals.pop(0)
            if csize == 0xFFFFFFFF and vals:
                csize = vals.pop(0)
            break
        pos += 4 + length
    return usize, csize


def _from_directory(fh: IO[bytes], file_size: int) -> ZipIndex | None:
    try:
        infos = zipfile.ZipFile(fh).infolist()
    except Exception:  # BadZipFile, OSError, struct errors of a torn directory
        return None
    index = ZipIndex({})
    for info in infos:
        local = _local_header(fh, info.header_offset)
        if local is None:
            index.problems.append(
                f"zip member {info.filename}: its local header at offset "
                f"{info.header_offset:,} is missing or damaged"
            )
            continue
        fields = local[0]
        start = info.header_offset + _LOCAL.size + fields[9] + fields[10]
        present = max(0, min(info.compress_size, file_size - start))
        index.members[info.filename] = ZipMember(
            info.filename, info.header_offset, start, info.file_size, info.compress_size,
            info.compress_type, present,
        )
    return index


def _find_descriptor(fh: IO[bytes], start: int, file_size: int) -> tuple[int, int] | None:
    """``(size, descriptor_length)`` of a member whose data starts at ``start``, or None.

    Searches forward for a data descriptor whose CRC and size match the bytes before it.
    Each byte is searched once and its CRC taken once (a running CRC), so data full of
    descriptor signatures costs linear time.
    """
    limit = min(file_size, start + MAX_DESCRIPTOR_SEARCH)
    fh.seek(start)
    data = bytearray()
    pos = start
    resume = 0  # where the search goes on: the first signature not yet fully read
    crc, crc_end = 0, 0  # CRC of data[:crc_end]
    while pos < limit:
        chunk = fh.read(min(_SEARCH_CHUNK, limit - pos))
        if not chunk:
            break
        data += chunk
        pos += len(chunk)
        at = data.find(DESCRIPTOR_SIG, resume)
        while at >= 0:
            if at + 24 > len(data) and pos < limit:
                break  # looked at again with the next chunk
            for width, fmt in ((24, "<4sIQQ"), (16, "<4sIII")):
                if at + width <= len(data):
                    _sig, want, csize, _usize = struct.unpack_from(fmt, data, at)
                    if csize == at:
                        with memoryview(data) as view:
                            crc = zlib.crc32(view[crc_end:at], crc)
                        crc_end = at
                        if want == crc:
                            return at, width
            at = data.find(DESCRIPTOR_SIG, at + 1)
        resume = at if at >= 0 else max(0, len(data) - len(DESCRIPTOR_SIG) + 1)
    return None


def _salvage(fh: IO[bytes], file_size: int, expected_sizes: Mapping[str, int]) -> ZipIndex:
    """Walk the local headers from the start of a zip whose directory is lost."""
    index = ZipIndex({}, salvaged=True)
    index.problems.append(
        "zip central directory unreadable (the file was cut short or damaged); "
        "members located through their local headers"
    )
    pos = 0
    while pos + _LOCAL.size <= file_size:
        local = _local_header(fh, pos)
        if local is None:
            break
        fields, name, extra = local
        flags, method, csize, usize = fields[2], fields[3], fields[7], fields[8]
        usize, csize = _zip64_sizes(extra, usize, csize)
        start = pos + _LOCAL.size + fields[9] + fields[10]
        descriptor: int | None = 0
        if flags & 0x08:
            known = expected_sizes.get(name)
            if known is not None and method == 0:
                usize = csize = known
                descriptor = -1  # length decided after the data
            else:
                found = _find_descriptor(fh, start, file_size)
                if found is None:
                    index.problems.append(
                        f"zip member {name}: size unknown (no data descriptor); "
                        "the members after it cannot be located"
                    )
                    break
                csize, descriptor = found
                usize = csize if method == 0 else usize
        if descriptor == -1 and start + csize <= file_size:
            descriptor = _descriptor_length(fh, start + csize)
            if descriptor is None:  # the declared size is wrong: find the real end
                found = _find_descriptor(fh, start, file_size)
                if found is not None:
                    csize, descriptor = found
                    usize = csize
        present = max(0, min(csize, file_size - start))
        index.members[name] = ZipMember(name, pos, start, usize, csize, method, present)
        end = start + csize
        if end > file_size or descriptor is None or descriptor < 0:
            break
        pos = end + descriptor
    return index


def _descriptor_length(fh: IO[bytes], at: int) -> int | None:
    """Length of the data descriptor at ``at`` (16 or 24 bytes, 0 if none), None if unclear."""
    head = _read_at(fh, at, 32)
    if head[:4] != DESCRIPTOR_SIG:
        return 0 if head[:4] in END_SIGS else None
    for width in (16, 24):
        if head[width : width + 4] in END_SIGS or len(head) == width:
            return width
    return None


def read_zip_directory(fh: IO[bytes], file_size: int) -> ZipIndex | None:
    """Locate every member's data through the central directory; None if it is unreadable."""
    return _from_directory(fh, file_size)


def salvage_zip(fh: IO[bytes], file_size: int,
                expected_sizes: Mapping[str, int] | None = None) -> ZipIndex:
    """Locate members by walking the local headers of a zip whose directory is lost.

    Members written with a data descriptor take their size from ``expected_sizes``
    (member name -> bytes) or from the descriptor itself. A problem says the
    directory was unreadable.
    """
    return _salvage(fh, file_size, expected_sizes or {})


def read_zip_index(
    fh: IO[bytes], file_size: int, expected_sizes: Mapping[str, int] | None = None
) -> ZipIndex:
    """Locate every member's data in a zip file (binary ``fh`` of ``file_size`` bytes).

    Reads the central directory; when it is unreadable, walks the local headers
    (:func:`salvage_zip`).
    """
    index = _from_directory(fh, file_size)
    if index is not None:
        return index
    return _salvage(fh, file_size, expected_sizes or {})
