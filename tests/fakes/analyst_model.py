"""A deterministic model for "what is the average price of our HLV parts?" on the demo: it asks sql_query
for the rows, hands them to code_interpreter as its ``inputs``, and answers from the computed value.
Asked for a chart, its code also saves one. (``--model function:tests/fakes/analyst_model.py:analyst``, in
loop mode.)"""

from __future__ import annotations

import json
from typing import Any

from toolcrib.models.base import Completion, Message, ToolCall, ToolSpec

SQL = "SELECT part_number, price_usd FROM parts WHERE part_number LIKE 'HLV-%'"
CODE = """import pandas as pd
df = pd.DataFrame(inputs["rows"], columns=inputs["columns"])
print(df.to_string(index=False))
round(float(df["price_usd"].mean()), 2)
"""
CHART = "df.plot(x='part_number', y='price_usd', kind='bar').figure.savefig('prices.png')\n"


def _payload(message: Message) -> dict[str, Any]:
    body = message.content.split("</tool_result>")[0]
    data: dict[str, Any] = json.loads(body[body.index("{"):body.rindex("}") + 1])
    return data


def analyst(messages: list[Message], tools: list[ToolSpec] | None) -> Completion | str:
    results = [m for m in messages if m.role == "tool"]
    if not results:
        return _call("sql_query", query=SQL)
    last = results[-1]
    payload = _payload(last)
    if not payload.get("ok"):
        return f"The calculation failed: {payload.get('error', {}).get('message', '')}"
    if last.name == "sql_query":
        chart = "chart" in next(m.content for m in messages if m.role == "user").lower()
        code = "import matplotlib\n" + CODE.replace("round(", CHART + "round(") if chart else CODE
        return _call("code_interpreter", code=code, inputs=payload["data"])
    return f"The average price of our HLV parts is ${payload['data']['result']:.2f}."


def _call(name: str, **arguments: object) -> Completion:
    return Completion(text="", tool_calls=(ToolCall(f"call_{name}", name, dict(arguments)),), model="analyst")
