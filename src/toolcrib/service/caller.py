"""Who a request comes from (``Caller``) and the process's shared parts (``Served``), as route dependencies."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Header, Request

from toolcrib.policy.principal import Principal
from toolcrib.service.process import Service


async def _served(request: Request) -> Service:
    # async: a plain function would be run on the thread pool for every request
    service: Service = request.app.state.service
    return service


async def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> Principal:
    """The principal the request's bearer credential stands for (401 otherwise): from memory on the event
    loop for a key checked before and unchanged since, else from the key store on a thread."""
    service: Service = request.app.state.service
    known = service.auth.remembered(authorization)
    if known is not None:
        return known
    return await asyncio.to_thread(service.auth.principal, authorization)


Caller = Annotated[Principal, Depends(_caller)]
Served = Annotated[Service, Depends(_served)]
