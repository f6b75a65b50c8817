"""Damaged, cut and growing files built byte by byte from a real events file."""

from __future__ import annotations

import shutil
import struct
import warnings
from pathlib import Path

import pytest

import histoscope
from histoscope import DamagedFileWarning


def events_file(fixtures: Path, tmp_path: Path) -> tuple[Path, bytes]:
    run = tmp_path / "run"
    shutil.copytree(fixtures / "corrupt" / "intact", run)
    (path,) = run.iterdir()
    return path, path.read_bytes()


def record_offsets(data: bytes) -> list[int]:
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        (length,) = struct.unpack_from("<Q", data, at)
        at += 16 + length
    return offsets


def steps_and_warnings(logdir: Path) -> tuple[list[int], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = histoscope.load_histograms(logdir)
    steps = data["hist/normal"]["run"].steps.tolist() if data else []
    messages = [str(w.message) for w in caught if issubclass(w.category, DamagedFileWarning)]
    return steps, messages


def test_damaged_length_header_resyncs(fixtures: Path, tmp_path: Path) -> None:
    path, data = events_file(fixtures, tmp_path)
    offsets = record_offsets(data)
    bad = bytearray(data)
    bad[offsets[20] + 3] ^= 0x5A  # the length of record 20, the step-9 histogram
    path.write_bytes(bytes(bad))
    steps, messages = steps_and_warnings(tmp_path)
    assert steps == [s for s in range(20) if s != 9]
    (message,) = messages
    assert f"bytes {offsets[20]}-{offsets[21]}: damaged length header" in message


def test_garbage_inserted_between_records_is_skipped(fixtures: Path, tmp_path: Path) -> None:
    path, data = events_file(fixtures, tmp_path)
    cut = record_offsets(data)[10]
    garbage = b"\x00garbage\xff" * 7
    path.write_bytes(data[:cut] + garbage + data[cut:])
    steps, messages = steps_and_warnings(tmp_path)
    assert steps == list(range(20))
    assert f"bytes {cut}-{cut + len(garbage)}" in messages[0]


def test_huge_length_at_the_end_is_a_cut_record(fixtures: Path, tmp_path: Path) -> None:
    path, data = events_file(fixtures, tmp_path)
    from histoscope._core import load_histograms  # noqa: F401  (the public API is below)

    header = struct.pack("<Q", 1 << 62)
    path.write_bytes(data + header + _masked_crc(header) + b"partial")
    steps, messages = steps_and_warnings(tmp_path)
    assert steps == list(range(20)) and messages == []


def test_file_being_written_reads_what_is_complete(fixtures: Path, tmp_path: Path) -> None:
    path, data = events_file(fixtures, tmp_path)
    offsets = record_offsets(data)
    for cut in (offsets[30] + 5, offsets[30] + 12, offsets[31] - 1):
        path.write_bytes(data[:cut])
        steps, messages = steps_and_warnings(tmp_path)
        assert steps == list(range(14)) and messages == []


@pytest.mark.parametrize("size", [0, 1, 11])
def test_tiny_files(tmp_path: Path, size: int) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "events.out.tfevents.x").write_bytes(b"\x07" * size)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert histoscope.load_histograms(tmp_path) == {}


def _masked_crc(data: bytes) -> bytes:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    crc ^= 0xFFFFFFFF
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    return struct.pack("<I", masked)
