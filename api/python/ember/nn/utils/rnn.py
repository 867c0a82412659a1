"""torch.nn.utils.rnn: batching sequences of different lengths."""

from typing import List, Optional, Sequence, Tuple, Union

from ember import _C
from ember._C import Tensor
from ember._C.nn import PackedSequence

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
           "unpack_sequence", "pad_sequence", "unpad_sequence", "invert_permutation"]


def invert_permutation(permutation: Optional[Tensor]) -> Optional[Tensor]:
    """The permutation that undoes `permutation` (None stays None), as a PackedSequence's
    unsorted_indices undo its sorted_indices."""
    if permutation is None:
        return None
    out = _C.empty_like(permutation)
    return out.scatter_(0, permutation, _C.arange(permutation.numel(), device=permutation.device))


def pack_padded_sequence(input: Tensor, lengths: Union[Tensor, Sequence[int]],
                         batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Packs a padded batch [L, N, *] ([N, L, *] with batch_first) of sequences lengths[n] long;
    with enforce_sorted=False the batch need not come longest first."""
    if not isinstance(lengths, Tensor):
        lengths = _C.tensor(list(lengths), dtype=_C.int64)
    return _C.nn._pack_padded_sequence(input, lengths, batch_first, enforce_sorted)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """(padded batch in the original order, lengths): pack_padded_sequence undone."""
    return _C.nn._pad_packed_sequence(sequence, batch_first, float(padding_value), total_length)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Packs sequences [L_i, *] of different lengths."""
    return _C.nn._pack_sequence(list(sequences), enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> List[Tensor]:
    """The sequences pack_sequence packed, each [L_i, *]."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def pad_sequence(sequences: Union[Tensor, Sequence[Tensor]], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Sequences [L_i, *] stacked into [max L, B, *] (or [B, max L, *] with batch_first), padded
    with padding_value after each one (before, with padding_side='left')."""
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    return _C._pad_sequence(list(sequences), batch_first, float(padding_value), padding_side)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> List[Tensor]:
    """The sequences pad_sequence padded, cut back to their lengths."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths)]
