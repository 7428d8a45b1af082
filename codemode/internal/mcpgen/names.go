package mcpgen

import (
	"go/token"
	"strconv"
	"strings"
	"unicode/utf8"
)

// initialisms are the words an identifier spells in capitals, as Go
// code does ("UserID", "HTTPURL").
var initialisms = map[string]bool{
	"acl": true, "api": true, "ascii": true, "cpu": true, "css": true, "csv": true, "dns": true,
	"eof": true, "guid": true, "html": true, "http": true, "https": true, "id": true,
	"ip": true, "json": true, "jwt": true, "mcp": true, "rpc": true, "sha": true, "sql": true,
	"ssh": true, "tcp": true, "tls": true, "ttl": true, "udp": true, "ui": true, "uid": true,
	"uri": true, "url": true, "utf8": true, "uuid": true, "vm": true, "xml": true, "yaml": true,
}

// words splits s into lower-case ASCII words: at every rune that is not
// an ASCII letter or digit, where a lower-case letter or digit meets an
// upper-case one ("userId"), and before the last capital of a run of
// them followed by a lower-case letter ("HTTPServer"). Other runes
// (non-ASCII letters among them) only separate words.
func words(s string) []string {
	var out []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	isUpper := func(c byte) bool { return 'A' <= c && c <= 'Z' }
	isLower := func(c byte) bool { return 'a' <= c && c <= 'z' }
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isUpper(c) && !isLower(c) && !isDigit(c) {
			flush()
			continue
		}
		if isUpper(c) && len(cur) > 0 {
			prev := cur[len(cur)-1]
			next := byte(0)
			if i+1 < len(s) {
				next = s[i+1]
			}
			if isLower(prev) || isDigit(prev) || (isUpper(prev) && isLower(next)) {
				flush()
			}
		}
		cur = append(cur, c)
	}
	flush()
	return out
}

// exportedIdent makes an exported Go identifier of s: its words, each
// capitalised (an initialism all in capitals), at most maxIdentBytes
// long, "X" before a leading digit. It is fallback when s has no word.
func exportedIdent(s, fallback string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if b.Len()+len(w) > maxIdentBytes {
			break
		}
		if initialisms[w] {
			b.WriteString(strings.ToUpper(w))
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]))
		b.WriteString(w[1:])
	}
	id := b.String()
	switch {
	case id == "":
		return fallback
	case id[0] >= '0' && id[0] <= '9':
		return "X" + id
	}
	return id
}

// snake is a Go identifier in snake case: "CreateIssue" is
// "create_issue", "UserID" "user_id", "HTTPServer" "http_server".
func snake(id string) string {
	return strings.Join(words(id), "_")
}

// reservedPackageNames cannot name a package (keywords, "main") or would
// misread as something else in a path ("internal", "vendor",
// "testdata") or beside the identifiers every program sees (the
// predeclared ones); a server so named gets the suffix "mcp".
var reservedPackageNames = func() map[string]bool {
	m := map[string]bool{"main": true, "internal": true, "vendor": true, "testdata": true}
	for _, p := range []string{"any", "append", "bool", "byte", "cap", "clear", "close", "comparable",
		"complex", "complex64", "complex128", "copy", "delete", "error", "false", "float32", "float64",
		"imag", "int", "int8", "int16", "int32", "int64", "iota", "len", "make", "max", "min", "new",
		"nil", "panic", "print", "println", "real", "recover", "rune", "string", "true", "uint",
		"uint8", "uint16", "uint32", "uint64", "uintptr"} {
		m[p] = true
	}
	return m
}()

// PackageName is the Go package name code mode offers server's tools
// under (its import path is "cap/mcp/" and the name): server's ASCII
// letters and digits, lower-cased, "mcp" before a leading digit and after
// a Go keyword, a predeclared identifier or main, internal, vendor or
// testdata. Two servers whose names differ only elsewhere ("my-server",
// "my_server") get the same name; the host refuses the second. The error
// is CodeServerNameInvalid.
func PackageName(server string) (string, error) {
	if server == "" || len(server) > MaxServerNameBytes || !utf8.ValidString(server) {
		return "", &Error{Code: CodeServerNameInvalid, Message: "a server's name is 1 to " + strconv.Itoa(MaxServerNameBytes) + " bytes of UTF-8; got " + strconv.Itoa(len(server)) + " bytes"}
	}
	var b strings.Builder
	for i := 0; i < len(server); i++ {
		c := server[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b.WriteByte(c)
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		}
	}
	name := b.String()
	switch {
	case name == "":
		return "", &Error{Code: CodeServerNameInvalid, Message: "the server's name " + strconv.Quote(server) + " holds no ASCII letter or digit to name its package with"}
	case name[0] >= '0' && name[0] <= '9':
		name = "mcp" + name
	case token.IsKeyword(name) || reservedPackageNames[name]:
		name += "mcp"
	}
	return name, nil
}

// names is a set of identifiers claimed in one scope.
type names struct {
	taken map[string]bool
	log   []string // claimed in order, for rollback
}

func newNames(reserved ...string) *names {
	n := &names{taken: map[string]bool{}}
	for _, r := range reserved {
		n.taken[r] = true
	}
	return n
}

// claim returns base, or base with the least suffix 2, 3, ... that is
// free and that ok (nil: any) accepts, and takes it.
func (n *names) claim(base string, ok func(string) bool) string {
	for i := 1; ; i++ {
		c := base
		if i > 1 {
			c += strconv.Itoa(i)
		}
		if !n.taken[c] && (ok == nil || ok(c)) {
			n.taken[c] = true
			n.log = append(n.log, c)
			return c
		}
	}
}

// mark returns a point rollback returns the set to.
func (n *names) mark() int { return len(n.log) }

// rollback frees every name claimed since mark m.
func (n *names) rollback(m int) {
	for _, c := range n.log[m:] {
		delete(n.taken, c)
	}
	n.log = n.log[:m]
}
