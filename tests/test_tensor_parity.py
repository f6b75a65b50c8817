"""`histograms` tensors of every numeric dtype read as TensorBoard reads them, and their stats.

The events files are written with TensorBoard's own proto classes and
writer, and read back with TensorBoard's `EventAccumulator` and
`tensor_util.make_ndarray`, the path its histogram plugin serves from: that
is the oracle.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util

import histoscope
from histoscope import DamagedFileWarning

# (numpy dtype, buckets): each has negative edges where the dtype holds them.
CASES = {
    "int8": [[-4, -2, 3], [-2, 0, 0], [0, 2, 5], [2, 4, 0]],
    "int16": [[-300, 0, 1], [0, 300, 2], [300, 600, 0]],
    "int32": [[-7, -1, 2], [-1, 5, 0], [5, 11, 9]],
    "int64": [[-(1 << 40), 0, 4], [0, 1 << 40, 1], [1 << 40, 1 << 41, 0]],
    "uint8": [[0, 100, 3], [100, 200, 0], [200, 250, 6]],
    "uint16": [[0, 1000, 0], [1000, 2000, 7], [2000, 60000, 1]],
    "uint32": [[0, 7, 1], [7, 4_000_000_000, 2], [4_000_000_000, 4_100_000_000, 0]],
    "uint64": [[0, 1, 0], [1, 2, 3], [2, 1 << 60, 5]],
}


def write_tensors(logdir: Path, tag: str, steps: list[np.ndarray]) -> None:
    writer = EventFileWriter(str(logdir))
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="histograms")
    )
    for step, array in enumerate(steps):
        value = summary_pb2.Summary.Value(
            tag=tag, tensor=tensor_util.make_tensor_proto(array), metadata=metadata
        )
        writer.add_event(
            event_pb2.Event(
                step=step, wall_time=100.0 + step, summary=summary_pb2.Summary(value=[value])
            )
        )
    writer.close()


def tensorboard_buckets(logdir: Path, tag: str) -> list[np.ndarray]:
    (path,) = logdir.iterdir()
    accumulator = plugin_event_accumulator.EventAccumulator(str(path), size_guidance={"tensors": 0})
    accumulator.Reload()
    return [
        tensor_util.make_ndarray(event.tensor_proto).astype(np.float64)
        for event in accumulator.Tensors(tag)
    ]


def read_quietly(logdir: Path) -> tuple[dict, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = histoscope.load_histograms(logdir)
    damage = [str(w.message) for w in caught if issubclass(w.category, DamagedFileWarning)]
    return data, damage


@pytest.mark.parametrize("dtype", sorted(CASES))
def test_integer_tensors_read_as_tensorboard_reads_them(tmp_path: Path, dtype: str) -> None:
    first = np.array(CASES[dtype], dtype=dtype)
    second = first.copy()
    second[:, 2] = second[::-1, 2]
    write_tensors(tmp_path, "h", [first, second])
    expected = tensorboard_buckets(tmp_path, "h")
    assert len(expected) == 2

    data, damage = read_quietly(tmp_path)
    assert damage == []
    series = data["h"]["."]
    assert series.steps.tolist() == [0, 1]
    for got, want in zip(series.buckets, expected):
        np.testing.assert_array_equal(got, want)


def test_tensors_from_repeated_int_fields_read_as_tensorboard_reads_them(tmp_path: Path) -> None:
    # The short encoding: every value the same, stored once in int_val.
    proto = tensor_util.make_tensor_proto(np.int32(3), shape=[2, 3])
    assert proto.int_val and not proto.tensor_content
    writer = EventFileWriter(str(tmp_path))
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="histograms")
    )
    value = summary_pb2.Summary.Value(tag="h", tensor=proto, metadata=metadata)
    writer.add_event(event_pb2.Event(step=0, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    (want,) = tensorboard_buckets(tmp_path, "h")
    data, damage = read_quietly(tmp_path)
    assert damage == []
    np.testing.assert_array_equal(data["h"]["."].buckets[0], want)


def test_tf2_tensor_stats_come_from_the_buckets(tmp_path: Path) -> None:
    steps = [
        np.array([[-3.0, -2.0, 0.0], [-2.0, -1.0, 4.0], [-1.0, 0.5, 0.0], [0.5, 2.0, 2.5]]),
        np.array([[0.0, 1.0, 0.0], [1.0, 2.0, 0.0]]),
        np.array(CASES["int32"], dtype=np.int32),
    ]
    write_tensors(tmp_path, "h", steps)
    data, _ = read_quietly(tmp_path)
    stats = data["h"]["."].stats
    for i, buckets in enumerate(tensorboard_buckets(tmp_path, "h")):
        filled = buckets[buckets[:, 2] > 0]
        assert stats["count"][i] == buckets[:, 2].sum()
        if len(filled):
            assert stats["min"][i] == filled[0, 0] and stats["max"][i] == filled[-1, 1]
        else:
            assert math.isnan(stats["min"][i]) and math.isnan(stats["max"][i])
        for name in ("mean", "std", "nonfinite", "below", "above"):
            assert math.isnan(stats[name][i]), name


def test_a_string_tensor_is_damage_that_names_its_dtype(tmp_path: Path) -> None:
    write_tensors(tmp_path, "h", [np.array([[b"a", b"b", b"c"]])])
    data, damage = read_quietly(tmp_path)
    assert data == {}
    (message,) = damage
    assert "h: histogram tensor has dtype DT_STRING (7)" in message
