"""The ``toolcrib`` command line: one module per command group, assembled here.

A command module imports only ``click`` and ``toolcrib.cli._support`` when it loads, and what its
command needs when it runs, so ``toolcrib --help`` stays fast.
"""

from __future__ import annotations

import click

from toolcrib.cli.approve import approve_cmd
from toolcrib.cli.ask import ask_cmd
from toolcrib.cli.audit import audit_group
from toolcrib.cli.cluster import cluster_group
from toolcrib.cli.docs import docs_cmd
from toolcrib.cli.doctor import doctor_cmd
from toolcrib.cli.eval import eval_group
from toolcrib.cli.ingest import ingest_cmd
from toolcrib.cli.init import init_cmd
from toolcrib.cli.mcp import mcp_group
from toolcrib.cli.serve import serve_cmd
from toolcrib.cli.sql import sql_cmd
from toolcrib.cli.stats import stats_cmd
from toolcrib.cli.token import token_group
from toolcrib.cli.tools import tools_cmd
from toolcrib.cli.trace import trace_cmd
from toolcrib.cli.warm import warm_cmd
from toolcrib.cli.webhooks import webhooks_group

__all__ = ["main"]


@click.group()
@click.version_option(package_name="toolcrib")
def main() -> None:
    """toolcrib: the model proposes, the application decides."""


for _command in (ask_cmd, ingest_cmd, trace_cmd, tools_cmd, init_cmd, approve_cmd, audit_group, sql_cmd, eval_group,
                 stats_cmd, serve_cmd, cluster_group, token_group, mcp_group, webhooks_group, docs_cmd,
                 warm_cmd, doctor_cmd):
    main.add_command(_command)
