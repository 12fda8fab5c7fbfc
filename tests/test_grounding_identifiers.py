"""An identifier read from text is one the gate would accept: never the digits of a longer number."""

from __future__ import annotations

from toolcrib.tools.grounding import Grounding, identifiers

ORDER = r"(?:ORD-)?\d{4,6}"  # a shape that takes bare digits, as "order 1001" is written


def test_the_digits_of_a_figure_are_no_identifier_and_the_gate_agrees() -> None:
    result = '{"total_value": 212500.0, "units": "1,500", "order": "ORD-1001", "other": 100200}'
    assert identifiers(result, ORDER) == ["ORD-1001", "100200"]
    seen = Grounding(result)
    for found in identifiers(result, ORDER):
        assert seen.contains(found)  # what code may plan from a result, the gate accepts
    assert not seen.contains("212500")
