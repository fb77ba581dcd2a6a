"""course.ncu (and its command line, scripts/ncu_agreement.py) without a GPU: the emulator's
predictions for kernels whose answers are known by hand, the parsing of Nsight Compute's CSV, the
10 % rule and the Markdown table."""

from __future__ import annotations

import math
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from course import ncu as na

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "ncu_agreement.py"
RUNNER = [sys.executable, str(SCRIPT), "run"]


@pytest.fixture(scope="module")
def predictions() -> dict:
    return {c.name: na.predict(c) for c in na.CASES}


# ---------------------------------------------------------------- predictions


def _per_warp(warps: int, **per: int) -> dict[str, int]:
    """Whole-launch counts from per-warp ones (every warp of these kernels does the same)."""
    return {key: warps * per.get(key, 0) for key in na.METRICS}


# grid 8: tiles are 32 warps a block, the 128-thread kernels 4, shared_double 1
KNOWN = {
    # a column of a 32x32 float tile: 32 words in one bank (32-way); the row store is 1-way
    "tile_column": _per_warp(
        8 * 32,
        shared_ld_wavefronts=32,
        shared_st_wavefronts=1,
        global_ld_sectors=4,
        global_ld_requests=1,
        global_st_sectors=4,
        global_st_requests=1,
    ),
    # rows padded to 33 floats: the column is conflict-free
    "tile_column_padded": _per_warp(
        8 * 32,
        shared_ld_wavefronts=1,
        shared_st_wavefronts=1,
        global_ld_sectors=4,
        global_ld_requests=1,
        global_st_sectors=4,
        global_st_requests=1,
    ),
    "coalesced_read": _per_warp(
        8 * 4, global_ld_sectors=4, global_ld_requests=1, global_st_sectors=4, global_st_requests=1
    ),
    "stride32_read": _per_warp(
        8 * 4, global_ld_sectors=32, global_ld_requests=1, global_st_sectors=4, global_st_requests=1
    ),
    # 8 bytes a lane: two half-warp phases; s[2t] is 2-way in each
    "shared_float2": _per_warp(
        8 * 4,
        shared_ld_wavefronts=4,
        shared_st_wavefronts=2,
        global_ld_sectors=8,
        global_ld_requests=1,
        global_st_sectors=8,
        global_st_requests=1,
    ),
    # 16 bytes a lane: four quarter-warp phases; s[2t] is 2-way in each
    "shared_float4": _per_warp(
        8 * 4,
        shared_ld_wavefronts=8,
        shared_st_wavefronts=4,
        global_ld_sectors=16,
        global_ld_requests=1,
        global_st_sectors=16,
        global_st_requests=1,
    ),
    # two double stores (2 each); loads s[t] (2) and s[2t] (4)
    "shared_double": _per_warp(
        8,
        shared_ld_wavefronts=2 + 4,
        shared_st_wavefronts=2 + 2,
        global_ld_sectors=8 + 8,
        global_ld_requests=2,
        global_st_sectors=8,
        global_st_requests=1,
    ),
    # the compiler's choices: one 8-byte shared load (2 wavefronts, not two 2-way loads = 4) and one
    # 8-byte global load beside the two 4-byte ones of the fill (3 requests, 4 + 4 + 8 sectors)
    "fused_pair": _per_warp(
        8 * 4,
        shared_ld_wavefronts=2,
        shared_st_wavefronts=2,
        global_ld_sectors=16,
        global_ld_requests=3,
        global_st_sectors=4,
        global_st_requests=1,
    ),
    # four 4-way loads in the source, one conflict-free 16-byte load in the PTX: 4 wavefronts, not 16
    "unrolled_quad": _per_warp(
        8 * 4,
        shared_ld_wavefronts=4,
        shared_st_wavefronts=4,
        global_ld_sectors=16,
        global_ld_requests=4,
        global_st_sectors=4,
        global_st_requests=1,
    ),
}


@pytest.mark.parametrize("case", sorted(KNOWN))
def test_analysis_kernels_predict_the_known_answers(predictions, case):
    assert predictions[case].counts == KNOWN[case]
    assert predictions[case].atomics == 0


def test_the_compiler_really_fused_and_vectorised(predictions):
    for case in na.CASES:
        assert all(predictions[case.name].ptx.values()), (case.name, predictions[case.name].ptx)
    assert predictions["fused_pair"].ptx == {
        r"ld\.shared\.v2\.f32": "ld.shared.v2.f32",
        r"ld\.global(\.nc)?\.v2\.f32": "ld.global.v2.f32",
    }
    assert predictions["unrolled_quad"].ptx == {r"ld\.shared\.v4\.f32": "ld.shared.v4.f32"}


REDUCTION_N = {
    "reduce1": 2**14,
    "reduce2": 2**14,
    "reduce3": 2**14,
    "reduce4": 2**15,
    "reduce5": 2**15,
    "reduce6": 2**15,
    "reduce7": 2**16,
    "reduce_shfl": 2**16,
    "reduce_vec4": 2**16,
}


