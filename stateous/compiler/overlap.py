"""The overlap proof: are two guards of one group never both true?

Each accessor gets a small list of candidate values, one per region its literals cut
its domain into; every combination is tried with the run-time evaluator, so an
example of an overlap is always real.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from stateous.model.guards import (
    And,
    Compare,
    Count,
    Ctx,
    Guard,
    GuardEnv,
    ListLit,
    Lit,
    Node,
    Not,
    Or,
    Payload,
    Quant,
    json_equal,
)

__all__ = [
    "MAX_COMBINATIONS",
    "Domain",
    "Exclusive",
    "Overlap",
    "Undecidable",
    "Verdict",
    "accessor_label",
    "domain_of",
    "prove_exclusive",
]

#: More combinations than this and the proof gives up.
MAX_COMBINATIONS = 200_000

_KINDS = ("int", "number", "string", "bool", "object", "array", "null")
_TYPE_KINDS = {
    "integer": "int",
    "number": "number",
    "string": "string",
    "boolean": "bool",
    "null": "null",
    "object": "object",
    "array": "array",
}
_KIND_ORDER = {"count": 0, "ctx": 1, "payload": 2}
_REASON_BRANCHES = "a guard with branches.all or branches.any cannot be proven exclusive"
_REASON_TWO_VALUES = "a guard compares two values with each other"
# A comparison whose operand is itself an expression cannot be proven; the reason is
# worded in docs/guards.md.
_REASON_EXPRESSION = "a guard compares the result of a condition"
_REASON_ORDERS_LIST = "a guard orders a list"
_REASON_TOO_MANY = "they read too many values to try every case"


@dataclass(frozen=True)
class Exclusive:
    """The two guards are never both true."""


@dataclass(frozen=True)
class Overlap:
    """Both guards hold for `example` (the `{label} = {value!r}` text), that is for `facts`."""

    example: str
    facts: GuardEnv | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Undecidable:
    """The proof cannot decide; `reason` says why, in one sentence."""

    reason: str


Verdict = Exclusive | Overlap | Undecidable
Accessor = Count | Ctx | Payload


@dataclass(frozen=True)
class Domain:
    """The values an accessor can take: any, an enum, or a set of JSON kinds."""

    any: bool = False
    enum: tuple[Any, ...] | None = None
    kinds: frozenset[str] = frozenset()
    minimum: int | None = None

    def allows(self, kind: str) -> bool:
        """Whether values of JSON `kind` are possible."""
        if self.any:
            return True
        if self.enum is not None:
            return any(_kind(v) == kind for v in self.enum)
        return kind in self.kinds


ANY = Domain(any=True)


def accessor_label(acc: Accessor) -> str:
    """`ctx['k']`, `payload.f` or `count('e')`."""
    if isinstance(acc, Ctx):
        return f"ctx[{acc.key!r}]"
    if isinstance(acc, Payload):
        return f"payload.{acc.field}"
    return f"count({acc.event!r})"


def _sort_key(acc: Accessor) -> tuple[int, str]:
    if isinstance(acc, Count):
        return (_KIND_ORDER["count"], acc.event)
    if isinstance(acc, Ctx):
        return (_KIND_ORDER["ctx"], acc.key)
    return (_KIND_ORDER["payload"], acc.field)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


def _identity(value: object) -> tuple[str, str]:
    """Values are the same candidate only when both kind and text agree (1, 1.0, true differ)."""
    return (_kind(value), json.dumps(value, sort_keys=True))


# -- domains ------------------------------------------------------------------------------


def domain_of(schema: object, defs: Mapping[str, Any], depth: int = 0) -> Domain:
    """The domain of a field's JSON Schema; `defs` resolves `#/schemas/<Name>` references."""
    if not isinstance(schema, Mapping) or depth > 50:
        return ANY
    schema = _resolve(schema, defs)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return _union([domain_of(b, defs, depth + 1) for b in branches])
    if "enum" in schema and isinstance(schema["enum"], list):
        return Domain(enum=tuple(schema["enum"]))
    if "const" in schema:
        return Domain(enum=(schema["const"],))
    types = schema.get("type")
    if types is None:
        return ANY
    names = types if isinstance(types, list) else [types]
    kinds = set()
    for name in names:
        kind = _TYPE_KINDS.get(name) if isinstance(name, str) else None
        if kind is None:
            return ANY
        kinds.add(kind)
    return Domain(kinds=frozenset(kinds))


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    seen: set[str] = set()
    while isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name)
        if name in seen or not isinstance(target, Mapping):
            return {k: v for k, v in schema.items() if k != "$ref"}
        seen.add(name)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **siblings}
    return schema


