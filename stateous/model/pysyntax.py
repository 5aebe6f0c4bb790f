"""A parser of one Python expression into a neutral tree, for the guard language.

Guards are written in Python's expression syntax but are never executed and never
handed to `eval` or `ast`: this module reads the tokens of `tokenize` and builds
`PyNode`s named like Python's AST node kinds (`Compare`, `IfExp`, `Dict`, ...), so
that the guard checker can name an unsupported construct the way the spec does.
Only true syntax errors raise `PySyntaxError`.
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PyNode", "PySyntaxError", "parse_expression"]

_COMPARE_OPS = frozenset({"<", ">", "==", ">=", "<=", "!="})
_BIN_LEVELS: tuple[frozenset[str], ...] = (
    frozenset({"|"}),
    frozenset({"^"}),
    frozenset({"&"}),
    frozenset({"<<", ">>"}),
    frozenset({"+", "-"}),
    frozenset({"*", "/", "//", "%", "@"}),
)
# Keywords that can never start an operand (True/False/None/lambda/await/yield are handled).
_HARD_KEYWORDS = frozenset(
    {
        "and", "as", "assert", "async", "break", "class", "continue", "def", "del", "elif",
        "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
        "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with",
    }
)  # fmt: skip
_STRING_PREFIX_CHARS = frozenset("rRbBuUfF")


class PySyntaxError(Exception):
    """The text is not one Python expression."""


@dataclass(frozen=True)
class PyNode:
    """A node of the neutral tree.

    `kind` is the name of Python's AST node kind; `value` holds a constant, a
    name, an attribute name or an operator; `ops` the operators of a `Compare`;
    `keywords` the number of keyword arguments (`**x` included) of a `Call`.
    """

    kind: str
    children: tuple[PyNode, ...] = ()
    value: Any = None
    ops: tuple[str, ...] = field(default=())
    keywords: int = 0


@dataclass(frozen=True)
class _Tok:
    kind: str  # NAME, NUMBER, STRING, FSTRING, OP, END
    text: str


def parse_expression(text: str) -> PyNode:
    """Parse `text` (already stripped) as one Python expression; raise `PySyntaxError`."""
    try:
        tokens = _lex(text)
        return _Parser(tokens).parse()
    except PySyntaxError:
        raise
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, UnicodeError) as exc:
        raise PySyntaxError(str(exc)) from exc


def _lex(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    depth = 0  # nesting of f-strings
    fstring: list[str] = []
    ended = False  # a NEWLINE outside brackets ends the one logical line
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        kind = tok.type
        if kind == tokenize.FSTRING_START:
            depth += 1
        if depth:
            fstring.append(tok.string)
            if kind == tokenize.FSTRING_END:
                depth -= 1
                if not depth:
                    out.append(_Tok("FSTRING", "".join(fstring)))
                    fstring = []
            continue
        if kind in (tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER):
            continue
        if kind == tokenize.NEWLINE:
            ended = True
            continue
        if ended and kind not in (tokenize.DEDENT, tokenize.ENDMARKER):
            raise PySyntaxError("more than one line")
        if kind in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING, tokenize.OP):
            out.append(_Tok(tokenize.tok_name[kind], tok.string))
            continue
        raise PySyntaxError(f"unexpected {tok.string!r}")
    out.append(_Tok("END", ""))
    return out


def _number(text: str) -> int | float | complex:
    lower = text.lower()
    if lower.endswith("j"):
        return complex(0.0, float(text[:-1]))
    if lower.startswith(("0x", "0o", "0b")):
        return int(text, 0)
    if any(c in lower for c in ".e"):
        return float(text)
    return int(text, 0)


def _string(text: str) -> str | bytes:
    """The value of one string literal token (prefix, quotes, escapes)."""
    i = 0
    while text[i] in _STRING_PREFIX_CHARS:
        i += 1
    prefix, body = text[:i].lower(), text[i:]
    quote = 3 if body[:3] in ("'''", '"""') else 1
    inner = body[quote:-quote]
    if "r" in prefix:
        value = inner
    else:
        # Python's own escape decoder; non-ASCII text survives the latin-1 round trip.
        value = inner.encode("latin-1", "backslashreplace").decode("unicode_escape")
    if "b" in prefix:
        return value.encode("latin-1")
    return value


