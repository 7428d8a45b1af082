package codemode

import "strings"

// stdAdmission is one audited standard-library package a program may
// import, with the audit's one-line finding.
type stdAdmission struct{ path, reason string }

// stdAudit is the audited allowlist. The audit's rule, enforced by
// allowlist_test.go against the host toolchain's sources: no admitted
// package, and nothing it transitively imports, is os/exec, net, plugin,
// crypto/tls, crypto/x509 or another denied effect package; and no package
// in that closure outside the OS layer itself (os, syscall, internal/poll,
// internal/syscall/...) names anything of the OS layer except the
// standard streams and the fixed-path reads listed in that test with their
// reasons (time's zoneinfo files, crypto's /dev/urandom fallback, the CPU
// feature probe's /proc/self/auxv). So nothing a program can call through
// an admitted package opens a path the program chooses, execs, dials or
// reads the environment, with one documented exception: time.LoadLocation
// reads the zoneinfo directories (and the ZONEINFO variable, empty in the
// run jail) for a validated zone name; the run jail makes those files
// unreadable and time/tzdata is admitted so zones still resolve.
// Reflection used inside a package (encoding/json, encoding/gob, fmt) is
// fine: what matters is what a program can reach.
func stdAudit() []stdAdmission {
	return []stdAdmission{
		{"bufio", "buffers an io.Reader/Writer the program already holds"},
		{"bytes", "byte-slice functions and buffers in memory"},
		{"cmp", "ordering helpers"},
		{"compress/bzip2", "stream decompressor over an io.Reader"},
		{"compress/flate", "stream codec over io.Reader/Writer"},
		{"compress/gzip", "stream codec over io.Reader/Writer"},
		{"compress/lzw", "stream codec over io.Reader/Writer"},
		{"compress/zlib", "stream codec over io.Reader/Writer"},
		{"container/heap", "heap operations on a program's own container"},
		{"container/list", "in-memory doubly linked list"},
		{"container/ring", "in-memory circular list"},
		{"context", "cancellation and deadlines; every cap function takes one"},
		{"crypto", "hash registry and crypto interfaces, no I/O"},
		{"crypto/aes", "block cipher in memory"},
		{"crypto/cipher", "cipher modes in memory"},
		{"crypto/des", "block cipher in memory"},
		{"crypto/ecdh", "key agreement in memory"},
		{"crypto/ecdsa", "signatures in memory"},
		{"crypto/ed25519", "signatures in memory"},
		{"crypto/elliptic", "curve arithmetic in memory"},
		{"crypto/hkdf", "key derivation in memory"},
		{"crypto/hmac", "MACs in memory"},
		{"crypto/hpke", "hybrid public-key encryption in memory"},
		{"crypto/md5", "hash in memory"},
		{"crypto/mlkem", "post-quantum key encapsulation in memory"},
		{"crypto/pbkdf2", "key derivation in memory"},
		{"crypto/rand", "kernel randomness (getrandom; a fixed /dev/urandom fallback)"},
		{"crypto/rsa", "RSA in memory"},
		{"crypto/sha1", "hash in memory"},
		{"crypto/sha256", "hash in memory"},
		{"crypto/sha3", "hash in memory"},
		{"crypto/sha512", "hash in memory"},
		{"crypto/subtle", "constant-time helpers"},
		{"encoding", "marshaler interfaces"},
		{"encoding/ascii85", "codec in memory"},
		{"encoding/asn1", "codec in memory (reflection inside)"},
		{"encoding/base32", "codec in memory"},
		{"encoding/base64", "codec in memory"},
		{"encoding/binary", "codec in memory (reflection inside)"},
		{"encoding/csv", "reader/writer over io streams"},
		{"encoding/gob", "codec over io streams (reflection inside; debug output to stderr only)"},
		{"encoding/hex", "codec in memory; Dumper writes to a program's io.Writer"},
		{"encoding/json", "codec over io streams (reflection inside)"},
		{"encoding/pem", "codec in memory"},
		{"encoding/xml", "codec over io streams (reflection inside)"},
		{"errors", "error values; errors.As is how a program reads a cap error's code"},
		{"fmt", "formatting; Print writes the result to stdout, Scan reads stdin"},
		{"hash", "hash interfaces"},
		{"hash/adler32", "checksum in memory"},
		{"hash/crc32", "checksum in memory"},
		{"hash/crc64", "checksum in memory"},
		{"hash/fnv", "hash in memory"},
		{"hash/maphash", "seeded hash in memory"},
		{"html", "HTML escaping in memory"},
		{"image", "in-memory images and format registry"},
		{"image/color", "colour models"},
		{"image/color/palette", "fixed palettes"},
		{"image/draw", "compositing in memory"},
		{"image/gif", "codec over io streams"},
		{"image/jpeg", "codec over io streams"},
		{"image/png", "codec over io streams"},
		{"index/suffixarray", "in-memory substring index"},
		{"io", "reader/writer interfaces and pipes in memory"},
		{"io/fs", "file-system interfaces; a program has no disk FS to pass (os is denied)"},
		{"iter", "iterator types"},
		{"maps", "map helpers"},
		{"math", "floating-point functions"},
		{"math/big", "arbitrary precision arithmetic"},
		{"math/bits", "bit manipulation"},
		{"math/cmplx", "complex functions"},
		{"math/rand", "pseudo-random numbers"},
		{"math/rand/v2", "pseudo-random numbers"},
		{"mime/quotedprintable", "codec over io streams (unlike mime, reads no type tables)"},
		{"net/netip", "IP address values; parses, never resolves or dials"},
		{"net/url", "URL parsing and escaping; never resolves or dials"},
		{"path", "slash-separated path strings; touches no file system"},
		{"regexp", "RE2 regular expressions"},
		{"regexp/syntax", "regular-expression parser"},
		{"slices", "slice helpers"},
		{"sort", "sorting"},
		{"strconv", "string conversions"},
		{"strings", "string functions and builders"},
		{"structs", "struct layout markers"},
		{"sync", "mutexes, wait groups, once; fan-out with goroutines"},
		{"sync/atomic", "atomic values"},
		{"text/scanner", "tokenizer over an io.Reader (default errors to stderr)"},
		{"text/tabwriter", "aligned columns to a program's io.Writer"},
		{"time", "clock, durations, timers; LoadLocation reads only zoneinfo (see stdAudit)"},
		{"time/tzdata", "embedded zone database so time.LoadLocation works in the run jail"},
		{"unicode", "character classes"},
		{"unicode/utf16", "UTF-16 codec"},
		{"unicode/utf8", "UTF-8 codec"},
		{"unique", "value canonicalization"},
		{"weak", "weak pointers"},
	}
}

