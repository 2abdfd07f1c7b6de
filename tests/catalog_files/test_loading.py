"""Hostile YAML is refused before anything is built from it, with the line: alias bombs (by count and by expansion),
aliases inside their own anchor, huge files, duplicate keys, merge keys, tags JSON has no value for, deep nesting."""

from __future__ import annotations

import time

import pytest

from mcp_platform.catalog_files.loading import (
    MAX_ALIASES,
    MAX_BYTES,
    MAX_DEPTH,
    ConfigFileError,
    Problem,
    config_load,
    path_text,
)


def refusal(content: str | bytes) -> list[str]:
    with pytest.raises(ConfigFileError) as refused:
        config_load(content)
    return [str(problem) for problem in refused.value.problems]


def test_a_billion_laughs_is_refused_by_its_aliases_at_once() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level, name in enumerate("bcdefghi"):
        previous = "abcdefghi"[level]
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    started = time.perf_counter()

    problems = refusal("\n".join(lines) + "\n")

    assert time.perf_counter() - started < 1.0
    assert problems == [f"line 5 (e[5]): the file uses more than {MAX_ALIASES} aliases (*name); write the values out"]


def test_few_aliases_that_expand_too_far_are_refused() -> None:
    lines = ["a: &a [" + ",".join(["x"] * 40) + "]"]
    for level, name in enumerate("bcdefgh"):
        lines.append(
            f"{name}: &{name} [*{'abcdefgh'[level]}, *{'abcdefgh'[level]}, *{'abcdefgh'[level]}, *{'abcdefgh'[level]}]"
        )

    problems = refusal("\n".join(lines) + "\n")

    assert len(problems) == 1 and "values once its aliases are expanded" in problems[0]
    assert problems[0].startswith("line 7 (g[3]):")


def test_a_few_shared_blocks_are_allowed() -> None:
    loaded = config_load("shared: &schema {type: object}\nfirst: *schema\nsecond: *schema\n")

    assert loaded.data == {"shared": {"type": "object"}, "first": {"type": "object"}, "second": {"type": "object"}}


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    assert refusal("version: 1\nloop: &a [1, *a]\n") == ["line 2 (loop[1]): an alias refers to the block it is in"]


def test_a_file_over_the_limit_is_refused_before_it_is_parsed() -> None:
    huge = b"version: 1\ntools:\n" + b"- name: x\n" * (5 * 1024 * 1024 // 10)
    started = time.perf_counter()

    problems = refusal(huge)

    assert time.perf_counter() - started < 0.5
    assert problems == [f"the file: the file is {len(huge):,} bytes; the limit is {MAX_BYTES:,}"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("version: 1\ntools: []\nversion: 2\n", "line 3 (version): the key 'version' is repeated (first on line 1)"),
        (
            "tools:\n  - name: a\n    title: x\n    title: y\n",
            "line 4 (tools[0].title): the key 'title' is repeated (first on line 3)",
        ),
        ("base: &b {a: 1}\nmore:\n  <<: *b\n", "line 3 (more): merge keys (<<) are not allowed: write the keys out"),
        (
            "when: 2024-01-01\n",
            "line 1 (when): a value of type timestamp is not allowed: use plain JSON values (write dates in quotes)",
        ),
        ("data: !!binary aGVsbG8=\n", "line 1 (data): a value of type binary is not allowed: use plain JSON values"),
        ("s: !!set {a, b}\n", "line 1 (s): the tag tag:yaml.org,2002:set is not allowed: use plain JSON values"),
        (
            "x: !!python/object/apply:os.system [ls]\n",
            "line 1 (x): the tag tag:yaml.org,2002:python/object/apply:os.system is not allowed: use plain JSON values",
        ),
        ("rate: .inf\n", "line 1 (rate): .inf is not a number JSON can hold"),
        ("1: one\n", "line 1: the key 1 is not text: quote it"),
        ("? [a, b]\n: c\n", "line 1: the key a collection is not text: quote it"),
        ("version: 1\ntools: [\n", "line 3: not valid YAML: did not find expected node content"),
        ("a: 1\n---\nb: 2\n", "line 2: not valid YAML: but found another document"),
        ("", "the file: the file is empty"),
        (b"version: \xff\n", "the file: the file is not UTF-8 text (byte 9)"),
    ],
)
def test_hostile_or_broken_yaml_is_refused_with_its_line(content: str | bytes, expected: str) -> None:
    assert refusal(content) == [expected]


def test_values_nested_too_deep_are_refused() -> None:
    deep = "a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n"

    problems = refusal(deep)

    assert len(problems) == 1 and f"nested more than {MAX_DEPTH} levels deep" in problems[0]


def test_every_value_has_the_line_of_its_key() -> None:
    loaded = config_load("version: 1\ntools:\n  - name: a\n    config:\n      url: x\n  - name: b\n")

    assert loaded.line(("tools", 0, "config", "url")) == 5
    assert loaded.line(("tools", 1)) == 6
    assert loaded.line(("tools", 1, "missing")) == 6  # a key the file does not have: its object's line
    assert loaded.data == {"version": 1, "tools": [{"name": "a", "config": {"url": "x"}}, {"name": "b"}]}


def test_problems_read_as_a_line_a_path_and_a_reason() -> None:
    assert str(Problem(7, ("tools", 2, "config"), "bad")) == "line 7 (tools[2].config): bad"
    assert path_text(()) == "the file"
    assert str(ConfigFileError([Problem(9, (), "b"), Problem(None, (), "a"), Problem(2, ("x",), "c")])) == (
        "the file: a\nline 2 (x): c\nline 9: b"
    )