class _Parser:
    """Recursive descent over Python's expression grammar (precedence as in Python)."""

    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens = tokens
        self.pos = 0

    # -- token helpers -----------------------------------------------------------------
    @property
    def tok(self) -> _Tok:
        return self.tokens[self.pos]

    def peek(self, offset: int = 1) -> _Tok:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def advance(self) -> _Tok:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def at_op(self, *ops: str) -> bool:
        return self.tok.kind == "OP" and self.tok.text in ops

    def at_name(self, name: str) -> bool:
        return self.tok.kind == "NAME" and self.tok.text == name

    def expect_op(self, op: str) -> None:
        if not self.at_op(op):
            raise PySyntaxError(f"expected {op!r}")
        self.advance()

    def expect_name(self, name: str) -> None:
        if not self.at_name(name):
            raise PySyntaxError(f"expected {name!r}")
        self.advance()

    # -- grammar -----------------------------------------------------------------------
    def parse(self) -> PyNode:
        node = self.expressions()
        if self.tok.kind != "END":
            raise PySyntaxError("unexpected text after the expression")
        return node

    def expressions(self) -> PyNode:
        first = self.expression()
        if not self.at_op(","):
            return first
        items = [first]
        while self.at_op(","):
            self.advance()
            if self.tok.kind == "END":
                break
            items.append(self.expression())
        return PyNode("Tuple", tuple(items))

    def expression(self) -> PyNode:
        if self.at_name("lambda"):
            return self.lambda_()
        body = self.disjunction()
        if self.at_name("if"):
            self.advance()
            test = self.disjunction()
            self.expect_name("else")
            orelse = self.expression()
            return PyNode("IfExp", (test, body, orelse))
        return body

    def lambda_(self) -> PyNode:
        self.advance()
        depth = 0
        while not (depth == 0 and self.at_op(":")):
            if self.tok.kind == "END":
                raise PySyntaxError("lambda without ':'")
            if self.at_op("(", "[", "{"):
                depth += 1
            elif self.at_op(")", "]", "}"):
                depth -= 1
            self.advance()
        self.advance()
        return PyNode("Lambda", (self.expression(),))

    def named(self) -> PyNode:
        """An expression that may be `name := value` (inside brackets and calls)."""
        if self.tok.kind == "NAME" and self.peek().kind == "OP" and self.peek().text == ":=":
            target = self.atom()
            self.advance()
            return PyNode("NamedExpr", (target, self.expression()))
        return self.expression()

    def star_named(self) -> PyNode:
        if self.at_op("*"):
            self.advance()
            return PyNode("Starred", (self.bitor(),))
        return self.named()

    def disjunction(self) -> PyNode:
        return self._bool_op("or", self.conjunction)

    def conjunction(self) -> PyNode:
        return self._bool_op("and", self.inversion)

    def _bool_op(self, word: str, operand: Callable[[], PyNode]) -> PyNode:
        items = [operand()]
        while self.at_name(word):
            self.advance()
            items.append(operand())
        if len(items) == 1:
            return items[0]
        return PyNode("BoolOp", tuple(items), value=word)

    def inversion(self) -> PyNode:
        if self.at_name("not"):
            self.advance()
            return PyNode("UnaryOp", (self.inversion(),), value="not")
        return self.comparison()

    def comparison(self) -> PyNode:
        left = self.bitor()
        operands = [left]
        ops: list[str] = []
        while True:
            op = self._compare_op()
            if op is None:
                break
            ops.append(op)
            operands.append(self.bitor())
        if not ops:
            return left
        return PyNode("Compare", tuple(operands), ops=tuple(ops))

    def _compare_op(self) -> str | None:
        if self.tok.kind == "OP" and self.tok.text in _COMPARE_OPS:
            return self.advance().text
        if self.at_name("in"):
            self.advance()
            return "in"
        if self.at_name("not") and self.peek().kind == "NAME" and self.peek().text == "in":
            self.pos += 2
            return "not in"
        if self.at_name("is"):
            self.advance()
            if self.at_name("not"):
                self.advance()
                return "is not"
            return "is"
        return None

    def bitor(self, level: int = 0) -> PyNode:
        if level == len(_BIN_LEVELS):
            return self.factor()
        left = self.bitor(level + 1)
        while self.tok.kind == "OP" and self.tok.text in _BIN_LEVELS[level]:
            op = self.advance().text
            left = PyNode("BinOp", (left, self.bitor(level + 1)), value=op)
        return left

    def factor(self) -> PyNode:
        if self.at_op("+", "-", "~"):
            op = self.advance().text
            return PyNode("UnaryOp", (self.factor(),), value=op)
        return self.power()

    def power(self) -> PyNode:
        if self.at_name("await"):
            self.advance()
            base = PyNode("Await", (self.primary(),))
        else:
            base = self.primary()
        if self.at_op("**"):
            self.advance()
            return PyNode("BinOp", (base, self.factor()), value="**")
        return base

    def primary(self) -> PyNode:
        node = self.atom()
        while True:
            if self.at_op("."):
                self.advance()
                if self.tok.kind != "NAME":
                    raise PySyntaxError("expected a name after '.'")
                node = PyNode("Attribute", (node,), value=self.advance().text)
            elif self.at_op("("):
                node = self.call(node)
            elif self.at_op("["):
                node = self.subscript(node)
            else:
                return node

    def call(self, func: PyNode) -> PyNode:
        self.advance()
        args: list[PyNode] = []
        keywords = 0
        while not self.at_op(")"):
            if self.at_op("**"):
                self.advance()
                self.expression()
                keywords += 1
            elif self.tok.kind == "NAME" and self.peek().kind == "OP" and self.peek().text == "=":
                self.pos += 2
                self.expression()
                keywords += 1
            else:
                arg = self.star_named()
                if self.at_name("for") or self.at_name("async"):
                    arg = PyNode("GeneratorExp", (arg, *self.comprehension()))
                args.append(arg)
            if not self.at_op(","):
                break
            self.advance()
        self.expect_op(")")
        return PyNode("Call", (func, *args), keywords=keywords)

    def subscript(self, value: PyNode) -> PyNode:
        self.advance()
        items: list[PyNode] = []
        trailing_comma = False
        while not self.at_op("]"):
            items.append(self.slice_item())
            trailing_comma = self.at_op(",")
            if not trailing_comma:
                break
            self.advance()
        self.expect_op("]")
        if not items:
            raise PySyntaxError("empty subscript")
        index = (
            items[0] if len(items) == 1 and not trailing_comma else PyNode("Tuple", tuple(items))
        )
        return PyNode("Subscript", (value, index))

    def slice_item(self) -> PyNode:
        parts: list[PyNode] = []
        is_slice = False
        if not self.at_op(":"):
            parts.append(self.star_named())
        while self.at_op(":"):
            is_slice = True
            self.advance()
            if not self.at_op(":", ",", "]"):
                parts.append(self.expression())
        if is_slice:
            return PyNode("Slice", tuple(parts))
        return parts[0]

    def comprehension(self) -> tuple[PyNode, ...]:
        parts: list[PyNode] = []
        while self.at_name("for") or self.at_name("async"):
            if self.at_name("async"):
                self.advance()
            self.expect_name("for")
            parts.append(self.bitor())
            while self.at_op(","):
                self.advance()
                parts.append(self.bitor())
            self.expect_name("in")
            parts.append(self.disjunction())
            while self.at_name("if"):
                self.advance()
                parts.append(self.disjunction())
        return tuple(parts)

    # -- atoms -------------------------------------------------------------------------
    def atom(self) -> PyNode:
        tok = self.tok
        if tok.kind == "NAME":
            return self.name_atom()
        if tok.kind == "NUMBER":
            self.advance()
            return PyNode("Constant", value=_number(tok.text))
        if tok.kind in ("STRING", "FSTRING"):
            return self.strings()
        if self.at_op("..."):
            self.advance()
            return PyNode("Constant", value=Ellipsis)
        if self.at_op("("):
            return self.paren()
        if self.at_op("["):
            return self.bracket()
        if self.at_op("{"):
            return self.brace()
        raise PySyntaxError(f"unexpected {tok.text!r}")

    def name_atom(self) -> PyNode:
        text = self.advance().text
        constants: dict[str, Any] = {"True": True, "False": False, "None": None}
        if text in constants:
            return PyNode("Constant", value=constants[text])
        if text in _HARD_KEYWORDS or text in ("lambda", "yield", "await"):
            raise PySyntaxError(f"unexpected keyword {text!r}")
        return PyNode("Name", value=text)

    def strings(self) -> PyNode:
        values: list[str | bytes] = []
        formatted = False
        while self.tok.kind in ("STRING", "FSTRING"):
            tok = self.advance()
            if tok.kind == "FSTRING":
                formatted = True
            else:
                values.append(_string(tok.text))
        kinds = {type(v) for v in values}
        if len(kinds) > 1 or (formatted and bytes in kinds):
            raise PySyntaxError("cannot mix bytes and nonbytes literals")
        if formatted:
            return PyNode("JoinedStr")
        if bytes in kinds:
            return PyNode("Constant", value=b"".join(v for v in values if isinstance(v, bytes)))
        return PyNode("Constant", value="".join(v for v in values if isinstance(v, str)))

    def paren(self) -> PyNode:
        self.advance()
        if self.at_op(")"):
            self.advance()
            return PyNode("Tuple")
        if self.at_name("yield"):
            self.advance()
            inner = () if self.at_op(")") else (self.expressions(),)
            self.expect_op(")")
            return PyNode("Yield", inner)
        first = self.star_named()
        if self.at_name("for") or self.at_name("async"):
            node = PyNode("GeneratorExp", (first, *self.comprehension()))
            self.expect_op(")")
            return node
        if not self.at_op(","):
            self.expect_op(")")
            if first.kind == "Starred":
                raise PySyntaxError("cannot use starred expression here")
            return first
        items = [first]
        while self.at_op(","):
            self.advance()
            if self.at_op(")"):
                break
            items.append(self.star_named())
        self.expect_op(")")
        return PyNode("Tuple", tuple(items))

    def bracket(self) -> PyNode:
        self.advance()
        items: list[PyNode] = []
        while not self.at_op("]"):
            items.append(self.star_named())
            if len(items) == 1 and (self.at_name("for") or self.at_name("async")):
                node = PyNode("ListComp", (items[0], *self.comprehension()))
                self.expect_op("]")
                return node
            if not self.at_op(","):
                break
            self.advance()
        self.expect_op("]")
        return PyNode("List", tuple(items))

    def brace(self) -> PyNode:
        self.advance()
        if self.at_op("}"):
            self.advance()
            return PyNode("Dict")
        items: list[PyNode] = []
        is_dict = self.at_op("**") or self._dict_item_follows()
        while not self.at_op("}"):
            items.extend(self.dict_item() if is_dict else (self.star_named(),))
            if len(items) <= 2 and (self.at_name("for") or self.at_name("async")):
                node = PyNode("DictComp" if is_dict else "SetComp", (*items, *self.comprehension()))
                self.expect_op("}")
                return node
            if not self.at_op(","):
                break
            self.advance()
        self.expect_op("}")
        return PyNode("Dict" if is_dict else "Set", tuple(items))

    def _dict_item_follows(self) -> bool:
        """Whether the first item of `{...}` is `key: value` (looks ahead, then rewinds)."""
        start = self.pos
        try:
            self.expression()
            return self.at_op(":")
        except PySyntaxError:
            return False
        finally:
            self.pos = start

    def dict_item(self) -> tuple[PyNode, ...]:
        if self.at_op("**"):
            self.advance()
            return (self.bitor(),)
        key = self.expression()
        self.expect_op(":")
        return (key, self.expression())
