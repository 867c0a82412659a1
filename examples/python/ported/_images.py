"""torchvision.utils.save_image for the ported scripts (torchvision is not used): a grid of
[N, C, H, W] images (C = 1 or 3) written as an 8-bit PNG with the standard library."""

import os
import struct
import zlib

import numpy as np


def save_image(t, fp, nrow=8, padding=2, normalize=False, value_range=None, pad_value=0.0):
    """Writes the images of `t` side by side, `nrow` per row, to the PNG file `fp`; with
    `normalize`, scaled from their range (or `value_range`) to [0, 1] first."""
    x = t.detach().float().numpy()
    if x.ndim == 3:
        x = x[None]
    if normalize:
        lo, hi = value_range if value_range is not None else (x.min(), x.max())
        x = (x - lo) / max(hi - lo, 1e-5)
    x = (np.clip(x, 0, 1) * 255 + 0.5).astype(np.uint8)
    n, c, h, w = x.shape
    rows = (n + nrow - 1) // nrow
    cols = min(n, nrow)
    grid = np.full((c, rows * (h + padding) + padding, cols * (w + padding) + padding),
                   int(pad_value * 255), np.uint8)
    for i in range(n):
        r, k = divmod(i, nrow)
        top, left = padding + r * (h + padding), padding + k * (w + padding)
        grid[:, top:top + h, left:left + w] = x[i]
    pixels = grid[0] if c == 1 else grid.transpose(1, 2, 0)
    raw = b"".join(b"\0" + row.tobytes() for row in pixels)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", pixels.shape[1], pixels.shape[0], 8, 0 if c == 1 else 2, 0, 0, 0)
    os.makedirs(os.path.dirname(os.fspath(fp)) or ".", exist_ok=True)
    with open(fp, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
                + chunk(b"IEND", b""))
