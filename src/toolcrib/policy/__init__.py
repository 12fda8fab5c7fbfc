"""Who may do what, and the record of it."""

from toolcrib.policy.approvals import ApprovalStore, PostgresApprovalStore, SQLiteApprovalStore
from toolcrib.policy.audit import (
    AuditRecord,
    AuditStore,
    AuditVerification,
    PostgresAuditStore,
    SQLiteAuditStore,
    redact_arguments,
)
from toolcrib.policy.envelope import Limit, SafetyEnvelope
from toolcrib.policy.policy import AllowAll, Decision, GroupPolicy, Policy
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import Approval, ApprovalRefused, Proposal, proposal_hash
from toolcrib.policy.scanner import Flag, PatternScanner, Scanner

__all__ = [
    "AllowAll", "Approval", "ApprovalRefused", "ApprovalStore", "AuditRecord", "AuditStore", "AuditVerification",
    "Decision", "Flag", "GroupPolicy", "Limit", "PatternScanner", "Policy", "PostgresApprovalStore",
    "PostgresAuditStore", "Principal", "Proposal", "SQLiteApprovalStore", "SQLiteAuditStore", "SafetyEnvelope",
    "Scanner", "proposal_hash", "redact_arguments",
]
