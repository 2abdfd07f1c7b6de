"""Reading a tenant configuration file safely: YAML bytes to plain JSON values, with the line of every value.

Refused, with the line where there is one: a file over ``MAX_BYTES``, text that is not UTF-8, YAML syntax errors,
more than one document, duplicate keys, keys that are not text, merge keys (``<<``), tags JSON has no value for
(dates, binary, sets, ``!python/...``), ``.nan`` and ``.inf``, more than ``MAX_ALIASES`` aliases, an alias inside
its own anchor, values nested deeper than ``MAX_DEPTH``, and more than ``MAX_VALUES`` values once aliases are
expanded (the "billion laughs"). The YAML is composed once by libyaml; nothing is built before the checks passed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

MAX_BYTES = 2 * 1024 * 1024
# A hand-written file may share a block with an anchor now and then; an export has none.
MAX_ALIASES = 32
MAX_DEPTH = 64
MAX_VALUES = 200_000
MAX_REPORTED = 20

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
SCALAR_TAGS = frozenset(f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null"))
NOT_NUMBERS = frozenset({".nan", ".inf", "+.inf", "-.inf"})

Path = tuple[str | int, ...]


def path_text(path: Path) -> str:
    """``("tools", 2, "config")`` as people read it: ``tools[2].config`` (the file's root: ``the file``)."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the file"


@dataclass(frozen=True)
class Problem:
    """Why (part of) a file is refused: where (its line, when known, and its path) and what is wrong."""

    line: int | None
    path: Path
    message: str

    def __str__(self) -> str:
        at = f"line {self.line}" if self.line is not None else "the file"
        where = f" ({path_text(self.path)})" if self.path else ""
        return f"{at}{where}: {self.message}"


def problems_sorted(problems: Iterable[Problem]) -> list[Problem]:
    """``problems`` in the order of the file, each once; those without a line first."""
    unique = list(dict.fromkeys(problems))
    return sorted(unique, key=lambda p: (p.line is not None, p.line or 0))


class ConfigFileError(Exception):
    """A configuration file that cannot be applied; ``problems`` say where and why (nothing was changed)."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = problems_sorted(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        shown = [str(problem) for problem in self.problems[:MAX_REPORTED]]
        if len(self.problems) > MAX_REPORTED:
            shown.append(f"({len(self.problems) - MAX_REPORTED} more problems not shown)")
        return "\n".join(shown)


@dataclass(frozen=True)
class LoadedFile:
    """A parsed file: its values, the line each path starts at (a key's line for a mapping's value), and its text."""

    data: Any
    lines: dict[Path, int] = field(default_factory=dict)
    text: str = ""

    def line(self, path: Path) -> int | None:
        """The line of ``path``, or of its nearest ancestor the index knows (an alias's values are its line's)."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path[:-1]

    def problem(self, path: Path, message: str) -> Problem:
        return Problem(self.line(path), path, message)


class _Refused(Exception):
    def __init__(self, problem: Problem) -> None:
        self.problem = problem


class _Walk:
    """One pass over the composed node graph: checks it and indexes the lines (see the module's docstring)."""

    def __init__(self) -> None:
        self.lines: dict[Path, int] = {}
        self.sizes: dict[int, int] = {}
        self.on_path: set[int] = set()
        self.aliases = 0
        self.values = 0

    def refuse(self, node: yaml.Node, path: Path, message: str, *, alias: bool = False) -> None:
        # An alias is the anchored node itself, whose mark is the anchor's: its own line is its key's or item's.
        line = node.start_mark.line + 1
        if alias:
            line = next((self.lines[path[:end]] for end in range(len(path), -1, -1) if path[:end] in self.lines), line)
        raise _Refused(Problem(line, path, message))

    def visit(self, node: yaml.Node, path: Path, depth: int) -> int:
        """The number of values ``node`` stands for, aliases expanded. Raises ``_Refused``."""
        key = id(node)
        if depth > MAX_DEPTH:
            self.refuse(node, path, f"the values are nested more than {MAX_DEPTH} levels deep")
        if key in self.on_path:
            self.refuse(node, path, "an alias refers to the block it is in", alias=True)
        if key in self.sizes:
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                message = f"the file uses more than {MAX_ALIASES} aliases (*name); write the values out"
                self.refuse(node, path, message, alias=True)
            self._count(node, path, self.sizes[key], alias=True)
            return self.sizes[key]
        self._count(node, path, 1)
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            size = self._scalar(node, path)
        else:
            self.on_path.add(key)
            if isinstance(node, yaml.SequenceNode) and node.tag == f"{_TAG}seq":
                size = 1 + sum(self.visit(item, (*path, index), depth + 1) for index, item in enumerate(node.value))
            elif isinstance(node, yaml.MappingNode) and node.tag == f"{_TAG}map":
                size = 1 + self._mapping(node, path, depth)
            else:
                self.refuse(node, path, f"the tag {node.tag} is not allowed: use plain JSON values")
            self.on_path.discard(key)
        self.sizes[key] = size
        return size

    def _count(self, node: yaml.Node, path: Path, values: int, *, alias: bool = False) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            message = f"the file holds more than {MAX_VALUES:,} values once its aliases are expanded"
            self.refuse(node, path, message, alias=alias)

    def _scalar(self, node: yaml.ScalarNode, path: Path) -> int:
        if node.tag not in SCALAR_TAGS:
            shown = node.tag.removeprefix(_TAG)
            hint = " (write dates in quotes)" if shown == "timestamp" else ""
            self.refuse(node, path, f"a value of type {shown} is not allowed: use plain JSON values{hint}")
        if node.tag == f"{_TAG}float" and str(node.value).lower() in NOT_NUMBERS:
            self.refuse(node, path, f"{node.value} is not a number JSON can hold")
        return 1

    def _mapping(self, node: yaml.MappingNode, path: Path, depth: int) -> int:
        seen: dict[str, int] = {}
        size = 0
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == f"{_TAG}merge":
                self.refuse(key_node, path, "merge keys (<<) are not allowed: write the keys out")
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != f"{_TAG}str":
                shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else "a collection"
                self.refuse(key_node, path, f"the key {shown!s:.40} is not text: quote it")
            name = str(key_node.value)
            if name in seen:
                self.refuse(key_node, (*path, name), f"the key {name!r} is repeated (first on line {seen[name]})")
            seen[name] = line
            self.lines[(*path, name)] = line
            size += self.visit(value_node, (*path, name), depth + 1)
        return size


def size_check(size: int) -> None:
    """Refuse a file of ``size`` bytes over ``MAX_BYTES`` (before it is read, where its size is known). Raises
    ``ConfigFileError``."""
    if size > MAX_BYTES:
        raise ConfigFileError([Problem(None, (), f"the file is {size:,} bytes; the limit is {MAX_BYTES:,}")])


def config_load(content: bytes | str) -> LoadedFile:
    """Parse a configuration file's ``content`` (see the module's docstring). Raises ``ConfigFileError``."""
    raw = content.encode() if isinstance(content, str) else content
    size_check(len(raw))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigFileError([Problem(None, (), f"the file is not UTF-8 text (byte {exc.start})")]) from None
    loader = _LOADER(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigFileError([Problem(line, (), f"not valid YAML: {problem}")]) from None
        if root is None:
            raise ConfigFileError([Problem(None, (), "the file is empty")])
        walk = _Walk()
        try:
            walk.visit(root, (), 0)
        except _Refused as refused:
            raise ConfigFileError([refused.problem]) from None
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    return LoadedFile(data, walk.lines, text)
