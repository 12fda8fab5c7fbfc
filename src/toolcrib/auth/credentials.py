"""Who is calling: the principal comes from the credential (an API key, or a JWT an identity provider
signed), never from a request body. A missing or bad credential is one ``Unauthenticated`` error with a
fixed message; the credential itself is never logged or echoed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcrib.auth.keys import KEY_PREFIX, ServiceStore
from toolcrib.errors import ConfigError, NotPermitted

if TYPE_CHECKING:
    from toolcrib.config import JWTSection
    from toolcrib.policy.principal import Principal
    from toolcrib.workspace import Workspace


class Unauthenticated(NotPermitted):
    """No credential, or one that does not identify a workspace user (HTTP 401)."""

    code = "unauthenticated"

    def __init__(self, message: str = "a valid bearer credential is required") -> None:
        super().__init__(message)


class JWTVerifier:
    """Verifies bearer JWTs against configured keys (a JWKS file or URL, or an HS256 secret from the
    environment) and maps one claim to the workspace user."""

    def __init__(self, settings: JWTSection, root: Path) -> None:
        import os

        try:
            import jwt
        except ImportError:
            from toolcrib.errors import MissingDependency

            raise MissingDependency("JWT bearer tokens", "server") from None
        self._jwt = jwt
        self.settings = settings
        self._secret: str | None = None
        self._jwks: Any = None
        self._client: Any = None
        if settings.secret_env:
            self._secret = os.environ.get(settings.secret_env)
            if not self._secret:
                raise ConfigError(f"environment variable {settings.secret_env} (the JWT secret) is not set",
                                  key="service.jwt.secret_env")
        elif settings.jwks_file:
            try:
                self._jwks = jwt.PyJWKSet.from_json((root / settings.jwks_file).read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError, jwt.PyJWKSetError) as exc:
                raise ConfigError(f"cannot read the JWKS file: {exc}", key="service.jwt.jwks_file") from None
        elif settings.jwks_url:
            self._client = jwt.PyJWKClient(settings.jwks_url, cache_keys=True)
        else:
            raise ConfigError("[service.jwt] needs jwks_file, jwks_url or secret_env", key="service.jwt")

    def _key(self, token: str) -> Any:
        if self._secret is not None:
            return self._secret
        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token).key
        kid = self._jwt.get_unverified_header(token).get("kid")
        keys = [k for k in self._jwks.keys if kid is None or k.key_id == kid]
        if not keys:
            raise Unauthenticated()
        return keys[0].key

    def user(self, token: str) -> str:
        """The workspace user named by the verified token's claim; Unauthenticated otherwise."""
        s = self.settings
        algorithms = ["HS256"] if self._secret is not None else s.algorithms
        try:
            claims = self._jwt.decode(token, self._key(token), algorithms=algorithms, audience=s.audience,
                                      issuer=s.issuer, leeway=s.leeway_s,
                                      options={"require": ["exp"], "verify_aud": s.audience is not None})
        except (self._jwt.PyJWTError, ValueError):
            raise Unauthenticated() from None
        user = claims.get(s.claim)
        if not isinstance(user, str) or not user:
            raise Unauthenticated()
        return user


class Authenticator:
    """Turns an ``Authorization`` header into the workspace principal it stands for."""

    def __init__(self, ws: Workspace, store: ServiceStore, jwt: JWTVerifier | None = None) -> None:
        self.ws = ws
        self.store = store
        self.jwt = jwt

    def principal(self, authorization: str | None) -> Principal:
        credential = _bearer(authorization)
        if credential.startswith(KEY_PREFIX):
            user = self.store.user_for(credential)
        elif self.jwt is not None and credential.count(".") == 2:
            user = self.jwt.user(credential)
        else:
            user = None
        if user is None or user not in self.ws.config.users:
            raise Unauthenticated()
        return self.ws.principal(user)

    def remembered(self, authorization: str | None) -> Principal | None:
        """The principal of an API key this process checked before, when the key store says nothing changed
        since (``ServiceStore.remembered_user``: no database query, fit for the event loop); None when only
        ``principal`` can say. Unauthenticated for a header with no bearer credential at all."""
        credential = _bearer(authorization)
        if not credential.startswith(KEY_PREFIX):
            return None
        user = self.store.remembered_user(credential)
        if user is None or user not in self.ws.config.users:
            return None
        return self.ws.principal(user)


def _bearer(authorization: str | None) -> str:
    """The credential of an ``Authorization: Bearer ...`` header; Unauthenticated for anything else."""
    scheme, _, credential = (authorization or "").partition(" ")
    credential = credential.strip()
    if scheme.lower() != "bearer" or not credential:
        raise Unauthenticated()
    return credential


def service_store(ws: Workspace) -> ServiceStore:
    """The workspace's key and rate-limit store: PostgreSQL on ``[policy] dsn``, else a SQLite file."""
    if ws.policy_dsn:
        return ServiceStore.postgres(ws.policy_dsn)
    return ServiceStore.sqlite(ws.state_dir / "service.sqlite")
