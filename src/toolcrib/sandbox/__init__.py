"""The local sandbox for model-written code: bubblewrap with no network, read-only inputs, a private scratch
space and resource limits (``bwrap``), and the ``code_interpreter`` tool over it (``tool``)."""

from toolcrib.sandbox.bwrap import Sandbox, SandboxLimits, SandboxRun
from toolcrib.sandbox.tool import CodeInterpreter, make_code_interpreter_tool

__all__ = ["CodeInterpreter", "Sandbox", "SandboxLimits", "SandboxRun", "make_code_interpreter_tool"]
