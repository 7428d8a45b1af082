package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Bounds on a configuration.
const (
	// MaxConfigBytes bounds the JSON ParseConfig reads.
	MaxConfigBytes = 1 << 20
	// MaxServers bounds the servers of one configuration.
	MaxServers = 64
	// maxArgs bounds a stdio server's arguments, and maxEnv its
	// variables and an HTTP server's headers.
	maxArgs = 256
	maxEnv  = 256
)

// ServerNamePattern is what a server's name must match: the characters a
// model's tool name may hold (it becomes part of each tool's namespaced
// name), at most 32 of them, so its tools' names keep room within 64
// bytes.
var ServerNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)

// Server configures one MCP server, by name: either a stdio command run
// in the jail, or a streamable-HTTP endpoint. Exactly one of Command and
// URL is set.
type Server struct {
	// Name names the server; its tools are registered as
	// mcp__<Name>__<tool> (see ToolName). It matches ServerNamePattern and
	// is unique within a configuration.
	Name string

	// Command is a stdio server's executable: an absolute path, or a
	// name looked up on the PATH of its environment (Env over the
	// session's). Its file alone is made readable in its jail when no
	// root covers it, never its directory.
	Command string
	// Args are its arguments.
	Args []string
	// Env are variables set for it, over the session's PATH, LANG and
	// TERM, its toolchain profile's and its own HOME and TMPDIR.
	Env map[string]string
	// Grant is what the host grants a stdio server beyond its default
	// jail. The JSON configuration never sets it: a file a model can write
	// must not widen a jail.
	Grant Grant

	// URL is a streamable-HTTP server's endpoint (http or https). Such a
	// server runs wherever it runs; the host reaches it from its own
	// process, with Headers on every request.
	URL     string
	Headers map[string]string
}

// Grant widens a stdio server's jail. The zero value is the default: the
// workspace read-only, no network, its own home and scratch directory
// outside the workspace, nothing else writable.
type Grant struct {
	// Network turns the network on (sandbox.NetworkFull).
	Network bool
	// WriteWorkspace makes the workspace writable, as commands have it.
	WriteWorkspace bool
	// ReadOnly are further host paths it reads (an interpreter's
	// packages, say); absolute.
	ReadOnly []string
	// Writable are further host paths it writes; absolute, outside the
	// workspace unless WriteWorkspace.
	Writable []string
}

// Stdio reports whether s is a stdio server (it has a Command).
func (s Server) Stdio() bool { return s.Command != "" }

