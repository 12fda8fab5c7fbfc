"""Where proposals wait for a person, and where an approval is claimed exactly once: the seam
(``base.ApprovalStore``) and its SQL dialects beside it (``sqlite``, ``postgres``; shared logic in ``sql``)."""

from toolcrib.policy.approvals.base import OUTCOMES, ApprovalStore
from toolcrib.policy.approvals.postgres import PostgresApprovalStore
from toolcrib.policy.approvals.sqlite import SQLiteApprovalStore

__all__ = ["OUTCOMES", "ApprovalStore", "PostgresApprovalStore", "SQLiteApprovalStore"]
