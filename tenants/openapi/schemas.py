"""OpenAPI Schema Objects to JSON Schema 2020-12 tool schemas.

Named component schemas (``#/components/schemas/X``) become ``$defs`` of the tool's schema, holding only the ones
it reaches, so recursive schemas stay finite and large documents do not multiply; every other ``$ref`` is resolved
in place. OpenAPI 3.0 dialect (``nullable``, boolean ``exclusiveMinimum``) is rewritten into 2020-12.
"""

from __future__ import annotations

import copy
from typing import Any

from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

JSONObject = dict[str, Any]

COMPONENT_PREFIX = "#/components/schemas/"
DOCUMENT_URI = "urn:openapi-document"
# Keywords whose value is one subschema, a list of them, or a name-to-subschema map.
_ONE = frozenset(
    {"additionalProperties", "items", "not", "if", "then", "else", "contains", "propertyNames"}
    | {"unevaluatedProperties", "unevaluatedItems", "contentSchema"}
)
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "dependentSchemas", "$defs")
# OpenAPI-only keywords a JSON Schema validator does not know; dropped from tool schemas.
_OPENAPI_ONLY = frozenset({"discriminator", "xml", "externalDocs", "example", "nullable"})


class SchemaError(ValueError):
    """A schema that cannot be translated: the message says where in the document."""


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


class SchemaTranslator:
    """Translates the schemas of one document; component translations are cached across operations."""

    def __init__(self, document: JSONObject, *, openapi_30: bool) -> None:
        self.document = document
        self.openapi_30 = openapi_30
        resource: Resource[Any] = Resource.opaque(document)
        self._resolver = Registry().with_resource(DOCUMENT_URI, resource).resolver(base_uri=DOCUMENT_URI)
        self._components: dict[str, JSONObject] = {}
        self._component_refs: dict[str, frozenset[str]] = {}

    # ---- references ----------------------------------------------------------------------------------

    def resolve(self, ref: str, *, where: str) -> Any:
        """The value ``ref`` (a local JSON pointer) points at. Raises ``SchemaError``."""
        if not ref.startswith("#"):
            # Nothing is fetched on a document's say-so: a multi-file document is bundled before it is imported.
            raise SchemaError(
                f"{where}: only references inside the document are supported, not {ref!r} (bundle the document)"
            )
        try:
            return self._resolver.lookup(ref).contents
        except Unresolvable:
            raise SchemaError(f"{where}: the reference {ref!r} points at nothing in the document") from None

    def deref(self, node: Any, *, where: str) -> Any:
        """Follow ``$ref`` chains of a non-schema object (parameter, request body, response)."""
        seen: set[str] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                raise SchemaError(f"{where}: the reference {ref!r} refers to itself")
            seen.add(ref)
            node = self.resolve(ref, where=where)
        return node

    def component_name(self, ref: str) -> str | None:
        if not ref.startswith(COMPONENT_PREFIX):
            return None
        rest = ref[len(COMPONENT_PREFIX) :]
        return None if "/" in rest else _unescape(rest)

    def root(self, schema: Any, *, where: str) -> Any:
        """The schema ``schema`` stands for once top-level references are followed (for flattening, typing)."""
        seen: set[str] = set()
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
            seen.add(schema["$ref"])
            schema = self.resolve(schema["$ref"], where=where)
        return schema

    # ---- translation ---------------------------------------------------------------------------------

    def tool_schema(self, schema: Any, *, where: str) -> tuple[Any, set[str]]:
        """``schema`` in 2020-12 with component references as ``#/$defs/X``, and the components it uses."""
        used: set[str] = set()
        return self._translate(schema, where, used, ()), used

    def defs(self, used: set[str], *, where: str) -> JSONObject:
        """The ``$defs`` for components ``used``, closed over the components they in turn use."""
        pending, done = sorted(used), {}
        while pending:
            name = pending.pop()
            if name in done:
                continue
            done[name] = self._component(name, where=where)
            pending.extend(sorted(self._component_refs[name] - set(done)))
        return {name: done[name] for name in sorted(done)}

    def _component(self, name: str, *, where: str) -> JSONObject | Any:
        if name not in self._components:
            schemas = self.document.get("components", {}).get("schemas", {})
            if name not in schemas:
                raise SchemaError(f"{where}: the reference to component schema {name!r} points at nothing")
            used: set[str] = set()
            self._components[name] = self._translate(schemas[name], f"components.schemas.{name}", used, ())
            self._component_refs[name] = frozenset(used)
        return self._components[name]

    def _translate(self, node: Any, where: str, used: set[str], inlining: tuple[str, ...]) -> Any:
        if isinstance(node, bool):
            return node
        if not isinstance(node, dict):
            raise SchemaError(f"{where}: a schema must be an object")
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._translate_ref(node, ref, where, used, inlining)
        out: JSONObject = {}
        for key, value in node.items():
            if key in _OPENAPI_ONLY or key.startswith("x-"):
                continue
            if key in _ONE:
                out[key] = self._translate(value, f"{where}.{key}", used, inlining)
            elif key in _MANY and isinstance(value, list):
                out[key] = [self._translate(v, f"{where}.{key}[{i}]", used, inlining) for i, v in enumerate(value)]
            elif key in _MAP and isinstance(value, dict):
                out[key] = {k: self._translate(v, f"{where}.{key}.{k}", used, inlining) for k, v in value.items()}
            elif key == "examples" and not isinstance(value, list):
                continue
            else:
                out[key] = copy.deepcopy(value)
        if self.openapi_30:
            return self._rewrite_30(node, out)
        return out

    def _translate_ref(self, node: JSONObject, ref: str, where: str, used: set[str], inlining: tuple[str, ...]) -> Any:
        name = self.component_name(ref)
        if name is not None:
            used.add(name)
            target: JSONObject = {"$ref": "#/$defs/" + name.replace("~", "~0").replace("/", "~1")}
        elif ref in inlining:
            # A cycle through a schema that is not a named component: cut it there (accept anything) rather
            # than recurse forever.
            return {}
        else:
            target = self._translate(self.resolve(ref, where=where), where, used, (*inlining, ref))
            if not isinstance(target, dict):
                return target
        if self.openapi_30:
            return target  # 3.0 ignores everything beside a $ref
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if not siblings:
            return target
        return {**self._translate(siblings, where, used, inlining), "allOf": [target]}

    @staticmethod
    def _rewrite_30(node: JSONObject, out: JSONObject) -> JSONObject:
        if "example" in node and "examples" not in out:
            out["examples"] = [copy.deepcopy(node["example"])]
        for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            flag = out.get(bound)
            if isinstance(flag, bool):
                del out[bound]
                if flag and limit in out:
                    out[bound] = out.pop(limit)
        if node.get("nullable") is not True:
            return out
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
            if isinstance(out.get("enum"), list) and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
            return out
        # No type to widen (e.g. nullable beside allOf: [$ref]): null or whatever the rest allows.
        return {"anyOf": [out, {"type": "null"}]}
