"""Figures an answer computes from the evidence: worked out by code, and accepted only from traced operands.

A small model asked for a discounted price, a total or a difference writes a figure no source holds, and
often a wrong one. Code does the arithmetic instead:

- an expression the answer writes out ("£120 - £18 = £100", "15% of £120 is £18") whose operands all have
  a source is evaluated by code, and its result replaced where the model got it wrong;
- a figure no source holds is accepted when one operation on figures that have one (the answer's own
  grounded figures and the request's) gives it: a sum, a difference, a product, a ratio, a percentage of a
  value, a value less or plus a percentage, or the sum of every other figure of its sentence.

Each computation is shown with its operands (``Computed.describe``), so a reader can check it.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from itertools import permutations

_NUMBER = r"[$€£]?\d{1,3}(?:,\d{3})+(?:\.\d+)?%?|[$€£]?\d+(?:\.\d+)?%?"
_OPERATOR = r"\s*[-+×x*/÷−–]\s*"
_UNIT = r"(?:\s*(?:pounds?|dollars?|euros?|GBP|USD|EUR)\b)?"  # "22.0 pounds * (1 - 0.10)"
_OPERAND = rf"\(*\s*(?:{_NUMBER}){_UNIT}\s*\)*"
# "£120 - £18 = £100", "2 x £8.50 = £17", "22 * (1 - 0.10) = 19.80": operands and operators, "=", the result
_EXPRESSION = re.compile(rf"(?<![\w.-])({_OPERAND}(?:{_OPERATOR}{_OPERAND})+)\s*=\s*({_NUMBER})(?![\w%])")
_UNITS = re.compile(_UNIT[3:-2])
# "15% of £120 is £18", "10% of 420 = 42"
_PERCENT_OF = re.compile(rf"(?<![\w.-])(\d+(?:\.\d+)?)%\s+of\s+({_NUMBER})\s+(?:is|=|comes to|makes)\s+({_NUMBER})"
                         r"(?![\w%])")
_NOT_FIGURES = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?|\b\d{1,2}:\d{2}\b|[A-Za-z]+-?\d+")
_FIGURE = re.compile(_NUMBER)
_SYMBOLS = str.maketrans("×x÷−–", "**/--")
_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
# one operation on two figures a, b: its result and how it is written
_OPERATIONS: tuple[tuple[Callable[[float, float], float | None], str], ...] = (
    (lambda a, b: a + b, "{a} + {b}"),
    (lambda a, b: a - b, "{a} - {b}"),
    (lambda a, b: a * b, "{a} × {b}"),
    (lambda a, b: a / b if b else None, "{a} ÷ {b}"),
    (lambda a, b: a * b / 100 if 0 < b <= 100 else None, "{b}% of {a}"),
    (lambda a, b: a * (1 - b / 100) if 0 < b < 100 else None, "{a} less {b}%"),
    (lambda a, b: a * (1 + b / 100) if 0 < b <= 100 else None, "{a} plus {b}%"),
    (lambda a, b: a / b * 100 if b and a < b else None, "{a} as a percentage of {b}"),
)
_SHARE = _OPERATIONS[-1][1]
_CENT = 0.005 + 1e-9


@dataclass(frozen=True)
class Computed:
    """A figure code worked out: how, and what the model had written where it differed."""

    how: str
    figure: float
    written: str = ""

    def describe(self) -> str:
        said = f" (the answer said {self.written})" if self.written else ""
        return f"{self.how} = {figure_text(self.figure)}{said}"


def figure_text(value: float) -> str:
    """A figure as an answer writes it: whole, or to two decimals."""
    return f"{value:,.0f}" if abs(value - round(value)) < 1e-9 else f"{value:,.2f}"


def figures(text: str) -> list[float]:
    """Every figure ``text`` states, small counts included, less dates, times and identifiers' digits."""
    return [_value(m.group(0)) for m in _FIGURE.finditer(_NOT_FIGURES.sub(" ", text))]


