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
from toolcrib.policy.cues import Cue
from toolcrib.policy.envelope import Limit, SafetyEnvelope
from toolcrib.policy.policy import AllowAll, Decision, GroupPolicy, Policy
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import Approval, ApprovalRefused, Proposal, Review, proposal_hash
from toolcrib.policy.scanner import ClassifierScanner, Flag, PatternScanner, Scanner

__all__ = [
    "AllowAll", "Approval", "ApprovalRefused", "ApprovalStore", "AuditRecord", "AuditStore", "AuditVerification",
    "ClassifierScanner", "Cue", "Decision", "Flag", "GroupPolicy", "Limit", "PatternScanner", "Policy",
    "PostgresApprovalStore", "PostgresAuditStore", "Principal", "Proposal", "Review", "SQLiteApprovalStore",
    "SQLiteAuditStore", "SafetyEnvelope", "Scanner", "proposal_hash", "redact_arguments",
]
