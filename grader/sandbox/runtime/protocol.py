"""Frames that cross between the trusted process and the worker.

A frame is an 8-byte big-endian length followed by the bytes of `torch.save(obj)`.
Frames are read back with `torch.load(weights_only=True)`, so a frame can hold only
tensors, dtypes, devices and plain containers of str/int/float/bool/None: nothing the
worker sends can run code or carry a custom `__eq__` into the trusted process.
"""
import io
import os
import select
import struct
import time
import warnings
import zipfile

import torch

HEADER = struct.Struct(">Q")
MAX_FRAME_BYTES = 256 * 1024 * 1024


class ProtocolError(Exception):
    """The other side sent something that is not a well-formed frame, or went away."""


class FrameTimeout(ProtocolError):
    """No complete frame arrived before the deadline."""


def encode(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    payload = buffer.getvalue()
    return HEADER.pack(len(payload)) + payload


_EOCD = struct.Struct("<4sHHHHIIH")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")


def check_archive(payload, max_entries, max_pickle_bytes, max_storage_bytes):
    """Refuse a frame whose zip directory could make torch.load inflate, allocate or parse
    far more than a reply needs: too many entries, a compressed entry, a large pickle, or
    more tensor storage than `max_storage_bytes`. Looks at the directory only."""
    end = payload.rfind(b"PK\x05\x06", max(0, len(payload) - _EOCD.size - 65535))
    if end < 0 or end + _EOCD.size > len(payload):
        raise ProtocolError("unreadable frame: it is not a torch.save archive")
    _, _, _, _, entries, directory_size, directory_at, _ = _EOCD.unpack_from(payload, end)
    locator = end - _ZIP64_LOCATOR.size
    if locator >= 0 and payload[locator:locator + 4] == b"PK\x06\x07":
        _, _, at, _ = _ZIP64_LOCATOR.unpack_from(payload, locator)
        if at + _ZIP64_EOCD.size > len(payload) or payload[at:at + 4] != b"PK\x06\x06":
            raise ProtocolError("unreadable frame: a broken zip64 directory")
        fields = _ZIP64_EOCD.unpack_from(payload, at)
        entries, directory_size, directory_at = fields[7], fields[8], fields[9]
    if entries > max_entries or directory_size > max_entries * 1024 or directory_at > len(payload):
        raise ProtocolError(f"the frame holds {entries} entries, more than the {max_entries} allowed")
    try:
        infos = zipfile.ZipFile(io.BytesIO(payload)).infolist()
    except Exception as exc:  # a forged directory
        raise ProtocolError(f"unreadable frame: {type(exc).__name__}: {str(exc)[:200]}") from None
    if len(infos) > max_entries:
        raise ProtocolError(f"the frame holds {len(infos)} entries, more than the {max_entries} allowed")
    storage = 0
    pickles = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise ProtocolError("the frame holds a compressed entry; torch.save never writes one")
        if info.header_offset + info.file_size > len(payload):
            raise ProtocolError("the frame declares entries larger than the frame itself")
        if info.filename.endswith("data.pkl"):
            pickles += 1
            if info.file_size > max_pickle_bytes:
                raise ProtocolError(f"the frame's structure takes {info.file_size} bytes, more "
                                    f"than the {max_pickle_bytes} allowed")
        storage += info.file_size
    if pickles != 1:
        raise ProtocolError("unreadable frame: it is not a torch.save archive")
    if storage > max_storage_bytes + max_pickle_bytes + 4096:
        raise ProtocolError(f"the frame holds {storage} bytes of tensors, more than the "
                            f"{max_storage_bytes} allowed")


def decode(payload, archive=None):
    """`archive`: bounds for check_archive (the trusted side's reading of replies)."""
    if archive is not None:
        check_archive(payload, **archive)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.load(io.BytesIO(payload), weights_only=True, map_location="cpu")
    except Exception as exc:  # a forged or truncated pickle
        text = str(exc)
        if "Unsupported global" in text:
            name = text.split("Unsupported global:", 1)[1].split(" was not", 1)[0].strip()
            raise ProtocolError(f"it holds a {name.replace('GLOBAL ', '')} object; only plain "
                                f"tensors, numbers, strings and containers of them may cross") from None
        lines = text.strip().splitlines() or [""]
        raise ProtocolError(f"unreadable frame: {type(exc).__name__}: {lines[0][:300]}") from None


def write_frame(fd, obj):
    data = encode(obj)
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_exactly(fd, size, deadline):
    chunks, remaining = [], size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FrameTimeout("timed out")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise FrameTimeout("timed out")
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise ProtocolError("the other side closed the channel")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_payload(fd, timeout=None, max_bytes=MAX_FRAME_BYTES):
    """The bytes of one frame from `fd`, not decoded; `timeout` (seconds) bounds the read."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size, deadline))
    if size > max_bytes:
        raise ProtocolError(f"frame of {size} bytes is larger than the limit of {max_bytes}")
    return _read_exactly(fd, size, deadline)


def read_frame(fd, timeout=None, max_bytes=MAX_FRAME_BYTES):
    """Read one frame from `fd`; `timeout` (seconds) bounds the whole read."""
    return decode(read_payload(fd, timeout, max_bytes))
