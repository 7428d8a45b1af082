package blob

import (
	"errors"
	"os"
	"time"
)

// SetClockForTest is a test hook: the store marks blobs used (their
// modification time) with now instead of time.Now. Call it before the
// store is used.
func SetClockForTest(s *Store, now func() time.Time) { s.now = now }

// EvictForTest is a test hook: it runs an eviction now, as a write over
// the budget would, whatever the usage record says.
func EvictForTest(s *Store) error {
	f, err := s.lock(true)
	if err != nil || f == nil {
		return err
	}
	defer closeLock(f)
	return s.evictLocked(f)
}

// SpoolRetainedForTest is a test hook: the bytes sp's buffers hold.
func SpoolRetainedForTest(sp *Spool) int { return sp.retainedBytes() }

// OptionsForTest is a test hook: the options s applies, defaults filled.
func OptionsForTest(s *Store) Options { return s.opts }

// SetBeforeHoldForTest is a test hook: Put runs hook while it holds the
// store lock, between finding a blob present and holding it.
func SetBeforeHoldForTest(s *Store, hook func()) { s.testHookBeforeHold = hook }

// TryEvictForTest is a test hook: an eviction that gives up at once,
// returning false, when another holds the store lock.
func TryEvictForTest(s *Store) (bool, error) {
	f, err := openLedgerFile(s.ledger, usageName, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := lockFile(f, true, false); err != nil {
		if errors.Is(err, errLocked) {
			return false, nil
		}
		return false, err
	}
	return true, s.evictLocked(f)
}

// EvictUnlockedForTest is a test hook and the control of the store
// lock: an eviction that does not take it.
func EvictUnlockedForTest(s *Store) error {
	f, err := openLedgerFile(s.ledger, usageName, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return s.evictLocked(f)
}

// The store's layout, under names that say they are for tests: the
// external tests check the modes, shards and staged names against them.
const (
	RootModeForTest    = rootMode
	BlobModeForTest    = blobMode
	ShardLenForTest    = shardLen
	StagePrefixForTest = stagePrefix
	StageSuffixForTest = stageSuffix
)
