package blob

// Budget defaults and units.
const (
	// DefaultMaxBytes is the store's budget when Options.MaxBytes is
	// zero: 1 GiB. It holds four sessions each at DefaultSessionBytes, or
	// eight outputs at tool.MaxCommandOutputBytes (128 MiB), the largest a
	// single command may write; it is small beside a user cache
	// directory and a day of ordinary overflow (excerpts of builds, test
	// logs, greps), while one runaway loop can no longer fill the disk.
	DefaultMaxBytes int64 = 1 << 30
	// DefaultSessionBytes is one session's budget when
	// Options.SessionBytes is zero: 256 MiB, two whole outputs at
	// tool.MaxCommandOutputBytes, and a quarter of DefaultMaxBytes, so
	// one session cannot pin the whole store and starve the others.
	DefaultSessionBytes int64 = 256 << 20
	// BlockBytes is the unit every blob is charged in, against both
	// budgets: its size rounded up to a whole number of blocks, the least
	// room a file takes on common file systems. So a flood of tiny blobs
	// is bounded in count too (at most MaxBytes/BlockBytes files).
	BlockBytes int64 = 4 << 10
)

// Options bound a Store. The zero value is the default: every field's
// zero means its documented default, so Open(root) equals
// OpenWith(root, Options{}).
type Options struct {
	// MaxBytes is the store's budget, in bytes charged (see BlockBytes),
	// shared by every process that opens the same root. When a write
	// takes the store past it, the store evicts the least recently used
	// blobs (last stored or read, by modification time) that no open
	// Store holds, until it holds at most 7/8 of MaxBytes, so the next
	// eviction is at least MaxBytes/8 of writes away. Blobs open Stores
	// hold are never evicted: when they alone pass MaxBytes the store
	// stays over it until they are released (each Store holds at most
	// SessionBytes of its own writes). Stores that share a root with
	// different budgets each evict by their own. Zero or negative means
	// DefaultMaxBytes.
	MaxBytes int64
	// SessionBytes is this Store's budget: the most bytes charged it may
	// hold of blobs it stored (Put, Writer, Spool, Bound, Spill), each
	// distinct blob counted once, until Close. A write that would pass it
	// is refused with CodeSpillBudget; Bound, Spill and Spool still return
	// the output's excerpts in an Overflow saying it was not kept. Blobs
	// it only read are held without charge. Zero or negative means
	// DefaultSessionBytes; more than MaxBytes counts as MaxBytes.
	SessionBytes int64
}

// withDefaults returns o with every zero or negative field replaced by
// its default and SessionBytes clamped to MaxBytes.
func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.SessionBytes <= 0 {
		o.SessionBytes = DefaultSessionBytes
	}
	o.SessionBytes = min(o.SessionBytes, o.MaxBytes)
	return o
}

// lowWater is how far an eviction trims the store: 7/8 of MaxBytes.
func (o Options) lowWater() int64 { return o.MaxBytes - o.MaxBytes/8 }

// charge is what a blob of size bytes counts against a budget: its size
// rounded up to whole BlockBytes.
func charge(size int64) int64 {
	if size <= 0 {
		return 0
	}
	return (size + BlockBytes - 1) / BlockBytes * BlockBytes
}
