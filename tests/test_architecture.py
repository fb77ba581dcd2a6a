"""The package's shape: no import cycles (imports inside functions count), no module reaching
into another's private names, and an engine that names no topic."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import course
import course.topics

ROOT = Path(course.__file__).parent
TOPIC_NAMES = tuple(t.name for t in course.topics.TOPICS)  # course/topics.py: the one list


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every import that runs, at module level or inside a function; the
    imports under `if TYPE_CHECKING:` are for the type checker and never run."""
    tree = ast.parse(path.read_text())
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rsplit(".", 1)[0]
    out = []
    skip: set[int] = set()
    for node in ast.walk(tree):
        if _is_type_checking(node):
            skip.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            out.append((module, [a.name for a in node.names]))
    return out


MODULES = {_module_name(p): p for p in ROOT.rglob("*.py")}


def _graph() -> dict[str, set[str]]:
    """Which course modules each course module imports (a package import counts as its __init__)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for name, path in MODULES.items():
        for module, names in _imports(path):
            if not module.startswith("course"):
                continue
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES] or [module]
            graph[name].update(t for t in targets if t in MODULES and t != name)
    return graph


def test_no_import_cycles() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if n.startswith(m + "."):
                continue  # a package importing its own submodules is how packages are built
            if state.get(n) == 1 and not m.startswith(n + "."):
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(n) :] + [n]))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_no_module_imports_another_modules_private_names() -> None:
    for name, path in MODULES.items():
        for module, names in _imports(path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not (module.startswith("course") and private), f"{name} imports {private} from {module}"


def test_no_module_reads_a_private_attribute_of_another_course_module() -> None:
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                   and (node.level or (node.module or "").startswith("course")) for a in node.names}  # fmt: skip
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                raise AssertionError(f"{name}: {node.value.id}.{node.attr} (line {node.lineno})")


def test_the_engine_the_panel_and_the_benchmark_name_no_topic() -> None:
    for name, path in MODULES.items():
        if not name.startswith(("course.engine", "course.ui", "course.bench")) or name == "course.bench.cli":
            continue
        imported = {m for m, _ in _imports(path)}
        topics = {m for m in imported if m.split(".")[-1] in TOPIC_NAMES or "topics" in m}
        assert not topics, f"{name} imports {topics}"


def test_the_topics_are_listed_once_and_name_their_notebooks() -> None:
    from course.topics import TOPICS, notebook

    names = [t.name for t in TOPICS]
    assert len(set(names)) == len(names) and {"dot", "reduction"} <= set(names)
    assert [notebook(n) for n in names] == sorted(p.name for p in (ROOT.parent / "notebooks").glob("*.ipynb"))


def test_no_file_of_the_package_is_over_900_lines() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in ROOT.rglob("*.py")}
    assert not {name: n for name, n in sizes.items() if n > 900}


def test_every_instruction_builder_cites_the_ptx_isa() -> None:
    """The registered builders, and the ones they hand an instruction to by its type (every function
    of the ops package that takes (instr, ctx)), name the PTX ISA section they implement."""
    import inspect

    from course.emulator import ops

    builders = set(ops.BUILDERS.values())
    for family in ops.FAMILIES:
        for name, f in vars(family).items():
            if (
                inspect.isfunction(f)
                and f.__module__ == family.__name__
                and name not in ("build", "simple")  # the machinery, not an instruction
                and list(inspect.signature(f).parameters)[:2] == ["instr", "ctx"]
            ):
                builders.add(f)
    assert len(builders) > 50
    assert not sorted(f"{f.__module__}.{f.__name__}" for f in builders if "PTX ISA" not in (f.__doc__ or ""))


SCRIPTS = sorted((ROOT.parent / "scripts").glob("*.py"))
TESTS = sorted((ROOT.parent / "tests").rglob("*.py"))
LOADERS = ("spec_from_file_location", "run_path", "SourceFileLoader", "path.insert", "path.append")


def _loaded_paths(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of each call that loads a file by path or puts a folder on sys.path, its
    arguments written out with what the names in them were assigned in the same file."""
    assigned: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = assigned.get(target.id, "") + " " + ast.unparse(node.value)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(LOADERS):
            text = " ".join(ast.unparse(a) for a in node.args)
            names = {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}
            out.append((node.lineno, text + " " + " ".join(assigned.get(n, "") for n in names)))
    return out


def test_no_test_loads_a_script() -> None:
    """scripts/ holds command lines: what a test needs of one is in the package (or in tests/), and
    a test runs a script only as a command (subprocess)."""
    assert len(TESTS) > 30
    loads = [
        f"{path.relative_to(ROOT.parent)}:{line}: {text.strip()}"
        for path in TESTS
        for line, text in _loaded_paths(ast.parse(path.read_text()))
        if "scripts" in text
    ]
    assert not loads


def test_a_test_loading_a_script_by_path_is_seen() -> None:
    """The rule above, on the ways a test has loaded a script."""
    sources = [
        'spec = importlib.util.spec_from_file_location("x", ROOT / "scripts" / "claims.py")',
        'SCRIPT = ROOT / "scripts" / "ncu_agreement.py"\n\ndef f():\n    return spec_from_file_location("n", SCRIPT)',
        'sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))',
        'runpy.run_path("scripts/readme_images.py")',
    ]
    assert all(any("scripts" in text for _, text in _loaded_paths(ast.parse(s))) for s in sources)
    assert not _loaded_paths(ast.parse('subprocess.run([sys.executable, "scripts/claims.py"])'))