// ParseConfig reads the configuration every MCP host reads (Claude
// Desktop, Claude Code, Cursor):
//
//	{"mcpServers": {"name": {"command": "...", "args": [...], "env": {...}} | {"url": "...", "headers": {...}}}}
//
// and returns its servers in the order the file names them. A server's
// "type" may say "stdio", "http" or "streamable-http" (and must agree
// with what it holds; "sse" is refused), one with "disabled": true is left
// out, and keys other hosts add ("timeout", "autoApprove", ...) are
// ignored. Everything else is refused with a *Error (CodeInvalidConfig):
// input past MaxConfigBytes, trailing data, a duplicate key, a value of
// the wrong type, a name outside ServerNamePattern, neither or both of
// command and url, a NUL byte, an environment variable's name holding
// '=', a header that is not an HTTP field, more than MaxServers servers.
// No server it returns carries a Grant.
func ParseConfig(data []byte) ([]Server, error) {
	bad := func(server, format string, args ...any) error {
		return &Error{Code: CodeInvalidConfig, Server: server, Reason: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxConfigBytes {
		return nil, bad("", "the configuration is %d bytes, past %d", len(data), MaxConfigBytes)
	}
	top, err := objectOf(data)
	if err != nil {
		return nil, bad("", "the configuration: %v", err)
	}
	var raw json.RawMessage
	for _, f := range top {
		if f.key == "mcpServers" {
			raw = f.value
		}
	}
	if raw == nil {
		return nil, bad("", `the configuration has no "mcpServers" object`)
	}
	entries, err := objectOf(raw)
	if err != nil {
		return nil, bad("", `"mcpServers": %v`, err)
	}
	if len(entries) > MaxServers {
		return nil, bad("", "%d servers, past %d", len(entries), MaxServers)
	}
	var out []Server
	for _, e := range entries {
		if !ServerNamePattern.MatchString(e.key) {
			return nil, bad(quote(e.key), "a server's name must match %s", ServerNamePattern)
		}
		s, skip, err := parseServer(e.key, e.value)
		if err != nil {
			return nil, bad(e.key, "%v", err)
		}
		if !skip {
			out = append(out, s)
		}
	}
	return out, nil
}

// serverJSON is one server's entry as hosts write it.
type serverJSON struct {
	Type     *string           `json:"type"`
	Command  *string           `json:"command"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	URL      *string           `json:"url"`
	Headers  map[string]string `json:"headers"`
	Disabled *bool             `json:"disabled"`
}

// parseServer decodes one entry; skip says it is disabled.
func parseServer(name string, raw json.RawMessage) (s Server, skip bool, err error) {
	// objectOf refuses a duplicate key, which the struct decode below
	// would take silently (the last wins); that decode takes the known
	// keys, typed.
	if _, err := objectOf(raw); err != nil {
		return s, false, err
	}
	var j serverJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return s, false, fmt.Errorf("its entry: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if j.Disabled != nil && *j.Disabled {
		return s, true, nil
	}
	s.Name = name
	hasCmd, hasURL := j.Command != nil, j.URL != nil
	switch {
	case hasCmd && hasURL:
		return s, false, errors.New(`it has both "command" and "url"`)
	case !hasCmd && !hasURL:
		return s, false, errors.New(`it has neither "command" nor "url"`)
	}
	if j.Type != nil {
		switch t := *j.Type; {
		case t == "stdio" && hasCmd, (t == "http" || t == "streamable-http" || t == "streamableHttp") && hasURL:
		case t == "sse":
			return s, false, errors.New(`"type" "sse" (the deprecated HTTP+SSE transport) is not supported; use the server's streamable-HTTP endpoint`)
		default:
			return s, false, fmt.Errorf(`"type" %s does not agree with what it holds`, quote(t))
		}
	}
	if hasCmd {
		if *j.Command == "" || strings.ContainsRune(*j.Command, 0) {
			return s, false, errors.New(`"command" is empty or holds a NUL byte`)
		}
		if len(j.Args) > maxArgs || len(j.Env) > maxEnv {
			return s, false, fmt.Errorf("more than %d arguments or %d variables", maxArgs, maxEnv)
		}
		for _, a := range j.Args {
			if strings.ContainsRune(a, 0) {
				return s, false, errors.New("an argument holds a NUL byte")
			}
		}
		for k, v := range j.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
				return s, false, fmt.Errorf("variable %s is not a name and a value", quote(k))
			}
		}
		if j.Headers != nil {
			return s, false, errors.New(`"headers" belong to a "url" server`)
		}
		s.Command, s.Args, s.Env = *j.Command, j.Args, j.Env
		return s, false, nil
	}
	u, err := url.Parse(*j.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return s, false, fmt.Errorf(`"url" %s is not an http or https URL`, quote(*j.URL))
	}
	if len(j.Headers) > maxEnv {
		return s, false, fmt.Errorf("more than %d headers", maxEnv)
	}
	for k, v := range j.Headers {
		if !validHeader(k, v) {
			return s, false, fmt.Errorf("header %s is not an HTTP field", quote(k))
		}
	}
	if j.Args != nil || j.Env != nil {
		return s, false, errors.New(`"args" and "env" belong to a "command" server`)
	}
	s.URL, s.Headers = *j.URL, j.Headers
	return s, false, nil
}

// validHeader reports whether name is an HTTP token and value holds no
// control character but tab.
func validHeader(name, value string) bool {
	if name == "" || http.CanonicalHeaderKey(name) == "" {
		return false
	}
	for _, r := range name {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	for _, r := range value {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return false
		}
	}
	return utf8.ValidString(value)
}

// field is one member of a JSON object, in document order.
type field struct {
	key   string
	value json.RawMessage
}

// objectOf returns the members of the one JSON object data holds,
// refusing anything else: another value, trailing data, a duplicate key.
func objectOf(data []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, errors.New("not JSON")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errors.New("not JSON")
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, fmt.Errorf("key %s appears twice", quote(key))
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errors.New("not JSON")
		}
		out = append(out, field{key: key, value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, errors.New("not JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the object")
	}
	return out, nil
}

// quote quotes s for a reason, cut to 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "..."
	}
	return fmt.Sprintf("%q", s)
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}