@pytest.mark.parametrize("case", sorted(REDUCTION_N))
def test_reductions_read_every_input_sector_once(predictions, case):
    p = predictions[case]
    assert p.counts["global_ld_sectors"] == REDUCTION_N[case] * 4 // 32
    lane_bytes = 16 if case == "reduce_vec4" else 4
    assert p.counts["global_ld_requests"] == REDUCTION_N[case] * 4 // (32 * lane_bytes)
    assert p.counts["global_st_requests"] == p.grid[0]  # thread 0 writes its block's sum


def test_reduction_story_in_the_predictions(predictions):
    counts = {name: p.counts for name, p in predictions.items()}
    # the strided index of kernel 2 conflicts; sequential addressing (3) does not
    assert counts["reduce2"]["shared_ld_wavefronts"] > counts["reduce3"]["shared_ld_wavefronts"]
    # the single pass adds 16 partial sums (2 sectors) and out[0]; its atomicInc is left out
    single = predictions["reduce_single_pass"]
    assert single.atomics == 16
    assert single.counts["global_ld_sectors"] == counts["reduce_vec4"]["global_ld_sectors"] + 2
    assert single.counts["global_st_requests"] == 16 + 1


# ---------------------------------------------------------------- ncu's CSV

# as ncu 2025.3 prints it (the stderr of the launched program mixed in), plus a helper kernel
# that must not be counted and a second launch of one kernel
NCU_CSV = textwrap.dedent(
    """\
    ==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, profiling results may be inconsistent.
    ==PROF== Connected to process 465 (/usr/bin/python3.12)
    ran reduce6
    ==PROF== Disconnected from process 465
    "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
    "0","465","python3.12","127.0.0.1","cupy_copy__float32_float32","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","64"
    "1","465","python3.12","127.0.0.1","void reduce6<128>(const float *, float *, int)","1","7","(128, 1, 1)","(128, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum","","2,176"
    "1","465","python3.12","127.0.0.1","void reduce6<128>(const float *, float *, int)","1","7","(128, 1, 1)","(128, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum","","1,536"
    "1","465","python3.12","127.0.0.1","void reduce6<128>(const float *, float *, int)","1","7","(128, 1, 1)","(128, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","","1,024"
    "1","465","python3.12","127.0.0.1","void reduce6<128>(const float *, float *, int)","1","7","(128, 1, 1)","(128, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_requests_pipe_lsu_mem_global_op_st.sum","","128"
    "1","465","python3.12","127.0.0.1","void reduce6<128>(const float *, float *, int)","1","7","(128, 1, 1)","(128, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","4,096"
    "1","465","python3.12","127.0.0.1","void reduce6<128>(const float *, float *, int)","1","7","(128, 1, 1)","(128, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum","sector","128"
    "2","465","python3.12","127.0.0.1","reduce_shfl","1","7","(256, 1, 1)","(16, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","Ksector","8.192"
    "3","465","python3.12","127.0.0.1","reduce_shfl","1","7","(256, 1, 1)","(16, 1, 1)","0","9.0","Command line profiler metrics","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","sector","8,192"
    """
)


def test_parse_ncu_csv_per_kernel():
    got = na.parse_ncu_csv(NCU_CSV)
    assert set(got) == {"cupy_copy__float32_float32", "reduce6", "reduce_shfl"}
    r6 = got["reduce6"]
    assert r6.launches == {"1"}
    assert r6.metrics == {
        na.METRICS["shared_ld_wavefronts"]: 2176,
        na.METRICS["shared_st_wavefronts"]: 1536,
        na.METRICS["global_ld_requests"]: 1024,
        na.METRICS["global_st_requests"]: 128,
        na.METRICS["global_ld_sectors"]: 4096,
        na.METRICS["global_st_sectors"]: 128,
    }
    # two launches are summed (one of them printed in Ksector)
    assert got["reduce_shfl"].launches == {"2", "3"}
    assert got["reduce_shfl"].metrics == {na.METRICS["global_ld_sectors"]: 16384}
    assert na.parse_ncu_csv("==PROF== nothing profiled\n") == {}


@pytest.mark.parametrize(
    "name, base",
    [
        ("reduce1", "reduce1"),
        ("void reduce6<128>(const float *, float *, int)", "reduce6"),
        ("void reduce7<128u>(const float *, float *, int)", "reduce7"),
        ("strided_read(const float *, float *, int)", "strided_read"),
        ("_Z7reduce6ILj128EEvPKfPfi", "reduce6"),
    ],
)
def test_kernel_base(name, base):
    assert na.kernel_base(name) == base


def test_metric_value():
    assert na.metric_value("1,024") == 1024
    assert na.metric_value(" 8,194 ", "sector") == 8194
    assert na.metric_value("1.5", "Ksector") == 1500
    assert na.metric_value("12.5", "") == 12.5
    assert math.isnan(na.metric_value("n/a"))


