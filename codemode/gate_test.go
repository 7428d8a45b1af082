package codemode

import "testing"

// TestEveryCapabilityIsGatedOrOpenOnPurpose: the gate names an
// authorizing tool for every capability that writes, runs or reaches a
// job, and leaves open exactly the reads, kv, report.emit and a launched
// program's own cap/execution (which reaches nothing outside it).
func TestEveryCapabilityIsGatedOrOpenOnPurpose(t *testing.T) {
	t.Parallel()
	open := map[string]bool{"fs.read": true, "fs.list": true, "search.glob": true, "search.grep": true,
		"kv.get": true, "kv.set": true, "kv.delete": true, "report.emit": true,
		"execution.ready": true, "execution.register": true, "execution.receive": true}
	want := map[string]string{"proc.run": "bash", "job.start": "bash", "job.poll": "job_poll", "job.list": "job_poll",
		"job.send": "job_send", "job.kill": "job_kill", "fs.write": "fs_write", "fs.edit": "fs_edit", "lsp.apply": "fs_edit",
		"schedule.create": "schedule_create", "schedule.list": "schedule_list", "schedule.cancel": "schedule_cancel"}
	for _, c := range []string{"definition", "references", "implementation", "hover", "document_symbols", "workspace_symbols",
		"incoming_calls", "outgoing_calls", "diagnostics", "code_actions", "rename"} {
		want["lsp."+c] = "fs_read" // a language server reads the workspace as fs_read does
	}
	for _, cap := range workspaceCapabilities() {
		name, gated := authorizingTool(cap)
		switch {
		case open[cap] && gated:
			t.Errorf("%s is gated by %s but meant to be open", cap, name)
		case !open[cap] && (!gated || name != want[cap]):
			t.Errorf("%s: authorized by %q (gated %v), want %q", cap, name, gated, want[cap])
		}
	}
}
