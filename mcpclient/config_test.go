package mcpclient

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	got, err := ParseConfig([]byte(`{
	  "mcpServers": {
	    "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
	    "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
	    "off": {"command": "x", "disabled": true},
	    "cc": {"type": "stdio", "command": "/usr/bin/srv", "timeout": 30, "autoApprove": []}
	  },
	  "other": 1
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Server{
		{Name: "files", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, Env: map[string]string{"DEBUG": "1"}},
		{Name: "remote", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
		{Name: "cc", Command: "/usr/bin/srv"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("servers (-want +got):\n%s", d)
	}
	for _, bad := range []string{
		``, `[]`, `{}`, `{"mcpServers": []}`, `{"mcpServers": {}} x`,
		`{"mcpServers": {"a": {}}}`,
		`{"mcpServers": {"a": {"command": "x", "url": "http://h/"}}}`,
		`{"mcpServers": {"a b": {"command": "x"}}}`,
		`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`,
		`{"mcpServers": {"a": {"command": "x", "command": "y"}}}`,
		`{"mcpServers": {"a": {"command": 1}}}`,
		`{"mcpServers": {"a": {"command": "x", "args": "y"}}}`,
		`{"mcpServers": {"a": {"command": "x\u0000"}}}`,
		`{"mcpServers": {"a": {"command": "x", "env": {"A=B": "c"}}}}`,
		`{"mcpServers": {"a": {"url": "file:///etc/passwd"}}}`,
		`{"mcpServers": {"a": {"url": "http://h/", "headers": {"X": "a\r\nB: c"}}}}`,
		`{"mcpServers": {"a": {"type": "sse", "url": "http://h/"}}}`,
		`{"mcpServers": {"a": {"type": "stdio", "url": "http://h/"}}}`,
		`{"mcpServers": {"a": {"command": "x", "headers": {}}}}`,
	} {
		_, err := ParseConfig([]byte(bad))
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalidConfig {
			t.Errorf("ParseConfig(%s) = %v, want %s", bad, err, CodeInvalidConfig)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "args": ["1"], "env": {"K": "v"}}}}`))
	f.Add([]byte(`{"mcpServers": {"b": {"url": "https://h/mcp", "headers": {"A": "b"}}}}`))
	f.Add([]byte(`{"mcpServers": {"c": {"type": "stdio", "command": "y", "disabled": false}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := ParseConfig(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidConfig {
				t.Fatalf("error %v is not a %s", err, CodeInvalidConfig)
			}
			return
		}
		seen := map[string]bool{}
		for _, s := range servers {
			if !ServerNamePattern.MatchString(s.Name) || seen[s.Name] {
				t.Fatalf("server name %q", s.Name)
			}
			seen[s.Name] = true
			if (s.Command == "") == (s.URL == "") {
				t.Fatalf("server %q has %q and %q", s.Name, s.Command, s.URL)
			}
			if s.Grant.Network || s.Grant.WriteWorkspace || s.Grant.ReadOnly != nil || s.Grant.Writable != nil {
				t.Fatalf("server %q carries a grant", s.Name)
			}
			if !ToolNamePattern.MatchString(ToolName(s.Name, "t")) {
				t.Fatalf("server %q makes tool names outside the pattern", s.Name)
			}
		}
	})
}
