"""Parse the PTX that NVRTC emits into entries, variables and instructions.

Only the structure is decoded here; what an instruction means lives in `ops/`.
Every instruction keeps its PTX line and the `.cu` line of the `.loc` before it.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from ..errors import UnsupportedInstruction

# Operands, as small tuples the op builders pattern-match on.
#   ("reg", name, negated)   ("imm", value)   ("addr", base or None, offset)
#   ("vec", [operands])      ("sym", name)    ("pair", [reg, reg])
Operand = tuple


@dataclass
class Instr:
    opcode: str  # e.g. "ld.global.nc.v4.f32"
    parts: list[str]  # opcode split on dots: ["ld", "global", "nc", "v4", "f32"]
    operands: list[Operand]
    guard: tuple[str, bool] | None  # (predicate register, negated)
    ptx_line: int
    cu_line: int
    text: str
    function: str = ""
    cu_file: int = 1
    # the line of the compiled .cu file this instruction belongs to: cu_line itself, or for code
    # inlined from a header (`common.cuh`) the line of the call in the .cu file; 0 if none
    line: int = 0


@dataclass
class Variable:
    name: str
    space: str  # "global", "const", "shared", "local", "param"
    type: str  # "b8", "u32", "f32", ...
    size: int  # bytes (0 for an extern shared array of unknown length)
    align: int
    init: bytes | None = None
    extern: bool = False


@dataclass
class Param:
    name: str
    type: str  # "u64", "u32", "f32", "b8" (for byte arrays: structs by value)
    size: int
    align: int
    ptr_space: str | None = None  # ".ptr .global" annotations, when present


@dataclass
class Function:
    name: str
    is_entry: bool
    params: list[Param]
    returns: list[Param]
    regs: dict[str, str]  # register name -> declared type
    variables: list[Variable]  # function-scope .shared/.local/.param declarations
    instrs: list[Instr]
    labels: dict[str, int]  # label -> index into instrs
    directives: dict[str, list[int]] = field(default_factory=dict)  # .reqntid, .maxntid


@dataclass
class PtxModule:
    version: str
    target: str
    functions: dict[str, Function]
    variables: list[Variable]  # module-scope .global/.const/.shared
    files: dict[int, str]

    @property
    def main_file(self) -> int:
        """The index (in `files`) of the compiled .cu file, as opposed to headers it includes."""
        return _main_file(self.files)

    @property
    def entries(self) -> dict[str, Function]:
        return {n: f for n, f in self.functions.items() if f.is_entry}


TYPE_SIZES = {
    "pred": 1, "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "f16x2": 4, "bf16x2": 4, "b32": 4, "u32": 4, "s32": 4, "f32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16,
}  # fmt: skip

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_FUNC_HEAD = re.compile(
    r"(?P<link>(?:\.(?:visible|weak|extern)\s+)*)\.(?P<kind>entry|func)\s*"
    r"(?:\((?P<ret>[^)]*)\)\s*)?(?P<name>[\w$.]+)\s*(?:\((?P<params>[^)]*)\))?(?P<dirs>[^{;]*)(?P<end>[{;])",
    re.S,
)
_VAR = re.compile(
    r"^(?P<extern>\.extern\s+)?(?:\.(?:visible|weak)\s+)*\.(?P<space>global|const|shared|local|param)\s+"
    r"(?:\.align\s+(?P<align>\d+)\s+)?(?:\.(?P<vec>v[248])\s+)?\.(?P<type>\w+)\s+(?P<name>[\w$.%]+)"
    r"(?P<dims>(?:\[\d*\])*)\s*(?:=\s*(?P<init>.*))?$",
    re.S,
)
_TOP_VAR = re.compile(r"^\s*((?:\.(?:extern|visible|weak)\s+)*\.(?:global|const|shared)\b[^;]*);", re.M)
_REG = re.compile(r"^\.reg\s*(?:\.v[248]\s*)?\.(?P<type>\w+)\s+(?P<names>.+)$", re.S)
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+(?P<align>\d+)\s+)?\.(?P<type>\w+)\s+"
    r"(?P<ptr>\.ptr(?:\s+\.(?P<space>\w+))?(?:\s+\.align\s+\d+)?\s+)?(?P<name>[\w$]+)(?P<dims>(?:\[\d*\])*)"
)


def parse(text: str) -> PtxModule:
    """Parse a whole PTX module."""
    lines = _strip_comments_keep_lines(text)
    version = _first(r"^\s*\.version\s+(\S+)", lines) or "?"
    target = _first(r"^\s*\.target\s+([^\n]+)", lines) or "?"
    files = {int(m[1]): m[2] for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', lines, re.M)}
    functions: dict[str, Function] = {}
    variables: list[Variable] = []
    pos = 0
    while True:
        m = _FUNC_HEAD.search(lines, pos)
        top = lines[pos : m.start() if m else len(lines)]
        for v in _TOP_VAR.finditer(top):
            variables.append(_variable(" ".join(v[1].split())))
        if not m:
            break
        if m["end"] == ";":  # a prototype
            pos = m.end()
            continue
        body_start = m.end()
        depth, i = 1, body_start
        while depth:
            c = lines[i]
            depth += c == "{"
            depth -= c == "}"
            i += 1
        first_line = lines.count("\n", 0, body_start) + 1
        fn = _function(m, lines[body_start : i - 1], first_line, _main_file(files))
        functions[fn.name] = fn
        pos = i
    return PtxModule(version, target, functions, variables, files)


def source_name(symbol: str) -> str:
    """The C name of a PTX symbol: `_ZZ8tile_colE1t` (a static `t` in tile_col) is `t`, and
    `_Z7reduce6ILj128EEvPKjPxi` (a template instance) is `reduce6`; other names are kept."""
    local = re.match(r"^_ZZ.*E(\d+)([A-Za-z_]\w*)$", symbol)
    if local and len(local[2]) >= int(local[1]):
        return local[2][: int(local[1])]
    function = re.match(r"^_Z(\d+)", symbol)
    if function:
        return symbol[len(function[0]) : len(function[0]) + int(function[1])]
    return symbol


def _main_file(files: dict[int, str]) -> int:
    """The index of the compiled .cu file: the first one that is not a header."""
    sources = [i for i, path in sorted(files.items()) if not path.endswith((".h", ".cuh", ".hpp"))]
    return sources[0] if sources else min(files, default=1)


_LOC = re.compile(r"^\.loc\s+(\d+)\s+(\d+)(?:\s+\d+)?(?:.*\binlined_at\s+(\d+)\s+(\d+))?")


def _strip_comments_keep_lines(text: str) -> str:
    return _COMMENTS.sub(lambda m: "\n" * m[0].count("\n"), text)


def _first(pattern: str, text: str) -> str | None:
    m = re.search(pattern, text, re.M)
    return m[1].strip() if m else None


def _params(text: str | None) -> list[Param]:
    out = []
    for m in _PARAM.finditer(text or ""):
        size = TYPE_SIZES.get(m["type"], 0)
        for d in re.findall(r"\[(\d*)\]", m["dims"]):
            size *= int(d or 0)
        out.append(
            Param(m["name"], m["type"], size, int(m["align"] or TYPE_SIZES.get(m["type"], 1)), m["space"])
        )
    return out


def _variable(stmt: str) -> Variable:
    m = _VAR.match(stmt)
    if not m:
        raise UnsupportedInstruction(f"cannot parse the PTX variable declaration {stmt!r}")
    esize = TYPE_SIZES[m["type"]] * (int(m["vec"][1]) if m["vec"] else 1)
    count = 1
    for d in re.findall(r"\[(\d*)\]", m["dims"]):
        count *= int(d) if d else 0
    init = _initializer(m["init"], m["type"], count) if m["init"] else None
    if init is not None and m["dims"] and count == 0:
        count = len(init) // esize
    align = int(m["align"] or esize)
    return Variable(m["name"], m["space"], m["type"], esize * count, align, init, bool(m["extern"]))


def _initializer(text: str, typ: str, count: int) -> bytes:
    values = re.findall(r"[-\w.]+", text)
    fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}[TYPE_SIZES[typ]]
    out = b""
    for v in values:
        val = parse_immediate(v)
        if isinstance(val, float):
            out += struct.pack("<d" if TYPE_SIZES[typ] == 8 else "<f", val)
        else:
            out += struct.pack("<" + fmt, val & ((1 << (8 * TYPE_SIZES[typ])) - 1))
    return out.ljust(count * TYPE_SIZES[typ], b"\0")


def _function(head: re.Match, body: str, first_line: int, main: int = 1) -> Function:
    name = head["name"]
    fn = Function(
        name=name,
        is_entry=head["kind"] == "entry",
        params=_params(head["params"]),
        returns=_params(head["ret"]),
        regs={},
        variables=[],
        instrs=[],
        labels={},
    )
    for d in re.finditer(r"\.(reqntid|maxntid)\s+([\d,\s]+)", head["dirs"] or ""):
        fn.directives[d[1]] = [int(x) for x in d[2].replace(",", " ").split()]
    cu_line, cu_file, line = 0, 1, 0
    sites: dict[tuple[int, int], int] = {}  # a header line's place -> the .cu line it was inlined at
    unplaced: list[Instr] = []
    scopes: list[dict[str, str]] = []  # register renames of the nested { } blocks
    bare: dict[str, str] = {}  # function registers declared without '%' (hand-written PTX): t -> %t
    pending = ""  # a statement that spans lines (calls do)
    for offset, raw in enumerate(body.split("\n")):
        line_no = first_line + offset
        if pending:
            raw, pending = pending + " " + raw, ""
        stmts = _statements(raw)
        if (
            stmts
            and not raw.rstrip().endswith((";", ":", "{", "}"))
            and stmts[-1].split()[0] not in (".loc", ".file")
        ):
            pending = stmts.pop()
        for stmt in stmts:
            if stmt.split()[0] == ".loc":
                loc = _LOC.match(stmt)
                if not loc:
                    continue
                cu_file, cu_line = int(loc[1]), int(loc[2])
                if cu_file == main:
                    line = cu_line
                elif loc[3]:  # inlined: at a .cu line, or at a header line itself inlined somewhere
                    at = (int(loc[3]), int(loc[4]))
                    line = at[1] if at[0] == main else sites.get(at, line)
                else:
                    line = 0  # a header's own (not inlined) function
                sites[(cu_file, cu_line)] = line
                if cu_line:  # line 0 marks code the compiler hoisted: it serves the next real line
                    for ins in unplaced:
                        ins.cu_file, ins.cu_line, ins.line = cu_file, cu_line, line
                    unplaced = []
            elif stmt.endswith(":") and " " not in stmt:
                fn.labels[stmt[:-1]] = len(fn.instrs)
            elif stmt == "{":
                scopes.append({})
            elif stmt == "}":
                scopes.pop()
            elif stmt.startswith(".reg"):
                declared: dict[str, str] = {}
                _registers(stmt, declared)
                for reg, typ in declared.items():  # an inner scope's %r3 is not the function's %r3
                    unique = f"{'' if reg.startswith('%') else '%'}{reg}.{len(fn.regs)}" if scopes else reg
                    if not scopes and not reg.startswith("%"):
                        unique = bare[reg] = "%" + reg
                    fn.regs[unique] = typ
                    if scopes:
                        scopes[-1][reg] = unique
            elif re.match(r"^\.(shared|local|param|const|global)\b", stmt):
                fn.variables.append(_variable(stmt))
            elif stmt.startswith("."):
                continue  # .pragma and other directives
            else:
                instr = _instruction(stmt, line_no, cu_line, name)
                if bare or any(scopes):
                    _rename(instr, [bare, *scopes])
                instr.cu_file, instr.line = cu_file, line
                fn.instrs.append(instr)
                if cu_line == 0:
                    unplaced.append(instr)
    last = next((i for i in reversed(fn.instrs) if i.cu_line), None)
    for ins in unplaced:  # hoisted code with no real line after it
        if last:
            ins.cu_file, ins.cu_line, ins.line = last.cu_file, last.cu_line, last.line
    return fn


def _rename(instr: Instr, scopes: list[dict[str, str]]) -> None:
    """Point an instruction's registers at the innermost scope that declares them."""

    def name(reg: str) -> str:
        for scope in reversed(scopes):
            if reg in scope:
                return scope[reg]
        return reg

    def fix(op: Operand) -> Operand:
        if op[0] == "reg":
            return ("reg", name(op[1]), op[2])
        if op[0] == "sym" and name(op[1]) != op[1]:  # inline asm declares registers with no '%'
            return ("reg", name(op[1]), False)
        if op[0] == "addr" and op[1] and (op[1].startswith("%") or name(op[1]) != op[1]):
            return ("addr", name(op[1]), op[2])
        if op[0] in ("vec", "pair"):
            return (op[0], [fix(o) for o in op[1]])
        return op

    instr.operands = [fix(o) for o in instr.operands]
    if instr.guard is not None:
        instr.guard = (name(instr.guard[0]), instr.guard[1])


