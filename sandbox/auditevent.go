package sandbox

// AuditKind names what an AuditEvent records.
type AuditKind string

const (
	// AuditQuarantine: the jail moved aside a protected path a command
	// created (Path), or could not (Detail says why).
	AuditQuarantine AuditKind = "quarantine"
	// AuditNeutralised: the jail disarmed repository-controlled
	// execution a command planted (a git key, a hooks path; Detail names it).
	AuditNeutralised AuditKind = "neutralised"
	// AuditFenced: the jail refuses further commands on a workspace
	// because a quarantine or neutralisation could not be done.
	AuditFenced AuditKind = "fenced"
	// AuditDegraded: a command ran with at least one confinement layer
	// skipped (Enforcement says which).
	AuditDegraded AuditKind = "degraded"
	// AuditEscalation: a host's tool raised a refusal to its operator or
	// applied grants an operator approved (Detail says which).
	AuditEscalation AuditKind = "escalation"
)

// AuditEvent is one security-relevant thing the jail (or a tool through
// Broker.Audit) did or saw. Fields that do not apply are zero.
type AuditEvent struct {
	Kind AuditKind
	// Workspace is the writable root the event concerns, when there is one.
	Workspace string
	// Path is the file or directory the event concerns.
	Path string
	// Detail is a short human-readable account.
	Detail string
	// Enforcement is the command's report, for AuditDegraded.
	Enforcement *Enforcement
}
