"""The append-only, hash-chained audit record: the seam (``base.AuditStore``, the record, redaction) and
its SQL dialects beside it (``sqlite``, ``postgres``; shared logic in ``sql``)."""

from toolcrib.policy.audit.base import (
    EVENTS,
    GENESIS_HASH,
    AuditRecord,
    AuditStore,
    AuditVerification,
    Wanted,
    redact_arguments,
    redact_changes,
)
from toolcrib.policy.audit.postgres import PostgresAuditStore
from toolcrib.policy.audit.sqlite import SQLiteAuditStore

__all__ = ["EVENTS", "GENESIS_HASH", "AuditRecord", "AuditStore", "AuditVerification", "PostgresAuditStore",
           "SQLiteAuditStore", "Wanted", "redact_arguments", "redact_changes"]