def _private_names(tree: ast.AST) -> list[str]:
    """Private names of the course a file uses: imported from a course module, or read as an
    attribute of anything but `self` and `cls` (a script has no business with another's privates)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course"):
            found += [f"line {node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]  # fmt: skip
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_scripts_call_only_public_names() -> None:
    assert len(SCRIPTS) > 10
    found = {
        str(p.relative_to(ROOT.parent)): names
        for p in SCRIPTS
        if (names := _private_names(ast.parse(p.read_text())))
    }
    assert not found


def test_a_private_name_in_a_script_is_seen() -> None:
    for source in (
        "k._cupy()",
        "course.backend._cupy_device().name",
        "from course.histogram.lesson import _bytes",
    ):
        assert _private_names(ast.parse(source)), source
    assert not _private_names(ast.parse("from cupy._core import _accelerator\nself._x = 1"))


def test_the_old_module_names_are_the_moved_modules() -> None:
    """Renamed for their layer, kept importable under their old names (notebooks and topic code use
    them): the old name is the very module, so a setting made through it holds."""
    import importlib

    for old, new in (
        ("course.gpu", "course.module"),
        ("course.engine.panel", "course.ui.panel"),
        ("course.engine.canvas", "course.ui.canvas"),
        *((f"course.{t}.story", f"course.{t}.lesson") for t in TOPIC_NAMES),
    ):
        assert importlib.import_module(old) is importlib.import_module(new), old
    from course import module, source, table

    assert source.Table is table.Table and course.gpu.LAUNCH_NOTES is module.LAUNCH_NOTES  # type: ignore[attr-defined]


def test_gpu_or_emulator_is_asked_of_the_backend_never_by_its_name() -> None:
    """`backend.on_gpu()` (or a Device's `on_gpu`) says whether kernels run on a GPU: no module
    outside course/backend.py compares a backend's name with "cupy" itself."""
    import re

    compare = re.compile(r"""backend"?\]?\s*[!=]=\s*["']cupy["']""")
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in ROOT.rglob("*.py")
        if p.name != "backend.py" or p.parent != ROOT
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if compare.search(line)
    ]
    assert not found
    assert compare.search('if device().backend == "cupy":') and compare.search('env["backend"] != "cupy"')


TOPIC_FILES = {  # the files every topic folder has, each with one job in every topic
    "__init__.py": "the topic's public names (versions, run, trace, check, panel, what the notebook calls)",
    "topic.py": "the description the engine runs (versions, launch rules, reference, benchmark, PanelSpec)",
    "lesson.py": "the functions its notebook calls",
    "panel.py": "what the panel shows: the PanelSpec's callbacks",
    "exercises.py": "its exercises",
    "story.py": "the old name of lesson.py, that very module",
}
PANEL_CALLBACKS = {"panel_input", "picture_input", "picture", "metrics", "picture_grid", "block_max_n"}


def test_every_topic_folder_has_the_same_files_for_the_same_jobs() -> None:
    """A newcomer who knows one topic folder knows them all: the same files, the panel's callbacks
    defined in panel.py and nowhere else, and story.py only the old name of lesson.py."""
    import importlib

    for name in TOPIC_NAMES:
        folder = ROOT / name
        assert set(TOPIC_FILES) <= {p.name for p in folder.glob("*.py")}, name
        for path in folder.glob("*.py"):
            defined = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
            if path.name == "panel.py":
                assert {"picture", "metrics", "picture_input"} <= defined, path
            else:
                assert not defined & PANEL_CALLBACKS, (
                    f"{path.relative_to(ROOT)} defines {defined & PANEL_CALLBACKS}"
                )
        assert importlib.import_module(f"course.{name}.story") is importlib.import_module(
            f"course.{name}.lesson"
        )
        spec = importlib.import_module(f"course.{name}.topic").TOPIC.panel
        callbacks = [spec.draw, spec.metrics]
        assert all(f.__module__ == f"course.{name}.panel" for f in callbacks), name


def test_a_sixth_topic_joins_by_its_entry_in_the_one_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's new-topic checklist: a toy topic (dot's engine under another name) added to
    course.topics.TOPICS alone gets its notebook's name, the benchmark's command line and the
    list of goals, with no other list touched."""
    import dataclasses

    from course import dot, topics
    from course.bench import cli
    from course.engine import Engine

    toy = Engine(dataclasses.replace(dot.ENGINE.topic, name="toy"))
    monkeypatch.setattr(topics, "TOPICS", (*topics.TOPICS, toy))
    monkeypatch.setattr(cli, "TOPICS", topics.TOPICS)
    assert topics.notebook("toy") == "06_toy.ipynb"
    assert "toy" in cli._parser().format_help()
    with pytest.raises(SystemExit):  # a topic that is not in the list is refused, naming the list
        cli.main(["not_a_topic"])
