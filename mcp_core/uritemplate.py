"""RFC 6570 URI templates (levels 1-3) as MCP resource templates use them: expand, and match back.

Matching inverts expansion for the practical cases; where adjacent expressions cannot be told apart
(``{name}{.ext}`` on ``a.b.c``) the earlier one takes the shortest match.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote

# RFC 3986 reserved characters; '+' and '#' expansion leaves them (and existing %XX triplets) alone.
_RESERVED = ":/?#[]@!$&'()*+,;="
_PCT_TRIPLET = re.compile(r"(%[0-9A-Fa-f]{2})")
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARNAME = re.compile(rf"{_VARCHAR}(?:\.?{_VARCHAR})*")
_EXPRESSION = re.compile(r"\{([^{}]*)\}")
# RFC 6570 §2.1 leaves these out of literals; a URI cannot hold them raw either.
_BAD_LITERAL = re.compile(r"[\x00-\x20\x7f\"<>\\^`|]|%(?![0-9A-Fa-f]{2})")
_RESERVED_OPERATORS = "=,!@|"
_QUERY_OPERATORS = ("?", "&")
_QUERY_GROUP = "query"
# Per positional operator: the value pattern of a lone variable, then of one among several. All are
# lazy, so in ``{name}{.ext}`` the label gets what follows the first dot and ``{+path}`` never swallows
# a trailing query or literal.
_VALUE_PATTERNS: dict[str, tuple[str, str]] = {
    "": ("[^/?#]*?", "[^/?#,]*?"),
    "+": (".*?", "[^,]*?"),
    "#": (".*?", "[^,]*?"),
    ".": ("[^/?#]*?", "[^/?#.]*?"),
    "/": ("[^/?#]*?", "[^/?#]*?"),
}


@dataclass(frozen=True, slots=True)
class _Operator:
    first: str
    separator: str
    named: bool
    if_empty: str
    allow_reserved: bool


# RFC 6570 Appendix A.
_OPERATORS: dict[str, _Operator] = {
    "": _Operator("", ",", False, "", False),
    "+": _Operator("", ",", False, "", True),
    "#": _Operator("#", ",", False, "", True),
    ".": _Operator(".", ".", False, "", False),
    "/": _Operator("/", "/", False, "", False),
    ";": _Operator(";", ";", True, "", False),
    "?": _Operator("?", "&", True, "=", False),
    "&": _Operator("&", "&", True, "=", False),
}


@dataclass(frozen=True, slots=True)
class _Expression:
    operator: str
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Capture:
    """A regex group holding one variable; ``empty_group`` marks ``;name`` sent without ``=``."""

    group: str
    name: str
    empty_group: str | None = None


def _encode(value: str, *, allow_reserved: bool) -> str:
    if not allow_reserved:
        return quote(value, safe="")
    parts = _PCT_TRIPLET.split(value)
    # Odd indices are the %XX triplets the split kept; they pass through untouched.
    return "".join(part if index % 2 else quote(part, safe=_RESERVED) for index, part in enumerate(parts))


def _parse_expression(body: str, template: str) -> _Expression:
    if not body:
        raise ValueError(f"empty expression in URI template {template!r}")
    operator = body[0] if body[0] in _OPERATORS else ""
    if body[0] in _RESERVED_OPERATORS:
        raise ValueError(f"operator {body[0]!r} is reserved by RFC 6570 in {template!r}")
    names = tuple(body[len(operator) :].split(","))
    for name in names:
        if name.endswith("*") or ":" in name:
            raise ValueError(f"prefix and explode modifiers (level 4) are not supported: {template!r}")
        if not _VARNAME.fullmatch(name):
            raise ValueError(f"invalid variable name {name!r} in URI template {template!r}")
    return _Expression(operator, names)


def _check_literal(literal: str, template: str) -> str:
    if "{" in literal or "}" in literal:
        raise ValueError(f"unbalanced braces in URI template {template!r}")
    if _BAD_LITERAL.search(literal):
        raise ValueError(f"character not allowed in URI template literal: {template!r}")
    return _encode(literal, allow_reserved=True)


class UriTemplate:
    """A parsed template; build one with :meth:`parse`."""

    __slots__ = ("_captures", "_pattern", "_pieces", "_query_names", "template", "variables")

    template: str
    variables: tuple[str, ...]

    def __init__(self, template: str, pieces: tuple[str | _Expression, ...]) -> None:
        self.template = template
        self._pieces = pieces
        names = (name for piece in pieces if isinstance(piece, _Expression) for name in piece.names)
        self.variables = tuple(dict.fromkeys(names))
        self._compile()

    @classmethod
    def parse(cls, template: str) -> UriTemplate:
        """Parse and compile ``template``.

        Raises ValueError for unbalanced braces, an empty expression, a bad variable name, a reserved
        operator (``= , ! @ |``), a level-4 modifier (``:N``, ``*``), or a control character, space or
        stray ``%`` in a literal.
        """
        pieces: list[str | _Expression] = []
        position = 0
        for found in _EXPRESSION.finditer(template):
            literal = _check_literal(template[position : found.start()], template)
            if literal:
                pieces.append(literal)
            pieces.append(_parse_expression(found.group(1), template))
            position = found.end()
        literal = _check_literal(template[position:], template)
        if literal:
            pieces.append(literal)
        return cls(template, tuple(pieces))

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UriTemplate) and other.template == self.template

    def __hash__(self) -> int:
        return hash(self.template)

    def expand(self, values: Mapping[str, str]) -> str:
        """The URI for ``values``; variables missing from ``values`` are left out, as RFC 6570 says.

        Raises ValueError (UnicodeEncodeError) for a value holding lone surrogates.
        """
        out: list[str] = []
        for piece in self._pieces:
            if isinstance(piece, str):
                out.append(piece)
                continue
            spec = _OPERATORS[piece.operator]
            items: list[str] = []
            for name in piece.names:
                value = values.get(name)
                if value is None:
                    continue
                encoded = _encode(value, allow_reserved=spec.allow_reserved)
                if spec.named:
                    items.append(f"{name}={encoded}" if encoded else name + spec.if_empty)
                else:
                    items.append(encoded)
            if items:
                out.append(spec.first + spec.separator.join(items))
        return "".join(out)

    def match(self, uri: str) -> dict[str, str] | None:
        """The percent-decoded variable values that expand to ``uri``, or None if it does not match.

        Variables the URI leaves out (optional path segments, absent query parameters) are absent
        from the result. Query parameters of a trailing ``{?a,b}{&c}`` block may come in any order
        and unknown ones are ignored.
        """
        found = self._pattern.fullmatch(uri)
        if found is None:
            return None
        result: dict[str, str] = {}
        raw: list[tuple[str, str]] = []
        for capture in self._captures:
            value = found.group(capture.group)
            if value is None and capture.empty_group and found.group(capture.empty_group) is not None:
                value = ""
            if value is not None:
                raw.append((capture.name, value))
        if self._query_names and found.group(_QUERY_GROUP):
            seen: set[str] = set()
            for pair in found.group(_QUERY_GROUP)[1:].split("&"):
                name, _, value = pair.partition("=")
                if name in self._query_names and name not in seen:
                    seen.add(name)
                    raw.append((name, value))
        for name, value in raw:
            try:
                decoded = unquote(value, errors="strict")
            except UnicodeDecodeError:
                return None
            # A variable used twice must have expanded to the same value both times.
            if result.setdefault(name, decoded) != decoded:
                return None
        return result

    def _compile(self) -> None:
        pieces = self._pieces
        end = len(pieces)
        last = pieces[-1] if pieces else None
        if isinstance(last, _Expression) and last.operator == "#":
            end -= 1
        query_start = end
        while query_start and self._is_query(pieces[query_start - 1]):
            query_start -= 1
        query_names: set[str] = set()
        captures: list[_Capture] = []
        parts: list[str] = []
        for index, piece in enumerate(pieces):
            if isinstance(piece, str):
                parts.append(re.escape(piece))
            elif query_start <= index < end:
                # The trailing query block is captured whole and read as parameters in any order.
                if index == query_start:
                    parts.append(rf"(?P<{_QUERY_GROUP}>[?&][^#]*)?")
                query_names.update(piece.names)
            else:
                parts.append(_expression_pattern(piece, captures))
        self._pattern = re.compile("".join(parts), re.DOTALL)
        self._captures = tuple(captures)
        self._query_names = frozenset(query_names)

    @staticmethod
    def _is_query(piece: str | _Expression) -> bool:
        return isinstance(piece, _Expression) and piece.operator in _QUERY_OPERATORS


def _expression_pattern(expression: _Expression, captures: list[_Capture]) -> str:
    """The regex for one expression, registering a capture per variable."""

    def group(name: str, *, empty: bool = False) -> str:
        capture = _Capture(f"g{len(captures)}", name, f"e{len(captures)}" if empty else None)
        captures.append(capture)
        return capture.group

    operator, names = expression.operator, expression.names
    several = len(names) > 1
    if operator in ("", "+", "#"):
        value = _VALUE_PATTERNS[operator][several]
        first, *rest = names
        body = f"(?P<{group(first)}>{value})" + "".join(f"(?:,(?P<{group(name)}>{value}))?" for name in rest)
        return rf"(?:\#{body})?" if operator == "#" else body
    if operator in (".", "/"):
        value = _VALUE_PATTERNS[operator][several]
        return "".join(rf"(?:{re.escape(operator)}(?P<{group(name)}>{value}))?" for name in names)
    if operator == ";":
        patterns = []
        for name in names:
            value_group = group(name, empty=True)
            empty_group = captures[-1].empty_group
            patterns.append(
                rf"(?:;{re.escape(name)}(?:=(?P<{value_group}>[^;/?#]*)|(?P<{empty_group}>)(?=[;/?#]|\Z)))?"
            )
        return "".join(patterns)
    # A query expression followed by more template: match its parameters in template order.
    return "".join(rf"(?:[?&]{re.escape(name)}=(?P<{group(name)}>[^&#]*))?" for name in names)
