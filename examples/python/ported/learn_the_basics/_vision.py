"""What the "Learn the Basics" pages import from torchvision, for the ported pages (torchvision is
not used): the transforms ``ToTensor`` and ``Lambda`` as plain code (Ember has no transforms
module), ``read_image`` of torchvision.io for 8-bit PNG files, and ``write_png``, the PNG writer
that the tests and ``_pyplot.py`` use to make such files."""

import os
import struct
import zlib

import numpy as np

import ember


class ToTensor:
    """torchvision.transforms.ToTensor: an [H, W] or [H, W, C] uint8 image (a tensor or a NumPy
    array) as float32 [C, H, W] scaled to [0, 1]."""

    def __call__(self, pic):
        image = ember.as_tensor(np.asarray(pic)) if not isinstance(pic, ember.Tensor) else pic
        if image.dim() == 2:
            image = image.unsqueeze(-1)
        return image.permute(2, 0, 1).contiguous().to(ember.float32).div(255)

    def __repr__(self):
        return "ToTensor()"


class Lambda:
    """torchvision.transforms.Lambda: applies a function."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, x):
        return self.lambd(x)

    def __repr__(self):
        return "Lambda()"


_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # PNG colour type -> channels (grey, RGB, grey+alpha, RGBA)


def read_image(path):
    """torchvision.io.read_image for 8-bit, non-interlaced PNG files: uint8 [C, H, W]."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise RuntimeError(f"{path}: not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or interlace or colour not in _CHANNELS:
        raise RuntimeError(f"{path}: only 8-bit non-interlaced grey or RGB(A) PNG files are read")
    channels = _CHANNELS[colour]
    stride = width * channels
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), np.int32)
    prior = np.zeros(stride, np.int32)
    for y in range(height):
        kind, row = raw[y, 0], raw[y, 1:].astype(np.int32)
        line = np.zeros(stride, np.int32)
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prior[x]
            c = prior[x - channels] if x >= channels else 0
            if kind == 0:
                pred = 0
            elif kind == 1:
                pred = a
            elif kind == 2:
                pred = b
            elif kind == 3:
                pred = (a + b) // 2
            else:  # Paeth
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            line[x] = (row[x] + pred) & 0xFF
        out[y] = prior = line
    pixels = out.astype(np.uint8).reshape(height, width, channels).transpose(2, 0, 1)
    return ember.from_numpy(np.ascontiguousarray(pixels))


def write_png(path, pixels):
    """Writes uint8 pixels, [H, W] (grey) or [H, W, 3] (RGB), as a PNG file."""
    pixels = np.ascontiguousarray(pixels, np.uint8)
    raw = b"".join(b"\0" + row.tobytes() for row in pixels)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", pixels.shape[1], pixels.shape[0], 8,
                         0 if pixels.ndim == 2 else 2, 0, 0, 0)
    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
                + chunk(b"IEND", b""))
