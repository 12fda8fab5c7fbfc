"""Who a request comes from (``Caller``) and the process's shared parts (``Served``), as route dependencies."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from toolcrib.policy.principal import Principal
from toolcrib.service.process import Service

# Declares the credential in the OpenAPI document (Swagger UI's Authorize button) on the operations that
# need it; auto_error=False: the credential is still read and refused (401, one error shape) by ``_caller``
BEARER = HTTPBearer(auto_error=False, scheme_name="bearer",
                    description="An API key from `toolcrib token create USER` (or a JWT where "
                                "`[service.jwt]` is configured), sent as `Authorization: Bearer ...`.")


async def _served(request: Request) -> Service:
    # async: a plain function would be run on the thread pool for every request
    service: Service = request.app.state.service
    return service


async def _caller(request: Request,
                  _declared: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)]) -> Principal:
    """The principal the request's bearer credential stands for (401 otherwise): from memory on the event
    loop for a key checked before and unchanged since, else from the key store on a thread."""
    service: Service = request.app.state.service
    authorization = request.headers.get("authorization")  # as sent: ``_bearer`` judges its shape
    known = service.auth.remembered(authorization)
    if known is not None:
        return known
    return await asyncio.to_thread(service.auth.principal, authorization)


Caller = Annotated[Principal, Depends(_caller)]
Served = Annotated[Service, Depends(_served)]