def _only_null(d: Domain) -> bool:
    return not d.any and d.enum is None and d.kinds == frozenset({"null"})


def _union(branches: list[Domain]) -> Domain:
    if any(b.any for b in branches):
        return ANY
    if any(b.enum is not None for b in branches) and all(
        b.enum is not None or _only_null(b) for b in branches
    ):
        values: list[Any] = []
        for b in branches:
            values.extend(b.enum or ())
        if any(_only_null(b) for b in branches):
            values.append(None)
        return Domain(enum=tuple(values))
    kinds: set[str] = set()
    for b in branches:
        kinds |= b.kinds if b.enum is None else {_kind(v) for v in b.enum}
    return Domain(kinds=frozenset(kinds))


# -- the scan and what is compared ----------------------------------------------------------


def _is_accessor(node: Node) -> bool:
    return isinstance(node, Ctx | Payload | Count)


def _is_literal(node: Node) -> bool:
    return isinstance(node, Lit | ListLit)


def _scan_reason(node: Node) -> str | None:
    """The first undecidable situation met in a pre-order walk outside quantifiers."""
    if isinstance(node, Quant):
        return _REASON_BRANCHES
    if isinstance(node, Not):
        return _scan_reason(node.operand)
    if isinstance(node, And | Or):
        for child in node.operands:
            reason = _scan_reason(child)
            if reason:
                return reason
        return None
    if isinstance(node, Compare):
        return _compare_reason(node)
    return None


def _compare_reason(node: Compare) -> str | None:
    if any(isinstance(o, Quant) for o in node.operands):
        return _REASON_BRANCHES
    pairs = list(zip(node.operands, node.ops, node.operands[1:], strict=False))
    for left, _, right in pairs:
        if _is_accessor(left) and _is_accessor(right):
            return _REASON_TWO_VALUES
    for operand in node.operands:
        if not (_is_accessor(operand) or _is_literal(operand)):
            return _REASON_EXPRESSION
    for left, op, right in pairs:
        if op in ("<", "<=", ">", ">=") and (
            isinstance(left, ListLit) or isinstance(right, ListLit)
        ):
            return _REASON_ORDERS_LIST
    return None


