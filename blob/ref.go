package blob

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// RefLen is the length in bytes of a Ref: a SHA-256 digest in hex.
const RefLen = 2 * sha256.Size

// maxQuotedInput bounds how much of a refused ParseRef input is quoted back
// in the error message, so an arbitrarily long argument cannot blow up a
// message a model reads.
const maxQuotedInput = 80

// Ref is the content address of a blob: the lowercase hex SHA-256 of its
// bytes, exactly RefLen characters. A Ref obtained from ParseRef, Sum, Put
// or Commit is always well formed; a Ref built by conversion from an
// arbitrary string may not be, and every method of Store refuses such a Ref
// rather than resolving it.
type Ref string

// Sum returns the Ref of data without storing anything.
func Sum(data []byte) Ref {
	d := sha256.Sum256(data)
	return Ref(hex.EncodeToString(d[:]))
}

// ParseRef returns s as a Ref if it is exactly RefLen characters of
// lowercase hex, and an *Error with code CodeInvalidRef otherwise. It is
// total: it never panics and accepts nothing else (no uppercase, no
// surrounding space, no prefix such as "sha256:").
func ParseRef(s string) (Ref, error) {
	if len(s) != RefLen {
		return "", newError(CodeInvalidRef, "parse", "", "",
			fmt.Sprintf("%s is %d bytes long; a ref is %d lowercase hex characters", quoteInput(s), len(s), RefLen), nil)
	}
	for i := 0; i < len(s); i++ {
		if !isLowerHex(s[i]) {
			return "", newError(CodeInvalidRef, "parse", "", "",
				fmt.Sprintf("%s has %q at offset %d; a ref is %d lowercase hex characters", quoteInput(s), s[i], i, RefLen), nil)
		}
	}
	return Ref(s), nil
}

// Valid reports whether r is well formed: RefLen lowercase hex characters.
func (r Ref) Valid() bool {
	_, err := ParseRef(string(r))
	return err == nil
}

func isLowerHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
}

// quoteInput quotes at most maxQuotedInput bytes of s for an error message.
func quoteInput(s string) string {
	if len(s) <= maxQuotedInput {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:maxQuotedInput])
}
