"""ember.Size, the shape of a tensor: a tuple of ints, as torch.Size. Defined in Python so that
type checkers see it; ember._C makes its instances. Importing it imports nothing else."""

from typing import Iterable, SupportsIndex, Tuple, Union, overload


class Size(Tuple[int, ...]):
    """The shape of a tensor: a tuple of ints, as torch.Size."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ember.Size([" + ", ".join(str(s) for s in self) + "])"

    def numel(self) -> int:
        """The number of elements a tensor of this shape has."""
        n = 1
        for s in self:
            n *= s
        return n

    @overload  # type: ignore[override]
    def __getitem__(self, i: SupportsIndex) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> "Size": ...

    def __getitem__(self, i: Union[SupportsIndex, slice]) -> Union[int, "Size"]:
        if isinstance(i, slice):
            return Size(tuple.__getitem__(self, i))
        return tuple.__getitem__(self, i)

    def __add__(self, other: Iterable[int]) -> "Size":  # type: ignore[override]
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other: Iterable[int]) -> "Size":
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (Size, (tuple(self),))


Size.__module__ = "ember"
