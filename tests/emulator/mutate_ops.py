"""Sampled mutation testing of course/emulator/ops.py (not a test module: run it by hand).

    python3 tests/emulator/mutate_ops.py [N=60] [SEED=1]

Copies the committed tree (git archive HEAD) to a temporary folder, makes operator and constant
mutants of ops.py from its syntax tree, samples N of them, and runs the fast emulator tests on each
with -x. Writes one JSON line per mutant to $OUT/mutants.jsonl (or /tmp/mutants.jsonl) and prints
the score. Nothing in the working tree is touched. Use `nice -n 10`: it is CPU-heavy.
"""

import ast
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORK = Path(tempfile.mkdtemp(prefix="mutants-"))
subprocess.run(f"git -C {REPO} archive HEAD | tar -x -C {WORK}", shell=True, check=True)
ROOT = WORK
TARGET = ROOT / "course/emulator/ops.py"
os.environ["PYTHONPATH"] = str(ROOT)
orig = TARGET.read_text()
tree = ast.parse(orig)
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
sites = []
for node in ast.walk(tree):
    if isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            if type(op) in SWAP:
                sites.append(("cmp", node.lineno, node.col_offset, k))
    elif isinstance(node, (ast.BinOp, ast.BoolOp)) and type(node.op) in SWAP:
        sites.append(("op", node.lineno, node.col_offset, 0))
    elif (
        isinstance(node, ast.Constant)
        and type(node.value) in (int, float)
        and not isinstance(node.value, bool)
    ):
        sites.append(("const", node.lineno, node.col_offset, 0))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert)):
        sites.append(("unary", node.lineno, node.col_offset, 0))
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 60
sample = random.sample(sites, min(n, len(sites)))
lines = orig.splitlines()


class M(ast.NodeTransformer):
    def __init__(s, site):
        s.site = site

    def generic_visit(s, node):
        node = super().generic_visit(node)
        kind, ln, col, k = s.site
        if getattr(node, "lineno", None) == ln and getattr(node, "col_offset", None) == col:
            if kind == "cmp" and isinstance(node, ast.Compare):
                node.ops[k] = SWAP[type(node.ops[k])]()
            elif kind == "op" and isinstance(node, (ast.BinOp, ast.BoolOp)):
                node.op = SWAP[type(node.op)]()
            elif kind == "const" and isinstance(node, ast.Constant):
                node.value = (
                    node.value + 1 if isinstance(node.value, int) else node.value * 2 + (node.value == 0)
                )
            elif kind == "unary" and isinstance(node, ast.UnaryOp):
                return node.operand
        return node


results = []
OUTDIR = Path(os.environ.get("OUT") or "/tmp")
log = open(OUTDIR / "mutants.jsonl", "a")  # noqa: SIM115
try:
    for _i, site in enumerate(sample):
        mutated = ast.unparse(ast.fix_missing_locations(M(site).visit(copy.deepcopy(tree))))
        TARGET.write_text(mutated)
        t0 = time.time()
        tests = [
            "tests/emulator/test_robustness.py",
            "tests/emulator/test_programs.py",
            "tests/emulator/test_faults.py",
            "tests/emulator/test_trace.py",
            "tests/emulator/test_device_api.py",
        ]
        p = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
        killed = p.returncode != 0
        rec = {
            "site": site,
            "line": lines[site[1] - 1].strip(),
            "killed": killed,
            "seconds": round(time.time() - t0),
            "tail": p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "",
        }
        results.append(rec)
        print(json.dumps(rec), file=log, flush=True)
finally:
    TARGET.write_text(orig)
k = sum(r["killed"] for r in results)
print(
    f"{k}/{len(results)} mutants killed ({100 * k / max(len(results), 1):.0f} %); details in {OUTDIR / 'mutants.jsonl'}"
)