@dataclass
class _Record:
    numbers: list[float | int] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    lists: list[list[Any]] = field(default_factory=list)
    members: list[Any] = field(default_factory=list)
    searched: bool = False

    def add_literal(self, value: Any) -> None:
        """Record a compared literal; `true`/`false` also as 1/0, which they equal.

        A guard compares booleans as the numbers 1/0; without 1/0 an integer field
        compared with `true` would be judged never equal to it, which is unsound.
        """
        self.add(value)
        if isinstance(value, bool):
            self.add(int(value))

    def add(self, value: Any) -> None:
        if isinstance(value, list):
            self.lists.append(value)
        elif isinstance(value, str):
            self.strings.append(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self.numbers.append(value)


def _lit_value(node: Lit | ListLit) -> Any:
    if isinstance(node, Lit):
        return node.value
    return [item.value for item in node.items if isinstance(item, Lit)]


def _collect(node: Node, records: dict[Accessor, _Record], truth: bool) -> None:
    """Record compared values; `truth` says the node is used as a truth value."""
    if _is_accessor(node):
        records.setdefault(node, _Record())  # type: ignore[arg-type]  # narrowed by _is_accessor
        if truth:
            for value in (True, False, 0):
                records[node].add(value)  # type: ignore[index]  # narrowed by _is_accessor
        return
    if isinstance(node, Not):
        _collect(node.operand, records, True)
    elif isinstance(node, And | Or):
        for child in node.operands:
            _collect(child, records, True)
    elif isinstance(node, Compare):
        for operand in node.operands:
            if _is_accessor(operand):
                records.setdefault(operand, _Record())  # type: ignore[arg-type]  # an accessor
        for left, op, right in zip(node.operands, node.ops, node.operands[1:], strict=False):
            _collect_pair(left, op, right, records)


def _collect_pair(left: Node, op: str, right: Node, records: dict[Accessor, _Record]) -> None:
    searching = op in ("in", "not in")
    if isinstance(right, Ctx | Payload | Count) and searching and _is_literal(left):
        record = records[right]
        record.searched = True
        record.members.append(_lit_value(left))  # type: ignore[arg-type]  # a literal
        return
    if isinstance(left, Ctx | Payload | Count) and _is_literal(right):
        acc, lit = left, right
    elif isinstance(right, Ctx | Payload | Count) and _is_literal(left):
        acc, lit = right, left
    else:
        return
    if isinstance(lit, ListLit) and searching:
        for item in lit.items:
            if isinstance(item, Lit):
                records[acc].add_literal(item.value)
    else:
        records[acc].add_literal(_lit_value(lit))  # type: ignore[arg-type]  # a literal


# -- candidates ------------------------------------------------------------------------------


def _distinct(values: Iterator[Any] | list[Any]) -> list[Any]:
    seen: set[tuple[str, str]] = set()
    out: list[Any] = []
    for value in values:
        ident = _identity(value)
        if ident not in seen:
            seen.add(ident)
            out.append(value)
    return out


def _numbers(record: _Record) -> list[float | int]:
    out: list[float | int] = []
    for n in record.numbers:
        if not any(n == m for m in out):
            out.append(n)
    return out


def _int_candidates(record: _Record, minimum: int | None) -> list[int]:
    values = {0}
    for n in _numbers(record):
        if isinstance(n, float) and not math.isfinite(n):
            continue
        values.update(range(math.floor(n) - 1, math.ceil(n) + 2))
    ints = sorted(values)
    if minimum is not None:
        ints = [v for v in ints if v >= minimum] or [minimum]
    return ints


def _number_candidates(record: _Record) -> list[float | int]:
    points = sorted({*(n for n in _numbers(record) if math.isfinite(n)), 0})
    values: list[float | int] = list(points)
    values.extend((a + b) / 2 for a, b in itertools.pairwise(points))
    values.extend((points[0] - 1, points[-1] + 1))
    unique: list[float | int] = []
    for v in sorted(values):
        if not any(v == u for u in unique):
            unique.append(v)
    return unique


def _string_candidates(record: _Record) -> list[str]:
    texts = sorted(set(record.strings))
    out = ["", *texts, *(t + "\0" for t in texts)]
    if not texts:
        out.append("x")
    else:
        # "\0", the smallest non-empty string, stands for the region between "" and the
        # smallest literal, which the other candidates leave out (a truthy `ctx['s']` and
        # `ctx['s'] < 'a'` are both true for "\0"). Last, so the examples the other values
        # find stay the first ones found.
        out.append("\0")
    return out


def _array_candidates(record: _Record) -> list[Any]:
    members = _distinct(record.members)
    elements = [e for lst in record.lists for e in lst]
    filler = "~"
    while any(json_equal(filler, x) for x in (*members, *elements)):
        filler += "~"
    out: list[Any] = [list(lst) for lst in record.lists]
    for r in range(len(members) + 1):
        for combo in itertools.combinations(members, r):
            candidate = list(combo)
            if any(json_equal(candidate, lst) for lst in record.lists):
                candidate.append(filler)
            out.append(candidate)
    out.append([filler])
    return out


def _candidates(domain: Domain, record: _Record) -> list[Any]:
    if domain.enum is not None:
        return _distinct(list(domain.enum))
    out: list[Any] = []
    for kind in _KINDS:
        if not domain.allows(kind):
            continue
        if kind == "int":
            out.extend(_int_candidates(record, domain.minimum))
        elif kind == "number":
            out.extend(_number_candidates(record))
        elif kind == "string":
            out.extend(_string_candidates(record))
        elif kind == "bool":
            out.extend((False, True))
        elif kind == "object":
            out.extend(({"__object__": True}, {}))
        elif kind == "array":
            out.extend(_array_candidates(record))
        else:
            out.append(None)
    return _distinct(out)


# -- the proof -------------------------------------------------------------------------------


def prove_exclusive(
    a: Guard,
    b: Guard,
    *,
    event: str,
    context_schema: Mapping[str, Any] | None,
    payload_schema: Mapping[str, Any] | None,
    defs: Mapping[str, Any],
) -> Verdict:
    """Decide whether guards `a` and `b` of the group of `event` can both be true.

    `context_schema`/`payload_schema` are the JSON Schemas of the workflow's context
    model and of the event's payload model (None: no model, any value).
    """
    for guard in (a, b):
        reason = _scan_reason(guard.root)
        if reason:
            return Undecidable(reason)
    records: dict[Accessor, _Record] = {}
    _collect(a.root, records, True)
    _collect(b.root, records, True)
    accessors = sorted(records, key=_sort_key)
    domains = [_domain(acc, event, context_schema, payload_schema, defs) for acc in accessors]
    for acc, domain in zip(accessors, domains, strict=True):
        if records[acc].searched and not domain.allows("array"):
            return Undecidable(f"`in` searches {accessor_label(acc)}, which is not a list")
    lists = [_candidates(d, records[acc]) for acc, d in zip(accessors, domains, strict=True)]
    if math.prod(len(c) for c in lists) > MAX_COMBINATIONS:
        return Undecidable(_REASON_TOO_MANY)
    for combo in itertools.product(*lists):
        env = _facts(accessors, combo)
        if a.evaluate(env) and b.evaluate(env):
            example = ", ".join(
                f"{accessor_label(acc)} = {value!r}"
                for acc, value in zip(accessors, combo, strict=True)
            )
            return Overlap(example, env)
    return Exclusive()


def _domain(
    acc: Accessor,
    event: str,
    context_schema: Mapping[str, Any] | None,
    payload_schema: Mapping[str, Any] | None,
    defs: Mapping[str, Any],
) -> Domain:
    if isinstance(acc, Count):
        return Domain(kinds=frozenset({"int"}), minimum=1 if acc.event == event else 0)
    schema = context_schema if isinstance(acc, Ctx) else payload_schema
    name = acc.key if isinstance(acc, Ctx) else acc.field
    if schema is None:
        return ANY
    properties = _resolve(schema, defs).get("properties")
    if not isinstance(properties, Mapping) or name not in properties:
        return ANY
    return domain_of(properties[name], defs)


def _facts(accessors: list[Accessor], combo: tuple[Any, ...]) -> GuardEnv:
    context: dict[str, Any] = {}
    payload: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for acc, value in zip(accessors, combo, strict=True):
        if isinstance(acc, Ctx):
            context[acc.key] = value
        elif isinstance(acc, Payload):
            payload[acc.field] = value
        else:
            counts[acc.event] = value
    # The candidates of count() already include the routed event, so no event is routed here.
    return GuardEnv(context=context, payload=payload, counts=counts, event=None)
