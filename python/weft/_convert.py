"""Arrow record batches to dicts of torch tensors.

- integer, floating and boolean columns → 1-D tensors (uint16/uint32 widen
  to int32/int64; uint64 becomes int64 when its values fit);
- fixed-size lists of those (nested too) and fixed-shape tensors →
  tensors of shape (rows, *shape);
- fixed-size binary values of L bytes → ``uint8 [rows, L]`` (one copy out
  of the Arrow buffer, or a view with ``views=True``); a variable-size
  binary column whose values all have one length becomes one with
  ``weft.fixed_size_binary`` (no copy), e.g. in ``transform_fn``;
- variable-size lists of numbers → a list of 1-D tensors;
- video windows (the struct the server sends for a ``weft.Video`` window,
  _video.py) → ``uint8 [rows, T, H, W, 3]`` RGB, decoded here (a
  normalised window: float32, float16 or bfloat16, its ``dtype``);
- strings, binary and everything else → Python lists.

Nulls: floats become NaN; a null in an integer, boolean or list column has
no tensor value and raises, naming the column (fill it in ``transform_fn``).
Tensors own their memory (one copy out of the Arrow buffers), so a trainer
may modify them in place. With ``views=True`` (host-slot delivery,
``TrainLoader(delivery="shm")``), integer and floating columns and
fixed-size lists of them without nulls (and not widened) are instead views
on the batch's buffers (no copy; ``tensor.data_ptr()`` lies in the buffer),
valid as long as those buffers are; writing into them writes into those
buffers (on a host slot: a private copy-on-write page of the ring's
mapping, _slots.py, dropped when the step is released); booleans (bit-packed in Arrow),
widened types and columns with nulls are still copied, variable-size binary
and strings are copied once (into Python objects); fixed-size binary
columns are views too.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from ._errors import InvalidArgument
from ._video import is_video_window

if TYPE_CHECKING:
    from ._video import VideoDecoder

Batch = dict[str, Any]

_WIDEN = {pa.uint16(): np.int32, pa.uint32(): np.int64}

# views=True wraps Arrow memory that numpy flags read-only (pyarrow marks
# every zero-copy array so) on purpose: on a host slot the memory is a
# copy-on-write mapping, writable and private to the process (_slots.py);
# torch warns about the flag once per process. Silence it for the calls
# made from this module only.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning,
                        module=__name__)


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _no_nulls(name: str, arr: pa.Array) -> None:
    if arr.null_count:
        raise InvalidArgument(f"column {name!r} has {arr.null_count} nulls, which a {arr.type} tensor cannot hold; "
                              "fill them (pyarrow.compute.fill_null) in transform_fn or in the table")


def _numbers(name: str, arr: pa.Array, views: bool = False) -> np.ndarray:
    """A writable numpy copy of a numeric Arrow array; with views, a view
    of its buffer where Arrow's layout is numpy's (flagged read-only by
    pyarrow; the tensor made from it writes into the buffer)."""
    t = arr.type
    if views and not arr.null_count and t not in _WIDEN and t != pa.uint64() and not pa.types.is_boolean(t):
        return arr.to_numpy(zero_copy_only=True)
    if arr.null_count:
        if pa.types.is_floating(t):
            arr = pc.fill_null(arr, float("nan"))
        else:
            _no_nulls(name, arr)
    out = arr.to_numpy(zero_copy_only=False)
    if t in _WIDEN:
        return out.astype(_WIDEN[t])
    if t == pa.uint64():
        if len(out) and int(out.max()) >= 1 << 63:
            raise InvalidArgument(f"column {name!r}: uint64 values above 2^63-1 do not fit a torch tensor; "
                                  "cast the column in transform_fn")
        return out.astype(np.int64)
    return np.array(out, copy=True) if not out.flags.writeable else out


def _fixed(name: str, arr: pa.Array, views: bool = False) -> np.ndarray | None:
    """(rows, *shape) numbers of a (nested) fixed-size list, or None if its
    leaves are not numbers."""
    shape = [len(arr)]
    values: pa.Array = arr
    while pa.types.is_fixed_size_list(values.type):
        _no_nulls(name, values)
        shape.append(values.type.list_size)
        values = values.flatten()  # honours the slice offset
    if not _is_number(values.type):
        return None
    return _numbers(name, values, views).reshape(shape)


def _fixed_binary(name: str, arr: pa.Array, views: bool = False) -> np.ndarray:
    """uint8 (rows, L) of a fixed-size binary array: a view on its value
    buffer with views, else one copy."""
    _no_nulls(name, arr)
    width = arr.type.byte_width
    data = arr.buffers()[1]
    flat = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    out = flat[arr.offset * width:(arr.offset + len(arr)) * width].reshape(len(arr), width)
    return out if views else np.array(out, copy=True)


def fixed_size_binary(arr: Union[pa.Array, pa.ChunkedArray], name: str = "column") -> pa.FixedSizeBinaryArray:
    """The values of a binary (or large binary) array that all have one
    length L, as a ``fixed_size_binary(L)`` array on the same memory (no
    copy): ``to_tensors`` turns it into ``uint8 [rows, L]`` with one copy at
    most (none on host slots). Raises ``InvalidArgument`` if the values have
    different lengths or there are nulls. A fixed-size binary array is
    returned as it is."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_fixed_size_binary(arr.type):
        return arr
    if not (pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type)):
        raise InvalidArgument(f"fixed_size_binary: {name!r} is {arr.type}, not binary")
    _no_nulls(name, arr)
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if pa.types.is_large_binary(arr.type) else np.int32)
    offsets = offsets[arr.offset:arr.offset + n + 1]
    width = int(offsets[1] - offsets[0]) if n else 0
    if n and width == 0 and offsets[-1] == offsets[0]:
        raise InvalidArgument(f"fixed_size_binary: {name!r} holds only empty values")
    if n and np.any(np.diff(offsets) != width):
        lengths = np.unique(np.diff(offsets))
        raise InvalidArgument(f"fixed_size_binary: {name!r} has values of {len(lengths)} lengths "
                              f"({', '.join(map(str, lengths[:4]))}{', …' if len(lengths) > 4 else ''}), not one")
    start = int(offsets[0]) if n else 0
    data = arr.buffers()[2].slice(start, n * width) if n else pa.py_buffer(b"")
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(max(width, 1)), n, [None, data])


