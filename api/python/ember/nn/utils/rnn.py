"""torch.nn.utils.rnn: batching sequences of different lengths."""

from typing import List, Sequence, Union

from ember import _C
from ember._C import Tensor

__all__ = ["pad_sequence", "unpad_sequence"]


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
