"""Sampled mutation testing of course modules (run by hand; CPU-heavy, so under `nice`).

    nice -n 15 python3 scripts/mutate.py course/analysis.py --sample 30 --seed 1 --out /tmp/analysis.jsonl
    nice -n 15 python3 scripts/mutate.py course/bench/timing.py course/bench/records.py --sample 30
    nice -n 15 python3 scripts/mutate.py --ids checks.py:71.16-71.54:op checks.py:63.25-63.26:const  # rerun
    python3 scripts/mutate.py course/checks.py --list --sample 30   # the sampled ids, nothing run
    python3 scripts/mutate.py --report /tmp/analysis.jsonl          # the results as a markdown table

Mutants are made from the syntax tree of each MODULE: a comparison flipped (`<`/`<=`, `>`/`>=`,
`==`/`!=`), an arithmetic, shift, bitwise or boolean operator swapped, an int constant plus one (a
float one doubled, 0.0 made 1.0), a `not`/`~` removed. Not mutated: f-strings, and annotations in a
module with `from __future__ import annotations` (never evaluated). The mutated expression is
spliced into the source in parentheses, so every other line keeps its number. A mutant's id is
`path-under-course/:line.col-end_line.end_col:kind`. A seeded random sample of the mutants of all
the modules named together is run; --ids picks mutants by id instead (their modules are implied).

The tests run are TESTS[module] (the narrowest files or pytest node ids that exercise it, fastest
first), or --tests. The repository's files (git ls-files: committed, plus untracked ones git does
not ignore, as they are in the working tree when the run starts) are copied to a temporary folder,
and the tests are run there: first on the unmutated copy (they must pass; that run's time is the
baseline), then once per mutant with `pytest -x`. A mutant is killed when the tests fail, survived
when they pass. A run that exceeds --timeout counts as killed (the mutant made the tests hang) only
if the baseline took at most a third of the limit; otherwise it counts as survived. Nothing in the
working tree is touched. One JSON line per mutant is appended to --out.

This replaces tests/emulator/mutate_ops.py (ops.py only, committed tree, fixed test list).
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# module -> the narrowest tests that exercise it (files, or pytest node ids where only a few tests of a
# slow file call into it), fastest first: with -x the first failure ends a run
TESTS = {
    "course/analysis.py": [
        "tests/test_analysis.py",
        "tests/emulator/test_trace_summary.py",
        "tests/test_ncu_agreement.py",
        "tests/test_draw.py::test_real_reduction_trees",
        "tests/test_draw.py::test_real_scans",
        "tests/test_draw.py::test_reduction_tree_has_one_arrow_per_addition",
        "tests/test_transpose.py::TestArticleBugs::test_reading_the_tile_by_column_conflicts",
        "tests/kernels/test_transpose_kernels.py::test_16_byte_accesses_take_16_sectors_per_request",
        "tests/kernels/test_transpose_kernels.py::test_bank_conflicts_of_the_tile_read",
        "tests/kernels/test_transpose_kernels.py::test_vector_accesses_fall_back_to_words_on_odd_rows",
        "tests/test_histogram.py::TestContention",
        "tests/test_histogram.py::TestWide::test_one_wave_and_warp_aggregation",
        "tests/kernels/test_scan_kernels.py::TestLookback::test_tile_loads_and_stores_are_conflict_free",
    ],
    "course/checks.py": ["tests/test_checks.py", "tests/test_api.py"],
    "course/bench/timing.py": ["tests/test_bench.py"],
    "course/bench/records.py": ["tests/test_bench_goals_cub.py", "tests/test_bench.py"],
    "course/bench/cub.py": ["tests/test_bench.py"],
    # the exercise frame: its own tests and the frame-level tests of test_exercises.py, not the
    # solution and notebook runs of every exercise (7 minutes: a survivor would cost that each)
    "course/exercises.py": [
        "tests/test_exercise_frame.py",
        "tests/test_exercises.py::test_every_exercise_of_each_kind_has_what_its_kind_needs",
        "tests/test_exercises.py::test_a_check_never_raises_for_what_a_learner_types",
        "tests/test_exercises.py::test_progress_is_kept_and_a_read_only_home_only_means_not_saved",
        "tests/test_exercises.py::test_the_whole_course_is_listed",
        "tests/test_exercises.py::test_expect_error_prints_the_note_and_lets_other_errors_through",
        "tests/test_exercises.py::test_show_draws_the_learners_kernel",
        "tests/test_exercises.py::test_show_draws_within_the_cases_budget",
        "tests/test_exercises.py::test_hints_go_from_a_nudge_to_the_line_and_are_asked_for",
        "tests/test_exercises.py::test_wrong_answers_fail_with_words_that_help",
    ],
    "course/progress.py": [
        "tests/test_progress.py",
        "tests/test_exercises.py::test_progress_is_kept_and_a_read_only_home_only_means_not_saved",
    ],
    "course/show.py": ["tests/test_exercises.py::test_show_draws_the_learners_kernel"],
    "course/occupancy.py": ["tests/test_occupancy.py"],
    "course/cubin.py": ["tests/test_occupancy.py"],
    "course/probe.py": ["tests/test_probe.py"],
    # compiling and launching: the API's checks, its errors, the header every kernel includes
    **{
        f"course/{m}.py": ["tests/test_api.py", "tests/test_errors.py", "tests/test_common_header.py"]
        for m in ("arrays", "backend", "compiler", "gpu", "params", "module")
    },
    "course/__init__.py": ["tests/test_api.py", "tests/test_architecture.py"],
    "course/errors.py": ["tests/test_errors.py", "tests/test_api.py"],
    "course/table.py": ["tests/test_claims.py", "tests/test_api.py"],
    "course/source.py": ["tests/test_architecture.py", "tests/test_api.py"],
    "course/claims.py": ["tests/test_claims.py"],
    "course/ncu.py": ["tests/test_ncu_agreement.py"],
    "course/toolkit.py": ["tests/test_ncu_agreement.py", "tests/test_checks.py"],
    "course/sanitizer.py": ["tests/test_checks.py"],
    "course/sass.py": [
        "tests/test_transpose.py::test_the_sass_reader_finds_batches",
        "tests/test_transpose.py::test_the_sass_reader_follows_the_scoreboards",
        "tests/test_scan.py::test_fact_script_reads_sass",
        "tests/test_histogram.py::TestSass",
    ],
    "course/draw.py": ["tests/test_draw.py"],
    "course/drawkit.py": ["tests/test_draw.py"],
    "course/bench/tune.py": ["tests/test_bench_tune.py"],
    **{
        f"course/bench/{m}.py": ["tests/test_bench.py", "tests/test_bench_goals_cub.py"]
        for m in ("measure", "report", "progress", "cli", "__main__", "__init__")
    },
}
# the engine's modules share one list: the conformance test over every topic without its 3-minute
# run of every version at every size (the topic files run each version on the reference too)
ENGINE_TESTS = [
    "tests/test_engine_rules.py",
    "tests/test_engine_panel_layout.py",
    "tests/test_launch_notes.py",
    "tests/test_canvas.py",
    "tests/test_topics.py::test_the_api",
    "tests/test_topics.py::test_bad_inputs_say_what_is_allowed",
    "tests/test_topics.py::test_run_copies_its_inputs",
    "tests/test_topics.py::test_trace_and_check_run_on_every_version",
    "tests/test_topics.py::test_the_benchmark_setups_build_and_trace",
    "tests/test_reduction.py::test_a_trace_spans_every_launch",
    "tests/test_reduction.py::test_on_a_gpu_the_articles_bugs_are_caught_on_the_emulator_first",
    "tests/test_panel.py",
]
# the emulator, split by instruction family (course/emulator/ops/) and machine: its own tests
EMULATOR_TESTS = [
    "tests/emulator/test_names.py",
    "tests/emulator/test_ptx_truth.py",
    "tests/emulator/test_faults.py",
    "tests/emulator/test_trace.py",
    "tests/emulator/test_robustness.py",
    "tests/emulator/test_programs.py",
    "tests/emulator/test_device_api.py",
]
TESTS.update(
    {str(p.relative_to(REPO)): EMULATOR_TESTS for p in sorted((REPO / "course" / "emulator").rglob("*.py"))}
)
ENGINE_MODULES = "topics engine/__init__ engine/engine engine/launch engine/topic engine/canvas engine/panel"
TESTS.update(
    {
        f"course/{m}.py": ENGINE_TESTS
        for m in (*ENGINE_MODULES.split(), "ui/__init__", "ui/canvas", "ui/panel")
    }
)
# a topic's package: its own tests, its exercises' tests (solutions, stubs, wrong answers) and the
# engine's conformance over every topic; tuning.py is also read by the tuning loop's tests
TOPICS = ("dot", "transpose", "histogram", "scan", "reduction")
TESTS.update(
    {
        str(p.relative_to(REPO)): [
            f"tests/test_{topic}.py",
            *[f"tests/kernels/test_{topic}_kernels.py"]
            * (REPO / f"tests/kernels/test_{topic}_kernels.py").exists(),
            *["tests/test_bench_tune.py"] * (p.name == "tuning.py"),
            *["tests/test_exercises.py"] * (p.name == "exercises.py"),
            *ENGINE_TESTS,
        ]
        for topic in TOPICS
        for p in sorted((REPO / "course" / topic).glob("*.py"))
    }
)

SWAP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.RShift: ast.LShift,
    ast.LShift: ast.RShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitOr,
    ast.And: ast.Or,
    ast.Or: ast.And,
    ast.FloorDiv: ast.Mult,
}


KINDS = {
    "cmp": (ast.Compare,),
    "op": (ast.BinOp, ast.BoolOp),
    "const": (ast.Constant,),
    "unary": (ast.UnaryOp,),
}


def where(node: ast.AST) -> str:
    """line.col-end_line.end_col of a node."""
    return f"{node.lineno}.{node.col_offset}-{node.end_lineno}.{node.end_col_offset}"  # type: ignore[attr-defined]


def sites(module: str, tree: ast.AST) -> list[str]:
    """Mutant ids `file:line.col-end_line.end_col:kind` (kind: cmp<k>, op, const, unary) of one module."""
    # skipped: f-strings (positions inside them are unreliable before Python 3.12) and annotations
    # (never evaluated under `from __future__ import annotations`, so their mutants are equivalent)
    skip = [f for f in ast.walk(tree) if isinstance(f, ast.JoinedStr)]
    lazy = any(
        isinstance(n, ast.ImportFrom)
        and n.module == "__future__"
        and any(a.name == "annotations" for a in n.names)
        for n in ast.walk(tree)
    )
    for n in ast.walk(tree) if lazy else ():
        if isinstance(n, (ast.arg, ast.AnnAssign)) and n.annotation:
            skip.append(n.annotation)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns:
            skip.append(n.returns)
    skipped = {id(n) for f in skip for n in ast.walk(f)}
    name = module.removeprefix("course/")
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        at = f"{name}:{where(node)}" if hasattr(node, "lineno") else ""
        if isinstance(node, ast.Compare):
            found += [f"{at}:cmp{k}" for k, op in enumerate(node.ops) if type(op) in SWAP]
        elif isinstance(node, (ast.BinOp, ast.BoolOp)) and type(node.op) in SWAP:
            found.append(f"{at}:op")
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            found.append(f"{at}:const")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert)):
            found.append(f"{at}:unary")
    return found


def mutate(node: ast.AST, kind: str) -> ast.AST:
    """A mutated copy of `node`."""
    node = copy.deepcopy(node)
    if kind.startswith("cmp"):
        k = int(kind[3:])
        node.ops[k] = SWAP[type(node.ops[k])]()  # type: ignore[attr-defined]
    elif kind == "op":
        node.op = SWAP[type(node.op)]()  # type: ignore[attr-defined]
    elif kind == "const":
        v = node.value  # type: ignore[attr-defined]
        node.value = v + 1 if isinstance(v, int) else (v * 2 if v else 1.0)  # type: ignore[attr-defined]
    elif kind == "unary":
        return node.operand  # type: ignore[attr-defined]
    return node


def mutant_source(source: str, mutant_id: str) -> str:
    """`source` with the mutant's expression replaced, in parentheses, line numbers kept."""
    _, span, kind = mutant_id.split(":")
    tree = ast.parse(source)
    types = KINDS[kind.rstrip("0123456789")]
    target = next(n for n in ast.walk(tree) if isinstance(n, types) and where(n) == span)
    new = mutate(target, kind)
    lines = source.splitlines(keepends=True)
    first, last = target.lineno - 1, target.end_lineno - 1  # type: ignore[operator]
    head = lines[first].encode()[: target.col_offset].decode()  # offsets count UTF-8 bytes
    tail = lines[last].encode()[target.end_col_offset :].decode()
    text = "(" + ast.unparse(new) + "\n" * (last - first) + ")"
    mutated = "".join(lines[:first]) + head + text + tail + "".join(lines[last + 1 :])

    class Swap(ast.NodeTransformer):  # the same mutant made on the tree, to check the splice
        def visit(self, node: ast.AST) -> ast.AST:
            return new if node is target else super().visit(node)

    assert ast.dump(ast.parse(mutated)) == ast.dump(Swap().visit(tree)), mutant_id
    return mutated