def worked_out(text: str, grounded: Callable[[float], bool]) -> tuple[str, list[Computed]]:
    """``text`` with each written-out expression whose operands are all ``grounded`` (or worked out before
    it) evaluated by code, a wrong result replaced by the right one; and each evaluation."""
    computed: list[Computed] = []

    def known(figure: float) -> bool:  # 1 and 100 are the form of a percentage ("1 - 0.10"), 0.10 its 10%
        return (figure in (1, 100) or grounded(figure) or grounded(round(figure * 100, 6))
                or any(_close(c.figure, figure) for c in computed))

    def percent_of(m: re.Match[str]) -> str:
        share, whole = float(m.group(1)), _value(m.group(2))
        if not (known(share) and known(whole)):
            return m.group(0)
        return (m.group(0)[:m.start(3) - m.start(0)]
                + _settled(m.group(3), whole * share / 100, f"{m.group(1)}% of {m.group(2)}", computed))

    def expression(m: re.Match[str]) -> str:
        value = _evaluate(m.group(1))
        if value is None or not all(known(_value(n)) for n in _FIGURE.findall(m.group(1))):
            return m.group(0)
        return m.group(0)[:m.start(2) - m.start(0)] + _settled(m.group(2), value, m.group(1), computed)

    return _EXPRESSION.sub(expression, _PERCENT_OF.sub(percent_of, text)), computed


def traced(figure: float, operands: Collection[float], sentence: Iterable[float] = ()) -> Computed | None:
    """How one operation on two of ``operands`` (figures that have a source) gives ``figure``, or the sum of
    the other figures of its ``sentence`` (three or more, each one of ``operands``); None when none does."""
    others = [f for f in sentence if f != figure]
    if len(others) >= 3 and all(f in operands for f in others) and abs(sum(others) - figure) < _CENT:
        return Computed(" + ".join(figure_text(f) for f in others), figure)
    for a, b in permutations(sorted(f for f in set(operands) if f not in (0, 1)), 2):  # x 1 computes nothing
        for operation, how in _OPERATIONS:
            value = operation(a, b)
            # a share may be rounded as written ("33.3%"); any other figure is exact to the cent ("£20" for
            # 19.80 is wrong)
            if value is not None and (_close(value, figure) if how == _SHARE else abs(value - figure) < _CENT):
                return Computed(how.format(a=figure_text(a), b=figure_text(b)), figure)
    return None


def _settled(written: str, value: float, how: str, computed: list[Computed]) -> str:
    """The result as it stands, or as code worked it out where the model's differs (currency kept)."""
    if written.endswith("%") and abs(value * 100 - _value(written)) < abs(value - _value(written)):
        value *= 100  # "10 / 30 = 33.3%": the ratio, as a percentage
    decimals = len(written.rstrip("%").partition(".")[2])
    off = abs(value - _value(written))
    if off < _CENT or (written.endswith("%") and off <= 0.5 / 10.0 ** decimals):  # a share as rounded
        computed.append(Computed(how.strip(), value))
        return written
    computed.append(Computed(how.strip(), value, written))
    currency = written[0] if written[0] in "$€£" else ""
    figure = f"{value:,.2f}" if "." in written else figure_text(value)  # "£17.50" wrong: "£17.00"
    return f"{currency}{figure}{'%' if written.endswith('%') else ''}"


def _evaluate(expression: str) -> float | None:
    """An expression of figures and + - × ÷, evaluated by code (precedence as written in arithmetic)."""
    plain = re.sub(r"[$€£,]", "", _UNITS.sub("", expression))
    plain = re.sub(r"(\d)%", r"(\1/100)", plain)
    plain = plain.translate(_SYMBOLS)
    try:
        return _value_of(ast.parse(plain, mode="eval").body)
    except (SyntaxError, ZeroDivisionError, ValueError):
        return None


def _value_of(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_value_of(node.left), _value_of(node.right))
    raise ValueError("not arithmetic")


def _value(text: str) -> float:
    return float(re.sub(r"[$€£,%]", "", text))


def _close(value: float, figure: float) -> bool:
    """``value`` written as ``figure``: equal to the figure's own decimals."""
    decimals = len(f"{figure:g}".partition(".")[2])
    return abs(value - figure) <= 0.5 / 10.0 ** decimals + 1e-9
