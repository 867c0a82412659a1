"""NumPy and PyTorch interop without copies: from_numpy / .numpy() share memory, and DLPack moves
tensors between Ember, NumPy and PyTorch (where it is installed) in both directions.

    python examples/python/interop.py
"""

import numpy as np

import ember


def main():
    # NumPy -> Ember: the same memory.
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.from_numpy(array)
    array[0, 0] = 100.0
    print("Ember sees NumPy's write:", t[0, 0].item())

    # Ember -> NumPy: .numpy() and the DLPack protocol both share memory.
    view = t.numpy()
    t.mul_(2)
    print("NumPy sees Ember's in-place op:", view[0])
    via_dlpack = np.from_dlpack(ember.tensor([True, False, True]))
    print("a bool tensor through DLPack:", via_dlpack, via_dlpack.dtype)

    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: skipping the PyTorch half")
        return
    # PyTorch -> Ember -> PyTorch, still one buffer.
    p = torch.linspace(0, 1, 5)
    e = ember.from_dlpack(p)
    e.add_(1)
    print("PyTorch sees Ember's write:", p.tolist())
    back = torch.from_dlpack(ember.nn.functional.softmax(e, dim=0))
    print("softmax computed by Ember, read by PyTorch:", back.sum().item())


if __name__ == "__main__":
    main()
