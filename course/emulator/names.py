"""C names for the mangled PTX symbols that reach a learner's messages.

NVRTC names a function-local static (a `__shared__` array declared in a kernel) after its
function: `_ZZ13hist2_articleE4temp` is `temp` in `hist2_article`, and in a template instance
`_ZZ7reduce6ILj256EEvPKfPfjE5sdata` is `sdata` in `reduce6<256>`. A message says
"`temp` (shared array of `hist2_article`)"; the parser reads the forms NVRTC emits for such
variables, and leaves any other symbol as it is.
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"[A-Za-z_]\w*")
_DISCRIMINATOR = re.compile(r"(_\d?|__\d+_)?")  # a second static of the same name: temp_0, temp__12_
_INT_LITERAL = re.compile(r"L[a-z](n?\d+)E")  # an integer template argument: Lj256E, Li32E, Lin1E


def local_static(symbol: str) -> tuple[str, str] | None:
    """(variable, function) of a function-local static's PTX symbol, or None for any other."""
    if not symbol.startswith("_ZZ"):
        return None
    for var in reversed(list(re.finditer(r"E(\d+)", symbol))):  # the variable: E<len><name> at the end
        end = var.end() + int(var[1])
        name = symbol[var.end() : end]
        if _IDENT.fullmatch(name) and _DISCRIMINATOR.fullmatch(symbol, end):
            function = _function(symbol[3 : var.start() + 1])
            return (name, function) if function else None
    return None


def _function(encoding: str) -> str:
    """The C name of a mangled function encoding (what follows _Z): `13hist2_article`,
    `7reduce6ILj256EEvPKfPfj` (reduce6<256>), `N2ns3fooEv` (ns::foo). "" if it is not one."""
    parts, pos = [], 0
    nested = encoding.startswith("N")
    pos += nested
    while pos < len(encoding) and encoding[pos].isdigit():
        digits = re.match(r"\d+", encoding[pos:])
        assert digits is not None
        start = pos + len(digits[0])
        parts.append(encoding[start : start + int(digits[0])])
        pos = start + int(digits[0])
        if not nested:
            break
    if not parts or not all(parts):
        return ""
    name = "::".join(parts)
    if encoding[pos : pos + 1] == "I":  # template arguments: spelled out when they are integers
        args = _template_args(encoding[pos + 1 :])
        name += f"<{', '.join(args)}>" if args else "<...>"
    return name


def _template_args(rest: str) -> list[str]:
    """Integer template arguments (`Lj256E` -> 256) up to the list's end; [] if any is a type."""
    args, pos = [], 0
    while pos < len(rest) and rest[pos] != "E":
        lit = _INT_LITERAL.match(rest, pos)
        if lit is None:
            return []
        args.append(lit[1].replace("n", "-"))
        pos = lit.end()
    return args


def display(symbol: str, detail: str = "", space: str = "shared") -> str:
    """How a message names a PTX variable: "`temp` (shared array of `hist2_article`, <detail>)" for
    a function-local static, "`sdata` (<detail>)" for another (no parentheses without a detail)."""
    local = local_static(symbol)
    words = [detail] if detail else []
    if local is not None:
        symbol, function = local
        words.insert(0, f"{space} array of `{function}`")
    return f"`{symbol}`" + (f" ({', '.join(words)})" if words else "")
