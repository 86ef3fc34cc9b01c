"""The llama.cpp build options this CPU supports, for ``pip install llama-cpp-python``.

    CMAKE_ARGS="$(python -m bench.realmodel.cpuflags)" pip install llama-cpp-python==0.3.36

llama.cpp built with ``GGML_NATIVE=ON`` asks the compiler for the building CPU's
instructions, which a container's compiler may not detect; built with it off, x86
instructions it does not name default to on (SSE 4.2, AVX, AVX2, BMI2, FMA, F16C) or
off (AVX-512, AMX). Either way a build can use an instruction the CPU lacks and
crash with "Illegal instruction" at the first call. This names every option, on
exactly when ``/proc/cpuinfo`` lists the instructions it compiles in.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

# Each option, and the cpuinfo flags it needs (GGML_AVX512 compiles in F, CD, VL,
# DQ and BW together; its extensions need it on).
OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_BMI2", ("bmi2",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_AVX_VNNI", ("avx_vnni",)),
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("GGML_AVX512_VBMI", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw",
                          "avx512vbmi")),
    ("GGML_AVX512_VNNI", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw",
                          "avx512_vnni")),
    ("GGML_AVX512_BF16", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw",
                          "avx512_bf16")),
    ("GGML_AMX_TILE", ("amx_tile",)),
    ("GGML_AMX_INT8", ("amx_tile", "amx_int8")),
    ("GGML_AMX_BF16", ("amx_tile", "amx_bf16")),
)


def cpu_flags(cpuinfo: str) -> set[str]:
    """The instruction flags common to every processor in ``cpuinfo`` (the text of
    /proc/cpuinfo); ValueError when it lists none."""
    sets = [set(value.split()) for key, _, value in
            (line.partition(":") for line in cpuinfo.splitlines())
            if key.strip() == "flags"]
    if not sets:
        raise ValueError("no 'flags' line: not an x86 /proc/cpuinfo")
    return set.intersection(*sets)


def cmake_args(flags: Iterable[str]) -> str:
    """CMAKE_ARGS turning each llama.cpp x86 option on exactly when ``flags`` has
    what it needs (GGML_NATIVE off: the build is for these flags, not the compiler's
    guess)."""
    have = set(flags)
    return " ".join(["-DGGML_NATIVE=OFF"] + [
        f"-D{option}={'ON' if have.issuperset(needs) else 'OFF'}" for option, needs in OPTIONS])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.realmodel.cpuflags",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--cpuinfo", default="/proc/cpuinfo", type=Path,
                        help="the cpuinfo to read (default /proc/cpuinfo)")
    args = parser.parse_args(argv)
    try:
        flags = cpu_flags(args.cpuinfo.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as exc:
        print(f"cannot read the CPU's flags from {args.cpuinfo}: {exc}", file=sys.stderr)
        return 1
    print(cmake_args(flags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