def _statements(raw: str) -> list[str]:
    """A body line may hold a label, `{`/`}`, `.loc` (no semicolon) and instructions."""
    out = []
    s = raw.strip()
    while s:
        if s[0] in "{}":
            out.append(s[0])
            s = s[1:].strip()
            continue
        m = re.match(r"^([\w$]+):", s)
        if m:
            out.append(m[0])
            s = s[m.end() :].strip()
            continue
        if s.split()[0] in (".loc", ".file"):
            out.append(s)
            break
        if ";" in s:
            stmt, s = s.split(";", 1)
            out.append(" ".join(stmt.split()))
            s = s.strip()
        else:
            out.append(" ".join(s.split()))
            break
    return [o for o in out if o]


def _registers(stmt: str, regs: dict[str, str]) -> None:
    m = _REG.match(stmt)
    if not m:
        raise UnsupportedInstruction(f"cannot parse the register declaration {stmt!r}")
    for item in m["names"].split(","):
        item = item.strip()
        r = re.match(r"^(%?[\w$]+)<(\d+)>$", item)
        if r:
            for i in range(int(r[2])):
                regs[f"{r[1]}{i}"] = m["type"]
        else:
            regs[item] = m["type"]


def _instruction(stmt: str, ptx_line: int, cu_line: int, function: str) -> Instr:
    guard = None
    m = re.match(r"^@(!?)(%?[\w$]+)\s+", stmt)
    if m:
        guard = (m[2], m[1] == "!")
        stmt_body = stmt[m.end() :]
    else:
        stmt_body = stmt
    opcode, _, rest = stmt_body.partition(" ")
    operands = [_operand(t) for t in split_operands(rest)] if rest.strip() else []
    return Instr(opcode, opcode.split("."), operands, guard, ptx_line, cu_line, stmt, function)


