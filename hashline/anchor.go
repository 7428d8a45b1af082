package hashline

import (
	"strconv"
	"strings"
)

// AnchorLen is the number of lowercase hexadecimal characters in an anchor.
const AnchorLen = 8

// FNV-1a 64-bit parameters (the same as hash/fnv; inlined so hashing a line
// allocates nothing).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

const hexDigits = "0123456789abcdef"

// sum64 is FNV-1a 64 over the bytes of s.
func sum64[T ~string | ~[]byte](s T) uint64 { return fnvAdd(fnvOffset64, s) }

// fnvAdd continues the FNV-1a 64 hash h over the bytes of s.
func fnvAdd[T ~string | ~[]byte](h uint64, s T) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// sum64Pair is sum64(a), sum64(b), hashing both in one loop: the two
// multiply chains are independent, so together they take about the time
// of the longer one alone.
func sum64Pair(a, b []byte) (ha, hb uint64) {
	ha, hb = fnvOffset64, fnvOffset64
	n := min(len(a), len(b))
	x, y := a[:n], b[:n]
	for i := range x {
		ha = (ha ^ uint64(x[i])) * fnvPrime64
		hb = (hb ^ uint64(y[i])) * fnvPrime64
	}
	return fnvAdd(ha, a[n:]), fnvAdd(hb, b[n:])
}

// putAnchor writes the anchor form of h (its top 32 bits as 8 lowercase hex
// digits, i.e. the first 8 characters of "%016x") into dst[:AnchorLen].
func putAnchor(dst []byte, h uint64) {
	top := uint32(h >> 32)
	for i := AnchorLen - 1; i >= 0; i-- {
		dst[i] = hexDigits[top&0xf]
		top >>= 4
	}
}

// AnchorOf returns the anchor of one line: the first 8 lowercase hex digits of
// the FNV-1a 64-bit hash of the line's bytes. line is the line's text without
// its terminator (and, for line 1, without a byte-order mark). The anchor
// depends on nothing but those bytes: not the line number, not the
// neighbours, not the file.
func AnchorOf(line string) string {
	var buf [AnchorLen]byte
	putAnchor(buf[:], sum64(line))
	return string(buf[:])
}

// Digest identifies a whole content: the full FNV-1a 64-bit hash as 16
// lowercase hex digits, a hyphen, then the byte length in decimal
// ("%016x-%d"). Two contents share a digest only if they share both the hash
// and the length.
func Digest(content []byte) string { return formatDigest(sum64(content), len(content)) }

// DigestForm reports whether s has a digest's form ("%016x-%d": 16
// lowercase hex digits, a hyphen, a decimal length without leading
// zeros), whatever content it names.
func DigestForm(s string) bool {
	hash, size, ok := strings.Cut(s, "-")
	if len(hash) != 16 || !ok || size == "" || len(size) > 19 || (size[0] == '0' && size != "0") {
		return false
	}
	for i := 0; i < len(hash); i++ {
		if !strings.ContainsRune(hexDigits, rune(hash[i])) {
			return false
		}
	}
	for i := 0; i < len(size); i++ {
		if size[i] < '0' || size[i] > '9' {
			return false
		}
	}
	return true
}

// formatDigest renders a whole-content hash and length as Digest does.
func formatDigest(h uint64, size int) string {
	buf := make([]byte, 0, 16+1+20)
	for shift := 60; shift >= 0; shift -= 4 {
		buf = append(buf, hexDigits[(h>>uint(shift))&0xf])
	}
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, int64(size), 10)
	return string(buf)
}
