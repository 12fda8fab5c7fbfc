"""Safety envelopes: hard physical limits an ACTUATE call must stay inside, whoever approved it.

An envelope is checked after validation and again just before execution; it fails closed: a
channel with no configured limit, a value without a number, a wrong unit or a step faster than
the allowed ramp are all refused. It is stateless: the caller passes the last commanded value
(``previous``) and the time since it (``elapsed_s``) to have the ramp rate checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolcrib.errors import ConfigError, InvalidArguments

_CODE = "outside_safety_envelope"
_SI_PREFIX = {"p": 1e-12, "n": 1e-9, "u": 1e-6, "µ": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\d\s].*?)?\s*$")


@dataclass(frozen=True)
class Limit:
    """Allowed range ``min..max`` in ``unit``; optionally a maximum change per second (ramp)."""

    min: float
    max: float
    unit: str
    max_rate_per_s: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.min) and math.isfinite(self.max) and self.min <= self.max):
            raise ValueError(f"limit needs finite min <= max, got {self.min}..{self.max}")
        if self.max_rate_per_s is not None and not self.max_rate_per_s > 0:
            raise ValueError("max_rate_per_s must be positive")

    def describe(self) -> str:
        ramp = f", at most {_num(self.max_rate_per_s)} {self.unit}/s" if self.max_rate_per_s else ""
        return f"{_num(self.min)}..{_num(self.max)} {self.unit}{ramp}"


@dataclass(frozen=True)
class EnvelopeRule:
    """The limits on one argument of one tool, optionally chosen by another argument (``per``,
    e.g. the channel); ``"*"`` in ``limits`` is the fallback for any other key."""

    argument: str
    limits: Mapping[str, Limit]
    per: str | None = None

    def limit_for(self, arguments: Mapping[str, Any]) -> tuple[str, Limit | None]:
        if self.per is None:
            return "", self.limits.get("*")
        key = str(arguments.get(self.per, ""))
        return key, self.limits.get(key, self.limits.get("*"))


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


class SafetyEnvelope:
    """Limits per argument (``{"volts": Limit(...)}``, for every tool) and per tool (``rules``)."""

    def __init__(
        self,
        limits: Mapping[str, Limit] | None = None,
        *,
        rules: Mapping[str, EnvelopeRule | Iterable[EnvelopeRule]] | None = None,
    ) -> None:
        self.global_rules = [EnvelopeRule(arg, {"*": limit}) for arg, limit in (limits or {}).items()]
        self.rules: dict[str, list[EnvelopeRule]] = {}
        for tool, rule in (rules or {}).items():
            self.rules[tool] = [rule] if isinstance(rule, EnvelopeRule) else list(rule)

    @classmethod
    def from_config(cls, table: Mapping[str, Any], *, file: str | None = None) -> SafetyEnvelope:
        """Parse ``{"set_supply_voltage": {"argument": "volts", "per": "channel", "limits":
        {"A": {"min": 0, "max": 12, "unit": "V", "max_rate_per_s": 1.0}}}}`` (a TOML table; a
        tool may also map to a list of such tables). Without ``per``, ``limits`` is one limit."""
        rules: dict[str, list[EnvelopeRule]] = {}
        for tool, spec in table.items():
            specs = spec if isinstance(spec, list) else [spec]
            for i, item in enumerate(specs):
                where = f"{tool}[{i}]" if isinstance(spec, list) else tool
                if not isinstance(item, Mapping) or not isinstance(item.get("argument"), str):
                    raise ConfigError("expected a table with 'argument' and 'limits'", file=file, key=where)
                unknown = set(item) - {"argument", "per", "limits"}
                if unknown:
                    raise ConfigError(f"unknown keys {sorted(unknown)}", file=file, key=where)
                per = item.get("per")
                raw = item.get("limits")
                if not isinstance(raw, Mapping):
                    raise ConfigError("'limits' must be a table", file=file, key=f"{where}.limits")
                if per is None:
                    limits = {"*": _limit(raw, file, f"{where}.limits")}
                else:
                    limits = {str(k): _limit(v, file, f"{where}.limits.{k}") for k, v in raw.items()}
                rules.setdefault(tool, []).append(EnvelopeRule(item["argument"], limits, per))
        return cls(rules=rules)

    def applies_to(self, tool_name: str) -> bool:
        return bool(self.rules.get(tool_name))

    def describe(self, tool_name: str) -> str:
        """The limits in words, for the tool's description shown to the model and the approver."""
        parts = []
        for rule in self.rules.get(tool_name, []):
            for key, limit in rule.limits.items():
                which = f" ({rule.per} {key})" if rule.per and key != "*" else ""
                parts.append(f"{rule.argument}{which}: {limit.describe()}")
        return "; ".join(parts)

    def check(
        self,
        tool_name: str,
        arguments: Mapping[str, Any],
        *,
        previous: float | None = None,
        elapsed_s: float | None = None,
    ) -> None:
        """Raise InvalidArguments (code "outside_safety_envelope") naming value, limit and unit."""
        for rule in [*self.rules.get(tool_name, []), *self.global_rules]:
            if rule.argument not in arguments:
                continue  # required-ness is the schema's job; a rule only bounds values given
            key, limit = rule.limit_for(arguments)
            label = f"{tool_name} {rule.per} {key}" if rule.per else tool_name
            if limit is None:
                raise InvalidArguments(
                    f"{label}: no safety limits are configured for {rule.per} {key!r}, so it is refused",
                    code=_CODE)
            value = _quantity(arguments[rule.argument], limit.unit, f"{label}: {rule.argument}")
            shown = f"{rule.argument}={value:g} {limit.unit}"
            if not limit.min <= value <= limit.max:
                raise InvalidArguments(
                    f"{label}: {shown} is outside the safety envelope "
                    f"{_num(limit.min)}..{_num(limit.max)} {limit.unit}", code=_CODE)
            if limit.max_rate_per_s is not None and previous is not None and value != previous:
                if elapsed_s is None or elapsed_s <= 0:
                    raise InvalidArguments(
                        f"{label}: {shown} is a step from {previous:g} {limit.unit} with no elapsed "
                        f"time; the ramp limit is {_num(limit.max_rate_per_s)} {limit.unit}/s",
                        code=_CODE)
                rate = abs(value - previous) / elapsed_s
                if rate > limit.max_rate_per_s:
                    raise InvalidArguments(
                        f"{label}: {shown} from {previous:g} {limit.unit} in {elapsed_s:g} s is "
                        f"{rate:g} {limit.unit}/s, above the ramp limit "
                        f"{_num(limit.max_rate_per_s)} {limit.unit}/s", code=_CODE)