def test_measure_case_runs_ncu_and_keeps_the_case_kernel(tmp_path, monkeypatch):
    """A stand-in ncu that prints the canned CSV: the subprocess, the parsing and the filter."""
    (tmp_path / "out.csv").write_text(NCU_CSV)
    fake = tmp_path / "ncu"
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'out.csv'}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert na.find_ncu(str(fake)) == str(fake)
    m = na.measure_case(str(fake), na.BY_NAME["reduce6"], RUNNER, raw=tmp_path / "raw")
    assert m.error == "" and m.counters is not None
    assert m.counters.metrics[na.METRICS["global_ld_sectors"]] == 4096
    assert (tmp_path / "raw" / "reduce6.txt").read_text().startswith("==WARNING==")
    missing = na.measure_case(str(fake), na.BY_NAME["tile_column"], RUNNER)
    assert missing.counters is None and "no tile_column" in missing.error


def test_ncu_command_asks_for_the_six_metrics():
    cmd = na.ncu_command("ncu", "reduce3", RUNNER)
    assert cmd[:2] == ["ncu", "--csv"]
    assert cmd[cmd.index("--metrics") + 1].split(",") == list(na.METRICS.values())
    assert cmd[-4:] == [*RUNNER, "reduce3"]
    assert "--set" not in cmd


# ---------------------------------------------------------------- the 10 % rule and the table


@pytest.mark.parametrize(
    "predicted, measured, ok",
    [
        (100, 108, True),
        (100, 92, True),
        (100, 110, True),
        (100, 112, False),
        (100, 88, False),
        (0, 0, True),
        (0, 3, False),
        (100, None, False),
        (100, math.nan, False),
    ],
)
def test_ten_percent_rule(predicted, measured, ok):
    assert na.Comparison("c", "global_ld_sectors", predicted, measured).ok is ok


def test_markdown_table_has_every_case_and_a_summary(predictions):
    counters = na.KernelCounters("x", {"0"}, {m: float(v) for m, v in zip(na.METRICS.values(), range(6))})
    measured = {}
    for c in na.CASES:
        p = predictions[c.name]
        exact = na.KernelCounters(c.kernel, {"0"}, {na.METRICS[k]: float(v) for k, v in p.counts.items()})
        measured[c.name] = na.Measurement(exact)
    meta = {"device": "NVIDIA H200", "ncu_version": "Version 2025.3.1.0", "ncu_command": "ncu ..."}
    text = na.render(na.CASES, predictions, measured, meta)
    for c in na.CASES:
        assert f"| {c.name} | `{c.kernel}` |" in text
    assert f"**PASS: {6 * len(na.CASES)} of {6 * len(na.CASES)} counts agree" in text
    assert "NVIDIA H200" in text and "Version 2025.3.1.0" in text
    assert "| 8,192 / 8,192 |" in text  # tile_column's 32-way column
    assert "ld.shared.v4.f32" in text  # the notes say what the compiler did

    measured["tile_column"] = na.Measurement(counters)
    measured["fused_pair"] = na.Measurement(None, "ERR_NVGPUCTRPERM")
    text = na.render(na.CASES, predictions, measured, meta)
    assert "**FAIL:" in text and "| no (0 of 6) |" in text
    assert "**8,192 / 0** (×0.00)" in text
    assert "(no value)" in text and "ERR_NVGPUCTRPERM" in text


def test_predict_command_prints_every_case():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "predict", "tile_column", "fused_pair"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "| tile_column | 8192 | 256 | 1024 | 256 | 1024 | 256 | 0 |" in out
    assert "| fused_pair |" in out and "reduce1" not in out


def test_every_listed_version_of_every_topic_is_a_case() -> None:
    from course.topics import TOPICS

    listed = {name for engine in TOPICS for name in engine.versions()}
    assert listed <= set(na.BY_NAME)
    assert len(na.CASES) == len(na.BY_NAME)  # no name twice


def test_a_topic_case_traces_the_launch_the_gpu_would_profile() -> None:
    pred = na.predict(na.BY_NAME["transpose_padded"])
    assert pred.counts["shared_ld_wavefronts"] > 0 and pred.counts["global_st_requests"] > 0
    assert pred.grid[0] * pred.block[0] >= 1  # a real launch of the panel's input


def test_the_toolkit_finds_the_given_tool_else_the_first_executable_place(
    tmp_path: Path, monkeypatch
) -> None:
    import shutil

    from course import toolkit

    monkeypatch.setattr(shutil, "which", lambda name: None)
    tool = tmp_path / "ncu"
    tool.write_text("#!/bin/sh\n")
    plain = tmp_path / "not-executable"
    plain.write_text("")
    tool.chmod(0o755)
    assert toolkit.find_tool("ncu", None, "--ncu", [None, str(plain), str(tool)], "nowhere") == str(tool)
    with pytest.raises(FileNotFoundError, match=r"--ncu .*: no such executable"):
        toolkit.find_tool("ncu", str(plain), "--ncu", [str(tool)], "nowhere")
    with pytest.raises(FileNotFoundError, match="ncu not found: nowhere"):
        toolkit.find_tool("ncu", None, "--ncu", [str(plain)], "nowhere")