def write(path: Path, text: str) -> None:
    """Write a module and drop its cached bytecode: a .pyc is trusted when the source's size and mtime
    (whole seconds) match, which a same-size mutant written within the same second would."""
    path.write_text(text)
    for cached in path.parent.glob(f"__pycache__/{path.stem}.*.pyc"):
        cached.unlink()


def run_tests(root: Path, tests: list[str], timeout: float) -> tuple[str, str, float]:
    """(outcome, first failing test or last output line, seconds); outcome: failed, passed, timeout."""
    t0 = time.time()
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-p", "no:cacheprovider", *tests]
    env = {**os.environ, "PYTHONPATH": str(root)}
    p = subprocess.Popen(
        cmd,
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return "timeout", "", time.time() - t0
    except BaseException:  # interrupted: take the tests down too (they run in their own session)
        os.killpg(p.pid, signal.SIGKILL)
        raise
    lines = out.strip().splitlines()
    failed = [ln.split(" - ")[0].split(" ", 1)[1] for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
    detail = failed[0] if failed else (lines[-1] if lines else "")
    return ("failed" if p.returncode else "passed"), detail, time.time() - t0


def report(path: Path) -> None:
    """The JSON lines as a markdown table, then the killed count per module (a mutant run twice counts
    as its last run)."""
    records = {rec["id"]: rec for rec in map(json.loads, path.read_text().splitlines())}
    print("| id | mutated line | result | by | time |\n|---|---|---|---|---|")
    for rec in records.values():
        result = "killed" if rec["killed"] else "**survived**"
        mutant, by = (rec[k].replace("|", "\\|") for k in ("mutant", "by"))
        print(f"| {rec['id']} | `{mutant}` | {result} | {by} | {rec['seconds']:.0f} s |")
    print()
    for module in sorted({i.split(":")[0] for i in records}):
        mine = [r for i, r in records.items() if i.split(":")[0] == module]
        print(f"{module}: {sum(r['killed'] for r in mine)} of {len(mine)} killed")


def map_problems() -> list[str]:
    """What is wrong with TESTS: a course module it does not name, a test file or test it names that
    is not there."""
    problems = [
        f"{m}: no tests mapped"
        for m in (str(p.relative_to(REPO)) for p in sorted((REPO / "course").rglob("*.py")))
        if m not in TESTS
    ]
    for module, tests in TESTS.items():
        for test in tests:
            path, *names = test.split("::")  # a file, a test, or a class and its test
            if not (REPO / path).is_file():
                problems.append(f"{module}: {path} is not there")
                continue
            lines = [line.lstrip() for line in (REPO / path).read_text().splitlines()]
            for name in names:
                if not any(
                    ln.startswith((f"def {name}(", f"class {name}:", f"class {name}(")) for ln in lines
                ):
                    problems.append(f"{module}: {path} has no test {name}")
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", help="e.g. course/analysis.py (several are sampled together)")
    ap.add_argument("--sample", type=int, default=30, help="how many mutants to run (default 30)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ids", nargs="+", help="run these mutant ids instead of a sample")
    ap.add_argument("--tests", nargs="+", help="test files or folders (default: the map in TESTS)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per mutant (default 300)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/mutants.jsonl"), help="JSON lines, appended")
    ap.add_argument("--list", action="store_true", help="print the sampled ids and stop")
    ap.add_argument("--report", type=Path, help="print a JSON-lines file as a markdown table and stop")
    ap.add_argument("--check-map", action="store_true", help="check that TESTS names every course module")
    args = ap.parse_args()
    if args.report:
        return report(args.report)
    if args.check_map:
        problems = map_problems()
        sys.exit("\n".join(problems) if problems else None)

    modules = args.modules or sorted({"course/" + i.split(":")[0] for i in args.ids or []})
    if not modules:
        ap.error("name a module, or mutants with --ids")
    sources = {m: (REPO / m).read_text() for m in modules}
    every = [s for m in modules for s in sites(m, ast.parse(sources[m]))]
    unknown = set(args.ids or []) - set(every)
    if unknown:
        ap.error(f"no such mutants (in the working tree's {', '.join(modules)}): {' '.join(sorted(unknown))}")
    chosen = args.ids or random.Random(args.seed).sample(every, min(args.sample, len(every)))
    print(f"{len(every)} mutants in {', '.join(modules)}; running {len(chosen)}")
    if args.list:
        return print("\n".join(chosen))
    unmapped = [m for m in modules if m not in TESTS]
    if unmapped and not args.tests:
        ap.error(f"no tests mapped for {' '.join(unmapped)}: add them to TESTS, or pass --tests")
    tests = args.tests or list(dict.fromkeys(t for m in modules for t in TESTS[m]))  # in order, once each

    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))  # so the copy is cleaned up
    root = Path(tempfile.mkdtemp(prefix="mutants-"))
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for name in filter(None, listed.split("\0")):
            if (REPO / name).is_file():
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, root / name)
        outcome, detail, base = run_tests(root, tests, args.timeout)
        if outcome != "passed":
            sys.exit(f"the unmutated tests do not pass ({outcome}: {detail})")
        hang_kills = base <= args.timeout / 3
        print(
            f"baseline: {' '.join(tests)} pass in {base:.0f} s; a timeout counts as {'killed' if hang_kills else 'survived'}"
        )
        killed = 0
        with args.out.open("a") as log:
            for mutant_id in chosen:
                module = "course/" + mutant_id.split(":")[0]
                source = mutant_source(sources[module], mutant_id)
                write(root / module, source)
                try:
                    outcome, detail, seconds = run_tests(root, tests, args.timeout)
                finally:
                    write(root / module, sources[module])
                line = int(mutant_id.split(":")[1].split(".")[0])
                rec = {
                    "id": mutant_id,
                    "line": sources[module].splitlines()[line - 1].strip(),
                    "mutant": source.splitlines()[line - 1].strip(),
                    "outcome": outcome,
                    "killed": outcome == "failed" or (outcome == "timeout" and hang_kills),
                    "by": detail if outcome == "failed" else outcome if outcome == "timeout" else "",
                    "seconds": round(seconds, 1),
                    "baseline_seconds": round(base, 1),
                }
                killed += rec["killed"]
                print(json.dumps(rec), file=log, flush=True)
                print(
                    f"{'killed  ' if rec['killed'] else 'SURVIVED'} {mutant_id} {seconds:4.0f} s  {rec['mutant']}"
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{killed}/{len(chosen)} killed; details in {args.out}")


if __name__ == "__main__":
    main()