def _limit(raw: Any, file: str | None, key: str) -> Limit:
    if not isinstance(raw, Mapping) or not {"min", "max", "unit"} <= set(raw):
        raise ConfigError("a limit needs min, max and unit", file=file, key=key)
    unknown = set(raw) - {"min", "max", "unit", "max_rate_per_s"}
    if unknown:
        raise ConfigError(f"unknown keys {sorted(unknown)}", file=file, key=key)
    try:
        rate = raw.get("max_rate_per_s")
        return Limit(float(raw["min"]), float(raw["max"]), str(raw["unit"]),
                     None if rate is None else float(rate))
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc), file=file, key=key) from None


def _quantity(raw: Any, unit: str, label: str) -> float:
    """A number in ``unit`` from 5, 5.0, "5", "5 V", "500 mV" or {"value": 5, "unit": "V"}."""
    given_unit: str | None = None
    if isinstance(raw, Mapping) and "value" in raw:
        raw, given_unit = raw["value"], str(raw.get("unit", "")) or None
    if isinstance(raw, str):
        m = _QUANTITY.match(raw)
        if not m:
            raise InvalidArguments(f"{label}: {raw!r} is not a number with a unit", code=_CODE)
        raw, given_unit = float(m.group(1)), m.group(2) or given_unit
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise InvalidArguments(f"{label}: expected a number in {unit}", code=_CODE)
    value = float(raw)
    if not math.isfinite(value):
        raise InvalidArguments(f"{label}: {value} is not a finite number", code=_CODE)
    if given_unit is not None and given_unit != unit:
        factor = _SI_PREFIX.get(given_unit[0]) if given_unit[1:] == unit else None
        if factor is None:
            raise InvalidArguments(f"{label}: unit {given_unit!r} does not match {unit!r}", code=_CODE)
        value *= factor
    return value
