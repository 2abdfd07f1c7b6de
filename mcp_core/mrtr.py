"""Multi-round-trip requests (MRTR, 2026-07-28): a tool's questions to the client become an ``input_required``
result, and the client's retry answers them.

The handler is re-run from the start on every retry (deterministic replay). Each question gets a key: the one
the tool names, else its position in call order. A question whose key has an answer — from this retry's
``inputResponses`` or carried over in the sealed ``requestState`` — gets it; the first one without an answer stops
the run with ``InputRequired``, and the result asks for every question left open (concurrent ones included).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from mcp_core.errors import InvalidParams
from mcp_core.request_state import StateBinding, request_digest, seal, unseal

JSONObject = dict[str, Any]

# The requests MRTR may carry, and the shape of a valid answer to each.
INPUT_METHODS: frozenset[str] = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
ELICIT_ACTIONS: frozenset[str] = frozenset({"accept", "decline", "cancel"})


class InputRequired(BaseException):
    """Raised inside a handler when it asks something not yet answered; the dispatcher turns it into an
    ``input_required`` result. A BaseException, so a tool's ``except Exception`` does not swallow it."""


class InputPolicy(NamedTuple):  # built per stateless request: a record, not a frozen dataclass
    """What the shell supplies for MRTR: the sealing keys (current first), the clock, the state's lifetime and
    what the state is bound to besides the request."""

    keys: tuple[bytes, ...]
    now: float
    ttl: float
    tenant: str
    principal: str

    def binding(self, method: str, params: JSONObject) -> StateBinding:
        return StateBinding(tenant=self.tenant, principal=self.principal, request=request_digest(method, params))


@dataclass(frozen=True)
class Answer:
    """A client's result for one question; ``question`` is the digest of what was asked (None: not known yet)."""

    question: str | None
    result: JSONObject


# What a URL-mode elicitation's identity leaves out: its id (and the URL, which usually carries it) are new on every
# run of the tool, so a replay asks "the same" question under a new id; its answer (``{action}``) carries no data.
URL_ELICITATION_PER_RUN = frozenset({"elicitationId", "url"})


def question_digest(method: str, params: JSONObject) -> str:
    """What identifies a question across the runs of one call (an answer on file applies only to the same one)."""
    if method == "elicitation/create" and params.get("mode") == "url":
        params = {name: value for name, value in params.items() if name not in URL_ELICITATION_PER_RUN}
    body = json.dumps({"method": method, "params": params}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()


def check_answer(key: str, method: str, result: JSONObject) -> None:
    """Raises InvalidParams when ``result`` cannot be a client's result for ``method``."""
    if method == "elicitation/create":
        valid = result.get("action") in ELICIT_ACTIONS and isinstance(result.get("content", {}), dict)
    elif method == "sampling/createMessage":
        valid = isinstance(result.get("role"), str) and "content" in result
    else:
        valid = isinstance(result.get("roots"), list)
    if not valid:
        raise InvalidParams(f"inputResponses[{key!r}] is not a valid {method} result", data={"key": key})


@dataclass
class InputLedger:
    """The questions of one run: answers available to it, answers it used, and questions left open."""

    answers: dict[str, Answer] = field(default_factory=dict)
    used: dict[str, Answer] = field(default_factory=dict)
    asked: dict[str, JSONObject] = field(default_factory=dict)
    _calls: int = 0

    def ask(self, method: str, params: JSONObject, key: str | None = None) -> JSONObject:
        """The answer to this question. Raises InputRequired when there is none yet, InvalidParams when the answer
        on file is not a valid result for ``method``."""
        if method not in INPUT_METHODS:
            raise ValueError(f"{method} cannot be asked through an input_required result")
        self._calls += 1
        key = key or f"input-{self._calls}"
        digest = question_digest(method, params)
        answer = self.answers.get(key)
        # An answer to a different question under the same key (the tool asked something else this time) is stale.
        if answer is not None and answer.question in (None, digest):
            check_answer(key, method, answer.result)
            self.used[key] = Answer(digest, answer.result)
            return answer.result
        self.asked[key] = {"method": method, "params": params}
        raise InputRequired(key)


def input_responses(responses: Any, *, open_keys: Container[str] | None = None) -> dict[str, JSONObject]:
    """A client's ``inputResponses``: with ``open_keys``, only the answers to those (others are ignored). Raises
    InvalidParams when ``responses`` is not an object or an answer kept is not one."""
    if not isinstance(responses, dict):
        raise InvalidParams("inputResponses must be an object mapping keys to results")
    kept = {key: result for key, result in responses.items() if open_keys is None or key in open_keys}
    for key, result in kept.items():
        if not isinstance(result, dict):
            raise InvalidParams(f"inputResponses[{key!r}] must be an object", data={"key": key})
    return kept


def open_round(method: str, params: JSONObject, policy: InputPolicy) -> InputLedger:
    """The answers a (re)tried request brings.

    With a ``requestState``, the answers it carries plus this retry's responses to the questions it left open
    (other keys are ignored). Without one, the responses stand on their own (a client may answer up front).
    Raises InvalidParams for malformed ``inputResponses``/``requestState`` and InvalidRequestState (-32602) for a
    state that fails verification.
    """
    responses = input_responses(params["inputResponses"]) if "inputResponses" in params else {}
    if "requestState" not in params:
        return InputLedger(answers={key: Answer(None, result) for key, result in responses.items()})
    token = params["requestState"]
    if not isinstance(token, str):
        raise InvalidParams("requestState must be a string")
    data = unseal(token, binding=policy.binding(method, params), keys=policy.keys, now=policy.now)
    answers: dict[str, Answer] = {}
    for key, (question, result) in data.get("answers", {}).items():
        answers[key] = Answer(question, result)
    for key, question in data.get("pending", {}).items():
        if key in responses:
            answers[key] = Answer(question, responses[key])
    return InputLedger(answers=answers)


def input_required_result(ledger: InputLedger, method: str, params: JSONObject, policy: InputPolicy) -> JSONObject:
    """``{resultType: input_required, inputRequests, requestState}``: the open questions, and a sealed state that
    carries the answers this run used and the questions it asks now."""
    data = {
        "answers": {key: [answer.question, answer.result] for key, answer in ledger.used.items()},
        "pending": {key: question_digest(q["method"], q["params"]) for key, q in ledger.asked.items()},
    }
    state = seal(data, binding=policy.binding(method, params), key=policy.keys[0], now=policy.now, ttl=policy.ttl)
    return {"resultType": "input_required", "inputRequests": dict(ledger.asked), "requestState": state}
