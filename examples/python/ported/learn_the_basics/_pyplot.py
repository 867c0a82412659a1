"""matplotlib.pyplot for the ported "Learn the Basics" pages where matplotlib is missing: the
calls they make (figure, add_subplot, title, axis, imshow, show), each shown figure written as
``figure<N>.png`` in the working directory: its images side by side, each scaled to [0, 255]."""

import numpy as np

from _vision import write_png

_images = []
_shown = 0


class _Figure:
    def __init__(self, figsize=None):
        self.figsize = figsize

    def add_subplot(self, *args, **kwargs):
        return self


def figure(figsize=None, **kwargs):
    """A new figure (its images are those imshow draws until show)."""
    _images.clear()
    return _Figure(figsize)


def title(label, **kwargs):
    """Titles are not drawn."""


def axis(*args, **kwargs):
    """Axes are not drawn."""


def imshow(image, cmap=None, **kwargs):
    """Adds a 2-d image (a tensor or an array) to the figure."""
    pixels = np.asarray(image.numpy() if hasattr(image, "numpy") else image, np.float64)
    lo, hi = pixels.min(), pixels.max()
    _images.append(((pixels - lo) / max(hi - lo, 1e-12) * 255 + 0.5).astype(np.uint8))


def show(*args, **kwargs):
    """Writes the figure's images, in a row, to figure<N>.png."""
    global _shown
    if not _images:
        return
    _shown += 1
    height = max(i.shape[0] for i in _images)
    row = np.concatenate([np.pad(i, ((0, height - i.shape[0]), (0, 2))) for i in _images], axis=1)
    write_png(f"figure{_shown}.png", row)
    _images.clear()