def split_operands(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for c in text:
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def _operand(tok: str) -> Operand:
    tok = tok.strip()
    if tok.startswith("{"):
        return ("vec", [_operand(t) for t in split_operands(tok[1:-1])])
    if tok.startswith("("):  # call argument lists
        return ("vec", [_operand(t) for t in split_operands(tok[1:-1])])
    if tok.startswith("["):
        inner = tok[1:-1].replace(" ", "")
        m = re.match(r"^([%\w$.]+)?(?:\+?(-?(?:0x[0-9a-fA-F]+|\d+)))?$", inner)
        if not m:
            raise UnsupportedInstruction(f"cannot parse the address operand {tok!r}")
        base = m[1]
        if base is not None and re.fullmatch(r"-?\d+|0x[0-9a-fA-F]+", base):
            return ("addr", None, int(base, 0))
        return ("addr", base, int(m[2], 0) if m[2] else 0)
    if "|" in tok:
        return ("pair", [_operand(t) for t in tok.split("|")])
    if tok.startswith("!%"):
        return ("reg", tok[1:], True)
    if tok.startswith("%"):
        return ("reg", tok, False)
    if re.match(r"^-?(0[fFdD][0-9a-fA-F]+|0[xX][0-9a-fA-F]+U?|\d+U?|\d*\.\d+(e[-+]?\d+)?)$", tok):
        return ("imm", parse_immediate(tok))
    return ("sym", tok)


def parse_immediate(tok: str) -> int | float:
    neg = tok.startswith("-")
    t = tok[1:] if neg else tok
    if t[:2] in ("0f", "0F"):
        val: int | float = struct.unpack("<f", int(t[2:], 16).to_bytes(4, "little"))[0]
    elif t[:2] in ("0d", "0D"):
        val = struct.unpack("<d", int(t[2:], 16).to_bytes(8, "little"))[0]
    elif t[:2] in ("0x", "0X"):
        val = int(t.rstrip("U"), 16)
    elif "." in t or "e" in t or "E" in t:
        val = float(t)
    else:
        val = int(t.rstrip("U"), 0)
    return -val if neg else val
