package mcpgen

import (
	"encoding/json"
	"testing"
)

func TestSmoke(t *testing.T) {
	p := mustGenerate(t, "GitHub", []Tool{
		{Name: "create_issue", Title: "Create issue", Description: "Creates an issue.\n//go:linkname x y\n*/ evil", InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","description":"The title."},"labels":{"type":"array","items":{"type":"string"}},"state":{"enum":["open","closed"]},"user_id":{"type":"integer"},"assignee":{"$ref":"#/$defs/User"}},"required":["title"],"$defs":{"User":{"type":"object","properties":{"login":{"type":"string"},"manager":{"$ref":"#/$defs/User"}},"required":["login","manager"]}}}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"number":{"type":"integer"},"url":{"type":["string","null"]}},"required":["number"]}`),
			Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":false}`)},
		{Name: "search", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"anyOf":[{"type":"string"},{"type":"null"}]},"filter":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`)},
	})
	t.Logf("%s\n%+v", p.Source, p.Capabilities)
}
