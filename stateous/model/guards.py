"""The guard language: parse a `when=` text into a tree and evaluate it.

A guard is never executed as Python. `parse_guard` reads it with Python's own parser
(`ast.parse(..., mode="eval")`, which builds a tree and runs nothing), refuses anything
outside the language with a reason — naming an unsupported construct by its `ast` node
class — and returns a `Guard` whose `evaluate` never raises: a comparison that cannot be
made is false.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stateous.model.errors import StateousError

__all__ = [
    "BRANCH_FIELDS",
    "MAX_DEPTH",
    "And",
    "BranchField",
    "Compare",
    "Count",
    "Ctx",
    "Guard",
    "GuardEnv",
    "GuardError",
    "ListLit",
    "Lit",
    "Node",
    "Not",
    "Or",
    "Payload",
    "Quant",
    "json_equal",
    "json_order",
    "parse_guard",
    "truthy",
]

#: The fields of a `joined` branch that a quantifier's condition reads by name.
BRANCH_FIELDS = ("workflow", "token", "status", "final")

_LITERAL_NAMES: dict[str, Any] = {"true": True, "false": False, "null": None}


class GuardError(StateousError):
    """A guard text outside the language: `guard {expression!r}: {reason}`."""

    code = "invalid_guard"

    def __init__(self, expression: object, reason: str) -> None:
        super().__init__(f"guard {expression!r}: {reason}")
        self.expression = expression
        self.reason = reason


# -- the tree ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Lit:
    """A scalar literal: a string, a number, `true`, `false` or `null`."""

    value: str | int | float | bool | None


@dataclass(frozen=True)
class ListLit:
    """A list literal; its items are `Lit`s (or `BranchField`s inside a quantifier)."""

    items: tuple[Lit | BranchField, ...]


@dataclass(frozen=True)
class Ctx:
    """`ctx['key']`: a key of the token's context."""

    key: str


@dataclass(frozen=True)
class Payload:
    """`payload.field`: a field of the routed event's payload (of a branch, in a quantifier)."""

    field: str


@dataclass(frozen=True)
class Count:
    """`count('event')`: accepted occurrences of an event, the routed one included."""

    event: str


@dataclass(frozen=True)
class BranchField:
    """`workflow`, `token`, `status` or `final` of one branch, inside a quantifier."""

    name: str


@dataclass(frozen=True)
class Quant:
    """`branches.all(cond)` (`kind == 'all'`) or `branches.any(cond)`."""

    kind: str
    cond: Node


@dataclass(frozen=True)
class Not:
    """`not operand`."""

    operand: Node


@dataclass(frozen=True)
class And:
    """`a and b and ...`."""

    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    """`a or b or ...`."""

    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Compare:
    """A comparison chain: `operands[0] ops[0] operands[1] ops[1] ...`."""

    operands: tuple[Node, ...]
    ops: tuple[str, ...]


Node = Lit | ListLit | Ctx | Payload | Count | BranchField | Quant | Not | And | Or | Compare
Accessor = Ctx | Payload | Count


