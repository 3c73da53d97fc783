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


def decode(payload):
    try:
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


def read_frame(fd, timeout=None, max_bytes=MAX_FRAME_BYTES):
    """Read one frame from `fd`; `timeout` (seconds) bounds the whole read."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size, deadline))
    if size > max_bytes:
        raise ProtocolError(f"frame of {size} bytes is larger than the limit of {max_bytes}")
    return decode(_read_exactly(fd, size, deadline))
