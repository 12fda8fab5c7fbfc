"""Safety envelopes: an ACTUATE call outside its physical limits is refused, with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from toolcrib.errors import ConfigError, InvalidArguments
from toolcrib.policy.envelope import EnvelopeRule, Limit, SafetyEnvelope

CONFIG: dict[str, Any] = {
    "set_supply_voltage": {
        "argument": "volts",
        "per": "channel",
        "limits": {
            "A": {"min": 0, "max": 12, "unit": "V", "max_rate_per_s": 1.0},
            "B": {"min": 0, "max": 5, "unit": "V"},
        },
    },
    "set_heater": {"argument": "celsius", "limits": {"min": 15, "max": 80, "unit": "degC"}},
}


def _refusal(env: SafetyEnvelope, tool: str, args: dict[str, Any], **kw: Any) -> str:
    with pytest.raises(InvalidArguments) as info:
        env.check(tool, args, **kw)
    assert info.value.code == "outside_safety_envelope"
    assert info.value.to_result()["error"]["code"] == "outside_safety_envelope"
    return info.value.message


def test_values_inside_the_envelope_pass() -> None:
    env = SafetyEnvelope.from_config(CONFIG)
    env.check("set_supply_voltage", {"channel": "A", "volts": 12})
    env.check("set_supply_voltage", {"channel": "B", "volts": 0.0})
    env.check("set_supply_voltage", {"channel": "A", "volts": 5.5}, previous=5.0, elapsed_s=1.0)
    env.check("set_heater", {"celsius": 20})
    env.check("lookup_part", {"volts": 1000})  # no rule for this tool


def test_out_of_range_names_value_limit_and_unit() -> None:
    env = SafetyEnvelope.from_config(CONFIG)
    msg = _refusal(env, "set_supply_voltage", {"channel": "A", "volts": 15})
    assert "volts=15 V" in msg and "0..12 V" in msg and "channel A" in msg
    msg = _refusal(env, "set_supply_voltage", {"channel": "B", "volts": 6})
    assert "0..5 V" in msg
    assert "0..5 V" in _refusal(env, "set_supply_voltage", {"channel": "B", "volts": -0.1})
    assert "15..80 degC" in _refusal(env, "set_heater", {"celsius": 200})


def test_a_channel_without_limits_is_refused() -> None:
    env = SafetyEnvelope.from_config(CONFIG)
    assert "no safety limits" in _refusal(env, "set_supply_voltage", {"channel": "Z", "volts": 1})


def test_ramp_rate_is_enforced() -> None:
    env = SafetyEnvelope.from_config(CONFIG)
    msg = _refusal(env, "set_supply_voltage", {"channel": "A", "volts": 10}, previous=2.0, elapsed_s=2.0)
    assert "4 V/s" in msg and "ramp limit 1 V/s" in msg
    assert "no elapsed time" in _refusal(env, "set_supply_voltage", {"channel": "A", "volts": 3},
                                         previous=2.0)
    env.check("set_supply_voltage", {"channel": "A", "volts": 3}, previous=3.0)  # no change
    env.check("set_supply_voltage", {"channel": "B", "volts": 5}, previous=0.0, elapsed_s=0.001)


def test_units_carried_in_the_argument_are_checked_and_converted() -> None:
    env = SafetyEnvelope.from_config(CONFIG)
    env.check("set_supply_voltage", {"channel": "A", "volts": "11.5 V"})
    env.check("set_supply_voltage", {"channel": "A", "volts": "500mV"})
    env.check("set_supply_voltage", {"channel": "A", "volts": {"value": 3, "unit": "V"}})
    assert "15 V" in _refusal(env, "set_supply_voltage", {"channel": "A", "volts": "15000 mV"})
    assert "unit 'A'" in _refusal(env, "set_supply_voltage", {"channel": "A", "volts": "3 A"})
    assert "not a number" in _refusal(env, "set_supply_voltage", {"channel": "A", "volts": "twelve"})
    assert "finite" in _refusal(env, "set_supply_voltage", {"channel": "A", "volts": float("nan")})
    assert "expected a number" in _refusal(env, "set_supply_voltage", {"channel": "A", "volts": True})


def test_argument_limits_apply_to_every_tool_and_describe_reads_well() -> None:
    env = SafetyEnvelope({"volts": Limit(0, 24, "V")},
                         rules={"pulse": EnvelopeRule("amps", {"*": Limit(0, 2, "A", 0.5)})})
    assert "0..24 V" in _refusal(env, "anything", {"volts": 30})
    assert "0..2 A" in _refusal(env, "pulse", {"amps": 3})
    described = SafetyEnvelope.from_config(CONFIG).describe("set_supply_voltage")
    assert described == "volts (channel A): 0..12 V, at most 1 V/s; volts (channel B): 0..5 V"


@pytest.mark.parametrize("bad", [
    {"set_x": {"limits": {}}},
    {"set_x": {"argument": "v", "limits": {"min": 0, "max": 1}}},
    {"set_x": {"argument": "v", "limits": {"min": 5, "max": 1, "unit": "V"}}},
    {"set_x": {"argument": "v", "limits": {"min": "low", "max": 1, "unit": "V"}}},
    {"set_x": {"argument": "v", "limit": {}}},
    {"set_x": {"argument": "v", "per": "ch", "limits": {"A": {"min": 0, "max": 1, "unit": "V", "x": 1}}}},
])
def test_broken_config_names_the_key(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as info:
        SafetyEnvelope.from_config(bad, file="toolcrib.toml")
    assert "toolcrib.toml" in str(info.value) and "set_x" in str(info.value)