def column(name: str, arr: Union[pa.Array, pa.ChunkedArray], views: bool = False) -> Any:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if _is_number(t):
        return torch.from_numpy(_numbers(name, arr, views))
    if pa.types.is_fixed_size_list(t):
        nd = _fixed(name, arr, views)
        if nd is not None:
            return torch.from_numpy(nd)
    if pa.types.is_fixed_size_binary(t):
        return torch.from_numpy(_fixed_binary(name, arr, views))
    if isinstance(t, pa.FixedShapeTensorType):
        _no_nulls(name, arr)
        return torch.from_numpy(np.array(arr.to_numpy_ndarray(), copy=True))
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and _is_number(t.value_type):
        _no_nulls(name, arr)
        offsets = arr.offsets.to_numpy()
        flat = torch.from_numpy(_numbers(name, arr.flatten()))
        return [flat[offsets[i] - offsets[0]:offsets[i + 1] - offsets[0]] for i in range(len(arr))]
    return arr.to_pylist()


def to_tensors(batch: Union[pa.RecordBatch, pa.Table], decoder: Optional["VideoDecoder"] = None,
               views: bool = False) -> Batch:
    """{column name: tensor or list} of a record batch (or table). Video
    windows are decoded by ``decoder`` (default: one in this thread). With
    ``views``, numeric and fixed-size-list columns are views on the
    batch's memory (module docstring)."""
    out: Batch = {}
    for i, name in enumerate(batch.schema.names):
        arr = batch.column(i)
        if is_video_window(arr.type):
            if decoder is None:
                from ._video import VideoDecoder

                decoder = VideoDecoder(threads=1)
            frames, dtype = decoder.frames(name, arr)
            if dtype == "bfloat16":  # its bits; int16 as torch < 2.3 has no uint16
                out[name] = torch.from_numpy(frames.view(np.int16)).view(torch.bfloat16)
            else:
                out[name] = torch.from_numpy(frames)
        else:
            out[name] = column(name, arr, views)
    return out


def convert(result: Any, decoder: Optional["VideoDecoder"] = None, views: bool = False) -> Any:
    """What a transform_fn result becomes: Arrow batches and tables → dicts of
    tensors; in a dict, numpy arrays → tensors; anything else as it is."""
    if isinstance(result, (pa.RecordBatch, pa.Table)):
        return to_tensors(result, decoder, views)
    if isinstance(result, dict):
        return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) and v.dtype != object else v
                for k, v in result.items()}
    return result


def pin(batch: Any) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.pin_memory()
    if isinstance(batch, dict):
        return {k: pin(v) for k, v in batch.items()}
    if isinstance(batch, list):
        return [pin(v) for v in batch]
    return batch


def to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, list):
        return [to_device(v, device) for v in batch]
    return batch
