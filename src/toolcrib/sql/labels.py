"""Column labels a query claims: ``MAX(year) AS delivery_lead_time`` names what it does not compute.

A model writing SQL names its output columns, and a small one names them after what the user asked,
whatever the expression computes. The result then reads as if it answered ("delivery_lead_time: 2025").
``claimed_labels`` finds the output columns whose alias holds a word that neither its expression (the
columns and tables it reads) nor the words every aggregate may be called ("total", "count", "value")
hold, so that code does not state them as facts, nor count their words as answered.
"""

from __future__ import annotations

from sqlglot import exp

from toolcrib.text import stems

# what any computed column may be called, whatever it reads
_GENERIC = stems("total sum count number num cnt avg average mean min minimum max maximum value amount result "
                 "all per the and first last latest earliest highest lowest")


def claimed_labels(tree: exp.Expression, dialect: str) -> dict[str, str]:
    """Alias -> expression (as SQL) of each output column of ``tree``'s outermost SELECT whose alias
    names something its expression does not read."""
    if not isinstance(tree, exp.Select):
        return {}
    tables = _words(" ".join(t.name for t in tree.find_all(exp.Table)))
    claimed: dict[str, str] = {}
    for selected in tree.expressions:
        if not isinstance(selected, exp.Alias) or isinstance(selected.this, exp.Column):
            continue  # a plain column renamed is the model's label for a real column: "price AS cost"
        read = tables | _words(" ".join(column.name for column in selected.this.find_all(exp.Column)))
        said = _words(selected.alias) - _GENERIC
        # "temp" is read in "temperature": a word counts as read when it starts one read, or one starts it
        if any(not any(w.startswith(r) or r.startswith(w) for r in read) for w in said):
            claimed[selected.alias] = selected.this.sql(dialect=dialect)
    return claimed


def _words(names: str) -> set[str]:
    """The stems of the words of SQL names ("delivery_lead_time": deliver..., lead, tim), three letters or more."""
    return {w for w in stems(names.replace("_", " ")) if len(w) > 2}