// StdPackages is the audited standard-library allowlist. Every function
// of these packages a program can call computes in memory, or reads or
// writes only streams the program already holds (stdin, stdout, stderr,
// its own readers and writers). Some also read fixed system data (the
// clock, kernel randomness, the zone database). None opens a path the program names,
// execs, dials, or reads the environment (time.LoadLocation's zoneinfo
// lookup excepted, see the audit notes in allowlist.go). Sorted; each call
// returns a fresh slice. Every effect beyond these goes through a seam's
// cap/... packages.
func StdPackages() []string {
	audit := stdAudit()
	out := make([]string, len(audit))
	for i, a := range audit {
		out[i] = a.path
	}
	return out
}

// denial is one import path, or with a trailing "/..." one path and every
// path below it, that vetting refuses whatever a seam lists, with the reason a
// refusal shows.
type denial struct{ pattern, reason string }

// denials is every standard-library package the audit left out, and the
// prelude's plumbing. allowlist_test.go holds that every package of the
// host toolchain's standard library is admitted or denied, never both,
// and that the binding deny list is denied.
func denials() []denial {
	const useFS = "; files go through cap/fs"
	const useProc = "; commands go through cap/proc"
	return []denial{
		{"C", "cgo is not available; programs are pure Go"},
		{"archive/...", "archive readers open paths (zip.OpenReader) and tar/zip reach the file system"},
		{"cap/internal/...", "the prelude's plumbing; import the cap/... packages it serves instead"},
		{"crypto/dsa", "deprecated legacy algorithm; use crypto/ed25519 or crypto/ecdsa"},
		{"crypto/fips140", "reports the toolchain's FIPS 140-3 mode; nothing a program needs"},
		{"crypto/mlkem/mlkemtest", "derandomized test helpers"},
		{"crypto/rc4", "insecure cipher"},
		{"crypto/tls", "dials the network (tls.Dial)"},
		{"crypto/x509/...", "reads the system's root certificates from files"},
		{"database/sql/...", "no driver can be imported, so nothing here does anything"},
		{"debug/...", "opens paths (elf.Open, buildinfo.ReadFile)"},
		{"embed", "embeds files at build time"},
		{"expvar", "serves over net/http and reads os.Args"},
		{"flag", "reads os.Args and exits the process"},
		{"go/...", "go/parser reads files; go/build and go/importer exec the go command"},
		{"html/template", "ParseFiles and ParseGlob read files"},
		{"io/ioutil", "reads and writes files" + useFS},
		{"log/...", "log.Fatal exits the process, log/syslog dials; print to stdout or stderr with fmt"},
		{"mime", "reads the system's MIME type tables from files"},
		{"mime/multipart", "ReadForm spills parts to temporary files"},
		{"net", "opens network connections; the run jail has no network"},
		{"net/http/...", "opens network connections and serves files"},
		{"net/mail", "imports net and log"},
		{"net/rpc/...", "opens network connections"},
		{"net/smtp", "opens network connections"},
		{"net/textproto", "opens network connections (textproto.Dial)"},
		{"os/...", "opens paths, execs, reads the environment" + useFS + useProc},
		{"path/filepath", "Glob, Walk and EvalSymlinks read the file system; use path for strings" + useFS},
		{"plugin", "loads shared objects"},
		{"reflect", "not needed by a program; encoding/json and fmt reflect internally"},
		{"runtime/...", "runtime control, profiles written to files, cgo"},
		{"syscall", "raw system calls" + useFS + useProc},
		{"testing/...", "the test harness: reads flags, writes files"},
		{"text/template/...", "ParseFiles and ParseGlob read files"},
		{"unsafe", "defeats type and memory safety"},
		{"vendor/...", "the standard library's private copies; not importable"},
	}
}

// denialOf reports the reason vetting refuses path whatever the seam lists,
// or ok false when no denial covers it. Any path with an "internal"
// element is denied: internal packages are importable only from their own
// tree, and the build calls the compiler directly, which does not enforce
// that rule itself.
func denialOf(path string) (reason string, ok bool) {
	for _, d := range denials() {
		if p, family := strings.CutSuffix(d.pattern, "/..."); family {
			if path == p || strings.HasPrefix(path, p+"/") {
				return d.reason, true
			}
		} else if path == d.pattern {
			return d.reason, true
		}
	}
	if path == "internal" || strings.HasPrefix(path, "internal/") || strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/") {
		return "internal packages are importable only from their own tree", true
	}
	return "", false
}
