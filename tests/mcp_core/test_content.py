"""What a prompt function's return value becomes: ``prompt_result`` normalises and refuses malformed messages."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcp_core.content import prompt_message_problem, prompt_result

USER_HI = {"role": "user", "content": {"type": "text", "text": "hi"}}


def test_a_string_becomes_one_user_text_message() -> None:
    assert prompt_result("Review this.") == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Review this."}}]
    }


def test_a_list_of_messages_is_the_messages() -> None:
    reply = {"role": "assistant", "content": {"type": "resource_link", "uri": "docs://a", "name": "a"}}
    assert prompt_result([USER_HI, reply]) == {"messages": [USER_HI, reply]}


def test_a_result_keeps_its_description_and_drops_an_empty_one() -> None:
    assert prompt_result({"messages": [USER_HI], "description": "Greets"}) == {
        "messages": [USER_HI],
        "description": "Greets",
    }
    assert prompt_result({"messages": [USER_HI], "description": ""}) == {"messages": [USER_HI]}


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "a prompt must return"),
        ([], "a prompt must return"),
        ({"messages": []}, "a prompt must return"),
        ({"messages": [USER_HI], "isError": True}, "only 'messages' and 'description'"),
        ({"messages": [USER_HI], "description": 3}, "description must be a string"),
        ([{"role": "system", "content": {"type": "text", "text": "x"}}], 'messages[0].role must be "user"'),
        ([USER_HI, {"role": "user", "content": {"type": "image"}}], "messages[1].content: image content needs"),
        ([{"role": "user", "text": "x"}], "messages[0] must be an object with exactly 'role' and 'content'"),
        (["hi"], "messages[0] must be an object"),
    ],
)
def test_anything_else_is_refused_with_the_reason(value: Any, reason: str) -> None:
    with pytest.raises(TypeError, match=re.escape(reason)):
        prompt_result(value)


def test_a_message_problem_names_where_it_is() -> None:
    assert prompt_message_problem(USER_HI) is None
    assert prompt_message_problem({"role": "bot", "content": {}}, "messages[3]") == (
        'messages[3].role must be "user" or "assistant"'
    )
