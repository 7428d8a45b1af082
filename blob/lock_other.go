//go:build !unix || aix

package blob

import (
	"errors"
	"os"
	"time"
)

// ledgerSupported is false where flock is missing: the store keeps no
// ledger, so it holds no leases, keeps no usage record and never
// evicts. Options.MaxBytes is then not enforced; each Store's
// Options.SessionBytes still is.
const ledgerSupported = false

func lockFile(*os.File, bool, bool) error { return errors.ErrUnsupported }

func unlockFile(*os.File) error { return nil }

func touchFile(*os.File, time.Time) error { return nil }

func unlinkIn(*os.Root, string) error { return errors.ErrUnsupported }