@dataclass(frozen=True)
class GuardEnv:
    """What a guard reads when it is evaluated.

    `counts` are the ledger's accepted occurrences so far per event; the evaluator
    adds 1 for `event`, the event being routed now. `branches` is the list of the
    `joined` payload (None for other events).
    """

    context: Mapping[str, Any]
    payload: Any
    counts: Mapping[str, int]
    event: str | None
    branches: Sequence[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class Guard:
    """A parsed guard: its text as written and its tree."""

    text: str
    root: Node

    def evaluate(self, env: GuardEnv) -> bool:
        """Whether the guard holds for `env`; never raises."""
        try:
            return truthy(_Evaluator(env).value(self.root, None))
        except (
            Exception
        ):  # a guard never raises at run time: a comparison that cannot be made is false
            return False

    def nodes(self) -> Iterator[tuple[Node, bool]]:
        """Every node of the tree with whether it is inside a quantifier, depth first."""
        return _walk(self.root, False)

    def counted_events(self) -> frozenset[str]:
        """The events named by `count(...)`, anywhere in the guard."""
        return frozenset(n.event for n, _ in self.nodes() if isinstance(n, Count))

    def context_keys(self) -> frozenset[str]:
        """The context keys read as `ctx['key']`, anywhere (quantifiers included)."""
        return frozenset(n.key for n, _ in self.nodes() if isinstance(n, Ctx))

    def payload_fields(self) -> frozenset[str]:
        """The payload fields read outside `branches.all/any(...)` (the routed event's)."""
        return frozenset(
            n.field for n, inside in self.nodes() if isinstance(n, Payload) and not inside
        )

    def uses_branches(self) -> bool:
        """Whether the guard uses `branches.all(...)` or `branches.any(...)`."""
        return any(isinstance(n, Quant) for n, _ in self.nodes())


def _walk(node: Node, inside: bool) -> Iterator[tuple[Node, bool]]:
    yield node, inside
    if isinstance(node, Quant):
        yield from _walk(node.cond, True)
    elif isinstance(node, Not):
        yield from _walk(node.operand, inside)
    elif isinstance(node, And | Or | Compare):
        for child in node.operands:
            yield from _walk(child, inside)
    elif isinstance(node, ListLit):
        for item in node.items:
            yield from _walk(item, inside)


# -- parsing -----------------------------------------------------------------------------

#: Python's own parser refuses more than 200 nested brackets; a guard nested deeper than
#: this (a long run of `not`, say) is refused too, so that every walk of the tree — the
#: evaluator, the readers, the overlap proof — stays far from the recursion limit.
MAX_DEPTH = 200

_COMPARE_OPS: dict[type[ast.cmpop], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


class _Refusal(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def parse_guard(text: str) -> Guard:
    """Parse a guard text; raise `GuardError` (`guard {text!r}: {reason}`) outside the language."""
    if not isinstance(text, str):
        raise GuardError(text, "not a valid expression")
    try:
        tree = _parse_expression(text.strip())
        root = _Converter().convert(tree, inside=False)
    except _Refusal as exc:
        raise GuardError(text, exc.reason) from None
    except RecursionError:
        raise GuardError(text, "not a valid expression") from None
    return Guard(text=text, root=root)


def _parse_expression(text: str) -> ast.expr:
    """The tree of one Python expression, read by Python's parser and never run.

    Python refuses some texts with more than `SyntaxError`: a null byte or a lone
    surrogate (`ValueError`), a nesting too deep for its parser (`MemoryError`) or for
    the building of the tree (`RecursionError`). All of them are `not a valid expression`.
    """
    try:
        with warnings.catch_warnings():
            # An unknown escape such as '\q' keeps its backslash, as in Python, without
            # the SyntaxWarning that a test run turns into an error.
            warnings.simplefilter("ignore")
            return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise _Refusal("not a valid expression") from None


class _Converter:
    """Turns Python's tree into the guard's tree, refusing the rest with a reason."""

    def __init__(self) -> None:
        self.depth = 0

    def convert(self, node: ast.expr, inside: bool) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Refusal("not a valid expression")
        try:
            return self._convert(node, inside)
        finally:
            self.depth -= 1

    def _convert(self, node: ast.expr, inside: bool) -> Node:
        match node:
            case ast.BoolOp(op=op, values=values):
                operands = tuple(self.convert(v, inside) for v in values)
                return And(operands) if isinstance(op, ast.And) else Or(operands)
            case ast.UnaryOp():
                return self._unary(node, inside)
            case ast.Compare():
                return self._compare(node, inside)
            case ast.Name(id=name):
                return _name(name, inside)
            case ast.Constant(value=value):
                return _constant(value)
            case ast.List(elts=elts):
                return ListLit(tuple(_list_item(e, inside) for e in elts))
            case ast.Subscript():
                return _subscript(node)
            case ast.Attribute():
                return _attribute(node)
            case ast.Call():
                return self._call(node, inside)
            case ast.BinOp():
                raise _Refusal("arithmetic is not part of the guard language")
            case ast.Lambda():
                raise _Refusal("lambdas are not part of the guard language")
        raise _Refusal(f"{type(node).__name__} is not part of the guard language")

    def _unary(self, node: ast.UnaryOp, inside: bool) -> Node:
        if isinstance(node.op, ast.Not):
            return Not(self.convert(node.operand, inside))
        number = _negative_number(node)
        if number is not None:
            return number
        raise _Refusal("UnaryOp is not part of the guard language")

    def _compare(self, node: ast.Compare, inside: bool) -> Node:
        ops = tuple(_COMPARE_OPS[type(op)] for op in node.ops)
        if any(op in ("is", "is not") for op in ops):
            raise _Refusal("compare with < <= > >= == != in or not in")
        operands = [self.convert(node.left, inside)]
        for op, child in zip(ops, node.comparators, strict=True):
            right = self.convert(child, inside)
            if op in ("in", "not in") and not isinstance(
                right, ListLit | Ctx | Payload | Count | Quant
            ):
                raise _Refusal("`in` must search a list literal or a value, e.g. ctx['key']")
            operands.append(right)
        return Compare(tuple(operands), ops)

    def _call(self, node: ast.Call, inside: bool) -> Node:
        func, args = node.func, node.args
        if isinstance(func, ast.Name) and func.id == "count":
            if node.keywords:
                raise _Refusal("count() takes only the event name, e.g. count('stuck')")
            match args:
                case [ast.Constant(value=str() as event)]:
                    return Count(event)
            raise _Refusal("count() takes an event name as a string, e.g. count('stuck')")
        match func:
            case ast.Attribute(value=ast.Name(id="branches"), attr="all" | "any" as kind):
                if inside or node.keywords or len(args) != 1 or isinstance(args[0], ast.Starred):
                    raise _Refusal(
                        "branches.all() and branches.any() take one condition, and do not nest"
                    )
                return Quant(kind, self.convert(args[0], inside=True))
        raise _Refusal("only count(), branches.all() and branches.any() may be called")


def _negative_number(node: ast.UnaryOp) -> Lit | None:
    """`-NUMBER` as a literal: unary minus directly on an int or float literal."""
    match node:
        case ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=int() | float() as value)):
            if not isinstance(value, bool):  # `-True` is a UnaryOp on a constant, not a number
                return Lit(-value)
    return None


def _name(name: str, inside: bool) -> Node:
    if name in _LITERAL_NAMES:
        return Lit(_LITERAL_NAMES[name])
    if name == "payload":
        raise _Refusal("name a payload field, e.g. payload.severity")
    if name == "ctx":
        raise _Refusal("read one key, e.g. ctx['key']")
    if name in BRANCH_FIELDS:
        if inside:
            return BranchField(name)
        raise _Refusal(
            f"{name!r} is a field of a child; read it in branches.all(...) or branches.any(...)"
        )
    raise _Refusal(f"unknown name {name!r}")


def _constant(value: object) -> Lit:
    if isinstance(value, str) or type(value) in (int, float):
        return Lit(value)  # type: ignore[arg-type]  # checked just above: str, int or float
    raise _Refusal(f"{value!r} is not a literal of the guard language")


def _list_item(node: ast.expr, inside: bool) -> Lit | BranchField:
    match node:
        case ast.Constant(value=value):
            return _constant(value)
        case ast.UnaryOp():
            number = _negative_number(node)
            if number is not None:
                return number
        case ast.Name(id=name) if name in _LITERAL_NAMES:
            return Lit(_LITERAL_NAMES[name])
        case ast.Name(id=name) if inside and name in BRANCH_FIELDS:
            return BranchField(name)
    raise _Refusal("a list may only contain literals")


def _subscript(node: ast.Subscript) -> Node:
    match node:
        case ast.Subscript(value=ast.Name(id="ctx"), slice=ast.Constant(value=str() as key)):
            return Ctx(key)
    raise _Refusal("only ctx['key'] may be indexed")


def _attribute(node: ast.Attribute) -> Node:
    match node.value:
        case ast.Name(id="payload"):
            return Payload(node.attr)
        case ast.Name(id="ctx"):
            raise _Refusal("read context as ctx['key']")
    raise _Refusal("only payload.<field> may be read with a dot")


# -- values and evaluation ---------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float)  # bool is an int: true/false order as 1/0


def json_equal(a: object, b: object) -> bool:
    """JSON equality: numbers by value (booleans as 1/0), lists element-wise, objects by content."""
    if _is_number(a) and _is_number(b):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def json_order(a: object, b: object) -> int | None:
    """-1, 0 or 1 for two orderable values; None when they cannot be ordered."""
    if isinstance(a, int | float) and isinstance(b, int | float):
        return (a > b) - (a < b)
    if isinstance(a, str) and isinstance(b, str):
        return (a > b) - (a < b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        for x, y in zip(a, b, strict=False):
            if json_equal(x, y):
                continue
            return json_order(x, y)
        return (len(a) > len(b)) - (len(a) < len(b))
    return None


def truthy(value: object) -> bool:
    """JSON truthiness: null, false, 0, 0.0, "", [] and {} are false."""
    if value is None or value is False:
        return False
    if _is_number(value):
        return value != 0
    if isinstance(value, str | list | tuple | Mapping):
        return len(value) > 0
    return True


def _search(op: str, a: object, b: object) -> bool:
    """`a in b` / `a not in b` with the null rules: `b` null is false for both."""
    negate = op == "not in"
    if isinstance(b, list | tuple):
        found = any(json_equal(a, e) for e in b)
    elif isinstance(b, str):
        if not isinstance(a, str):
            return False
        found = a in b
    elif isinstance(b, Mapping):
        if isinstance(a, list | tuple | Mapping):
            return False
        found = isinstance(a, str) and a in b
    else:
        return False
    return not found if negate else found


def _compare_values(op: str, a: object, b: object) -> bool:
    if op == "==":
        return json_equal(a, b)
    if op == "!=":
        return not json_equal(a, b)
    if op in ("in", "not in"):
        return _search(op, a, b)
    order = json_order(a, b)
    if order is None:
        return False
    return {"<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0}[op]


class _Evaluator:
    def __init__(self, env: GuardEnv) -> None:
        self.env = env

    def value(self, node: Node, branch: Mapping[str, Any] | None) -> Any:
        if isinstance(node, Lit):
            return node.value
        if isinstance(node, ListLit):
            return [self.value(item, branch) for item in node.items]
        if isinstance(node, Ctx):
            context = self.env.context
            return context.get(node.key) if isinstance(context, Mapping) else None
        if isinstance(node, Payload):
            payload = branch.get("payload") if branch is not None else self.env.payload
            return payload.get(node.field) if isinstance(payload, Mapping) else None
        if isinstance(node, Count):
            own = 1 if node.event == self.env.event else 0
            return int(self.env.counts.get(node.event, 0)) + own
        if isinstance(node, BranchField):
            return branch.get(node.name) if branch is not None else None
        if isinstance(node, Quant):
            entries = [e for e in (self.env.branches or ()) if isinstance(e, Mapping)]
            test = all if node.kind == "all" else any
            return test(truthy(self.value(node.cond, e)) for e in entries)
        if isinstance(node, Not):
            return not truthy(self.value(node.operand, branch))
        if isinstance(node, And):
            return all(truthy(self.value(o, branch)) for o in node.operands)
        if isinstance(node, Or):
            return any(truthy(self.value(o, branch)) for o in node.operands)
        return self.compare(node, branch)

    def compare(self, node: Compare, branch: Mapping[str, Any] | None) -> bool:
        left = self.value(node.operands[0], branch)
        for op, operand in zip(node.ops, node.operands[1:], strict=True):
            right = self.value(operand, branch)
            if not _compare_values(op, left, right):
                return False
            left = right
        return True
